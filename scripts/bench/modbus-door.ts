/**
 * The Modbus TCP server ("front door") on a real 9600-baud RTU bus: socat ptys, the baud-emulating relay
 * and devices.py serving an SDM120 image at unit 1, which logs every request it answers (the frame count is
 * the slave's, not the gateway's). The gateway runs in this process and polls the meter every second.
 * 1. Hit latency: 3 door clients each read the polled block 20 times a second for the window; p50/p99 of
 *    request-to-answer at the client. The clients run in a child process (modbus-door-clients.ts), so the
 *    figure is the gateway's and the loopback's, not the clients' own work. Baseline in the same run: the
 *    same block read from the bus (unit 2 maps the same meter with max_age 1 ms: every read is a miss).
 * 2. Line: frames per second the slave answered with 3 door clients at 1 Hz vs the gateway alone, and the
 *    line busy share; the baseline is 3 direct masters at 1 Hz beside the gateway (their frames added to
 *    the measured polls, each costing the polled read's wire time: RS-485 cannot carry them at once).
 * Knobs: DOOR_BENCH_WINDOW_S (10). Run alone: `node --import tsx scripts/bench/modbus-door.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort } from '../../test/drivers/modbus-rig.js';
import { read } from '../../test/helpers/modbus-tcp-client.js';
import { BusRig, distinctRequests, rigUnavailable, sleep } from './modbus-bus/rig.js';
import type { Result } from './report.js';

const WINDOW_S = Number(process.env.DOOR_BENCH_WINDOW_S ?? 10);
const CLIENTS = 3;
const RATE_HZ = 20;
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
  const children: ChildProcess[] = [];
  try {
    await sleep(3000); // a few poll cycles: the plan is on the bus
    const polled = distinctRequests(rig.requests).filter((r) => r.fc === 4).sort((a, b) => b.count - a.count)[0];
    if (!polled) throw new Error('the gateway polled no input registers');
    const block = read(4, polled.address, polled.count);
    // The clients run in a child process (modbus-door-clients.ts): their timing is not held up by the
    // gateway's own work on this event loop, so the latency is what a client on another host would see.
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./modbus-door-clients.ts', import.meta.url)),
      JSON.stringify({ port, block, windowS: WINDOW_S, clients: CLIENTS, rateHz: RATE_HZ })], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const marks = new Map<string, { at: number; line: Record<string, unknown> }>();
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (text) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      marks.set(String(line['event']), { at: performance.now(), line });
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve)); // after stdout is drained
    const code = await Promise.race([exited, sleep((4 * WINDOW_S + 60) * 1000).then(() => 'timeout' as const)]);
    if (code !== 0 || !marks.has('done')) throw new Error(`the clients' process ended with ${code} before it was done`);
    const hits = marks.get('hits')!.line as { latencies: number[]; direct: number[] };
    const latencies = hits.latencies.sort((a, b) => a - b);
    const direct = hits.direct.sort((a, b) => a - b);
    const fig = gw.modbusServers.figures()['door']!.total;
    const t1 = marks.get('alone')!.at;
    const t2 = marks.get('door')!.at;
    const alone = rig.between(t1, t2).length / ((t2 - t1) / 1000);
    const t3 = marks.get('done')!.at;
    const withDoor = rig.between(t2, t3).length / ((t3 - t2) / 1000);
    const perPoll = rig.between(t1, t3).reduce((ms, r) => ms + wireMs(r.count), 0) / Math.max(1, rig.between(t1, t3).length);
    const busyDoor = (withDoor * perPoll) / 10;
    const busyDirect = ((alone + 3) * perPoll) / 10;
    const setup = `${BAUD} baud, SDM120 image polled every 1 s, max_age 2500ms, ${CLIENTS} clients x ${RATE_HZ}/s in a child process, window ${WINDOW_S} s`;
    console.log(`  configuration: ${setup}`);
    console.log(`  door: ${latencies.length} hits in ${WINDOW_S} s (${fig.hits} hits, ${fig.misses} misses in all); polled block fc4 ${polled.address}+${polled.count}`);
    console.log(`  frames/s: gateway alone ${alone.toFixed(2)}, with 3 door clients at 1 Hz ${withDoor.toFixed(2)}; 3 direct masters would add 3.00`);
    return [
      { name: 'door hit latency p50 (3 clients x 20/s)', measured: quantile(latencies, 0.5), target: 5, unit: 'ms', higherIsBetter: false, note: `baseline: a miss read from the bus p50 ${quantile(direct, 0.5).toFixed(1)} ms; ${setup}` },
      { name: 'door hit latency p99 (3 clients x 20/s)', measured: quantile(latencies, 0.99), target: 5, unit: 'ms', higherIsBetter: false, note: `baseline: a miss p99 ${quantile(direct, 0.99).toFixed(1)} ms; ${setup}` },
      { name: 'bus frames with 3 door clients at 1 Hz, per gateway poll frame', measured: withDoor / Math.max(alone, 1e-9), target: 1.05, unit: 'x', higherIsBetter: false, note: `3 direct masters: ${((alone + 3) / Math.max(alone, 1e-9)).toFixed(2)} x; ${setup}` },
      { name: 'line busy share with 3 door clients', measured: busyDoor, target: busyDirect, unit: '%', higherIsBetter: false, note: `3 direct masters beside the gateway: ${busyDirect.toFixed(1)} %` },
    ];
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
    await gw.stop();
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchModbusDoor());
}
