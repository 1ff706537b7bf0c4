/**
 * The reference of the real-bus CPU bench: the least a Node Modbus master can do on that bus — a bare
 * modbus-serial loop (the library the gateway itself uses) sending a fixed list of read requests, one
 * at a time, every `poll` ms, and keeping the registers. No shadow, no MQTT, no history, no REST.
 * Plain JS on purpose: it runs with the unit's node flags and nothing else loaded (no tsx loader).
 *
 *   node --max-semi-space-size=1 --max-old-space-size=96 reference-master.mjs PORT BAUD POLL_MS JSON
 *   JSON: [{"unit":1,"fc":4,"address":0,"count":2}, …]
 *
 * Prints READY once the port is open; on SIGTERM prints `STATS {"requests":…,"errors":…,"cycles":…}`
 * and exits.
 */
import ModbusRTU from 'modbus-serial';

const [path, baud, pollMs, json] = process.argv.slice(2);
const requests = JSON.parse(json);
const poll = Number(pollMs);
const client = new ModbusRTU();
client.on('error', () => {});
await client.connectRTUBuffered(path, { baudRate: Number(baud) });
client.setTimeout(1000);

const stats = { requests: 0, errors: 0, cycles: 0 };
let last = [];
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
  process.stdout.write(`STATS ${JSON.stringify(stats)}\n`, () => process.exit(0));
});

const read = (r) => {
  switch (r.fc) {
    case 1: return client.readCoils(r.address, r.count);
    case 2: return client.readDiscreteInputs(r.address, r.count);
    case 3: return client.readHoldingRegisters(r.address, r.count);
    default: return client.readInputRegisters(r.address, r.count);
  }
};

console.log('READY');
// Fixed-rate cycles like a poll scheduler: cycle k starts at start + k·poll, or at once if late.
const start = performance.now();
for (let k = 0; !stopping; k++) {
  const due = start + k * poll;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const values = [];
  for (const r of requests) {
    if (stopping) break;
    client.setID(r.unit);
    try {
      values.push((await read(r)).data);
    } catch {
      stats.errors++;
    }
    stats.requests++;
  }
  last = values;
  stats.cycles++;
}
void last;
