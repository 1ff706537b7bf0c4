/**
 * The door bench's Modbus TCP clients, in their own process so the latency they measure is the gateway's,
 * not time spent waiting for the gateway's own work on a shared event loop. Run by modbus-door.ts with one
 * JSON argument; tells it where it is by JSON lines on stdout:
 *   {"event":"hits", latencies, direct}  phase 1 done: 3 clients x 20/s reading the polled block for the
 *                                         window (ms each), then 10 reads through the miss-only unit;
 *   {"event":"alone"}                     the clients keep quiet for the window (the gateway alone);
 *   {"event":"door"}                      3 clients at 1 Hz for the window;
 *   {"event":"done"}.
 */
import { RawModbusClient } from '../../test/helpers/modbus-tcp-client.js';

interface Args {
  port: number;
  block: number[];
  windowS: number;
  clients: number;
  rateHz: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const clients: RawModbusClient[] = [];
try {
  for (let i = 0; i < args.clients; i++) clients.push(await RawModbusClient.open(args.port));
  const latencies: number[] = [];
  let tid = 0;
  const period = 1000 / args.rateHz;
  const end = performance.now() + args.windowS * 1000;
  await Promise.all(clients.map(async (c) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const a = await c.request(++tid & 0xffff, 1, args.block);
      latencies.push(performance.now() - t0);
      if (a.pdu[0] !== args.block[0]) throw new Error(`exception ${a.pdu.join(',')}`);
      await sleep(Math.max(0, period - (performance.now() - t0)));
    }
  }));
  // Baseline: the same block through unit 2 (the same meter with max_age 1 ms: every read is a bus read).
  const direct: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    await clients[0]!.request(1, 2, args.block);
    direct.push(performance.now() - t0);
  }
  say({ event: 'hits', latencies, direct });
  say({ event: 'alone' });
  await sleep(args.windowS * 1000);
  say({ event: 'door' });
  const end2 = performance.now() + args.windowS * 1000;
  await Promise.all(clients.map(async (c, i) => {
    await sleep(i * 300);
    while (performance.now() < end2) {
      await c.request(++tid & 0xffff, 1, args.block);
      await sleep(1000);
    }
  }));
  say({ event: 'done' });
} finally {
  for (const c of clients) c.close();
}
