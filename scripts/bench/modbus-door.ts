/**
 * The Modbus TCP server ("front door") on a real 9600-baud RTU bus: socat ptys, the baud-emulating relay
 * and devices.py serving an SDM120 image at unit 1, which logs every request it answers (the frame count is
 * the slave's, not the gateway's). The gateway runs in this process and polls the meter every second.
 * 1. Hit latency: 3 door clients each read the polled block 20 times a second for the window; p50/p99 of
 *    request-to-answer at the client (the clients share this process's event loop with the gateway, so
 *    the figure includes their own work). Baseline in the same run: the same block read from the bus
 *    (unit 2 maps the same meter with max_age 1 ms: every read is a miss).
 * 2. Line: frames per second the slave answered with 3 door clients at 1 Hz vs the gateway alone, and the
 *    line busy share; the baseline is 3 direct masters at 1 Hz beside the gateway (their frames added to
 *    the measured polls, each costing the polled read's wire time: RS-485 cannot carry them at once).
 * Knobs: DOOR_BENCH_WINDOW_S (10). Run alone: `node --import tsx scripts/bench/modbus-door.ts`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort } from '../../test/drivers/modbus-rig.js';
import { RawModbusClient, read } from '../../test/helpers/modbus-tcp-client.js';
import { BusRig, distinctRequests, rigUnavailable, sleep } from './modbus-bus/rig.js';
import type { Result } from './report.js';

const WINDOW_S = Number(process.env.DOOR_BENCH_WINDOW_S ?? 10);
const BAUD = 9600;
const CHAR_MS = 11_000 / BAUD;
const T35_MS = 3.5 * CHAR_MS;

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
/** Wire time of one read of `count` registers: request 8 bytes, answer 5 + 2n, a t3.5 before each. */
const wireMs = (count: number): number => (8 + 5 + 2 * count) * CHAR_MS + 2 * T35_MS;

export async function benchModbusDoor(): Promise<Result[]> {
  const why = rigUnavailable();
  if (why) {
    console.log(`SKIP modbus door bench: ${why}`);
    return [];
  }
  const rig = new BusRig('sdm120:1', BAUD);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-bench-'));
  await rig.start();
  const port = await freePort();
  const raw = {
    gateway: { id: 'door-bench', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: BAUD }],
    devices: [{ id: 'meter', model: 'eastron-sdm120', bus: 'rs485', unit_id: 1, poll: '1s' }],
    servers: [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, max_age: '2500ms', units: [{ unit: 1, device: 'meter' }, { unit: 2, device: 'meter', max_age: '1ms' }] }],
  };
  const gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  const clients: RawModbusClient[] = [];
  try {
    await sleep(3000); // a few poll cycles: the plan is on the bus
    const polled = distinctRequests(rig.requests).filter((r) => r.fc === 4).sort((a, b) => b.count - a.count)[0];
    if (!polled) throw new Error('the gateway polled no input registers');
    const block = read(4, polled.address, polled.count);
    for (let i = 0; i < 3; i++) clients.push(await RawModbusClient.open(port));

    // 1. hit latency, 3 clients x 20/s
    const latencies: number[] = [];
    let tid = 0;
    const end = performance.now() + WINDOW_S * 1000;
    await Promise.all(clients.map(async (c) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const a = await c.request(++tid & 0xffff, 1, block);
        latencies.push(performance.now() - t0);
        if (a.pdu[0] !== 4) throw new Error(`exception ${a.pdu.join(',')}`);
        await sleep(Math.max(0, 50 - (performance.now() - t0)));
      }
    }));
    latencies.sort((a, b) => a - b);
    const fig = gw.modbusServers.figures()['door']!.total;
    // Baseline: the same block through unit 2 (the same meter with max_age 1 ms: every read is a bus read).
    const direct: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      await clients[0]!.request(1, 2, block);
      direct.push(performance.now() - t0);
    }
    direct.sort((a, b) => a - b);

    // 2. frames: gateway alone, then 3 clients at 1 Hz
    const t1 = performance.now();
    await sleep(WINDOW_S * 1000);
    const t2 = performance.now();
    const alone = rig.between(t1, t2).length / WINDOW_S;
    const end2 = performance.now() + WINDOW_S * 1000;
    await Promise.all(clients.map(async (c, i) => {
      await sleep(i * 300);
      while (performance.now() < end2) {
        await c.request(++tid & 0xffff, 1, block);
        await sleep(1000);
      }
    }));
    const t3 = performance.now();
    const withDoor = rig.between(t2, t3).length / WINDOW_S;
    const perPoll = rig.between(t1, t3).reduce((ms, r) => ms + wireMs(r.count), 0) / Math.max(1, rig.between(t1, t3).length);
    const busyDoor = (withDoor * perPoll) / 10;
    const busyDirect = ((alone + 3) * perPoll) / 10;
    console.log(`  door: ${latencies.length} hits in ${WINDOW_S} s (${fig.hits} hits, ${fig.misses} misses in all); polled block fc4 ${polled.address}+${polled.count}`);
    console.log(`  frames/s: gateway alone ${alone.toFixed(2)}, with 3 door clients at 1 Hz ${withDoor.toFixed(2)}; 3 direct masters would add 3.00`);
    return [
      { name: 'door hit latency p50 (3 clients x 20/s)', measured: quantile(latencies, 0.5), target: 5, unit: 'ms', higherIsBetter: false, note: `baseline: a miss read from the bus p50 ${quantile(direct, 0.5).toFixed(1)} ms` },
      { name: 'door hit latency p99 (3 clients x 20/s)', measured: quantile(latencies, 0.99), target: 5, unit: 'ms', higherIsBetter: false, note: `baseline: a miss p99 ${quantile(direct, 0.99).toFixed(1)} ms` },
      { name: 'bus frames with 3 door clients at 1 Hz, per gateway poll frame', measured: withDoor / Math.max(alone, 1e-9), target: 1.05, unit: 'x', higherIsBetter: false, note: `3 direct masters: ${((alone + 3) / Math.max(alone, 1e-9)).toFixed(2)} x` },
      { name: 'line busy share with 3 door clients', measured: busyDoor, target: busyDirect, unit: '%', higherIsBetter: false, note: `3 direct masters beside the gateway: ${busyDirect.toFixed(1)} %` },
    ];
  } finally {
    for (const c of clients) c.close();
    await gw.stop();
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchModbusDoor());
}
