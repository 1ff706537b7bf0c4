/**
 * A saturated RTU bus: devices polled faster than the line can serve, through the baud-emulating relay.
 * Every device's cycle should stretch by the same factor; with equal poll intervals each device's cycle
 * period should then be the time one round of every device's requests takes — the replay floor: the same
 * planned requests sent back to back by a bare modbus-serial loop (reference-master.mjs) on the same rig.
 * Figure: the worst device's cycle period / the replay floor (target ≤ 1.15×); the note gives every
 * device's period, its ratio to the floor, the wire limit of one round and the configuration.
 * Run alone: `node --import tsx scripts/bench/modbus-saturated.ts`; `make bench` calls it from benchModbus().
 */
import { spawn } from 'node:child_process';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import { systemClock } from '../../src/core/clock.js';
import { createModbusRtuDriver } from '../../src/drivers/modbus-rtu.js';
import { pointWidth } from '../../src/protocol/modbus/codec.js';
import { planReads, type ReadRequest } from '../../src/protocol/modbus/planner.js';
import { charMs, dataBytes, rtuCostModel, silenceMs } from '../../src/protocol/modbus/wire-cost.js';
import { silentLogger } from '../../src/util/logger.js';
import { RelayRig } from '../../test/drivers/modbus-relay-rig.js';
import { kill, waitFor } from '../../test/drivers/modbus-rig.js';
import { unitFlags } from './modbus-bus/gateway.js';
import type { Result } from './report.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const WARMUP_MS = 3000;
const WINDOW_MS = Number(process.env.SATURATED_BENCH_WINDOW_S ?? 15) * 1000;
const POLL_MS = 50;

/** One 3-request meter and three 1-request sensors, all due every POLL_MS: far faster than 9600 baud serves. */
const small = { points: [{ name: 't', type: 'float', modbus: { table: 'holding', address: 0, data_type: 'uint16' } },
  { name: 'h', type: 'float', modbus: { table: 'holding', address: 3, data_type: 'uint16' } }] };
const DEVICES = [
  { id: 'meter', model: 'eastron-sdm120', unit_id: 1 },
  { id: 'sensor-2', model: 'small', unit_id: 2 },
  { id: 'sensor-3', model: 'small', unit_id: 3 },
  { id: 'sensor-4', model: 'small', unit_id: 4 },
];

/** The plan's requests sent back to back by the bare loop: ms per round of every device's requests. */
async function replayFloor(port: string, baud: number, requests: readonly (ReadRequest & { unit: number })[]): Promise<number> {
  const fc = { coil: 1, discrete: 2, holding: 3, input: 4 } as const;
  const list = requests.map((r) => ({ unit: r.unit, fc: fc[r.table], address: r.address, count: r.count }));
  const child = spawn(process.execPath, [...unitFlags(), 'scripts/bench/modbus-bus/reference-master.mjs', port, String(baud), '0', JSON.stringify(list)],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await waitFor('reference master READY', () => out.includes('READY') || child.exitCode !== null, 10_000);
    // It counts requests from READY to SIGTERM: their rate over that time is what a round costs.
    const t0 = performance.now();
    await sleep(WINDOW_MS / 2);
    const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const elapsed = performance.now() - t0;
    await Promise.race([done, sleep(5000)]);
    const stats = JSON.parse(/STATS (.*)/.exec(out)?.[1] ?? '{}') as { requests?: number; errors?: number };
    if (!stats.requests) throw new Error(`reference master reported no requests: ${out.slice(-300)}`);
    if (stats.errors) throw new Error(`reference master saw ${stats.errors} errors`);
    return (elapsed / stats.requests) * requests.length;
  } finally {
    await kill(child);
  }
}

export async function saturatedBus(baud = 9600): Promise<Result> {
  const rig = new RelayRig('1,2,3,4', baud);
  let driver: ReturnType<typeof createModbusRtuDriver> | null = null;
  try {
    await rig.start();
    const config = validateConfig({
      gateway: { id: 'bench' },
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: baud, timeout: '1s' }],
      models: { small },
      devices: DEVICES.map((d) => ({ ...d, bus: 'rs485', poll: `${POLL_MS}ms` })),
    }, { env: {} });
    const devices = resolveDevices(config);
    const cost = rtuCostModel(baud);
    const requests = devices.flatMap((d) => planReads(d.model.points.map((p, i) => ({ table: p.modbus!.table, address: p.modbus!.address, width: pointWidth(p.modbus!), ref: i })), { cost })
      .map((r) => ({ ...r, unit: d.config.unit_id as number })));
    const perDevice = DEVICES.map((d) => requests.filter((r) => r.unit === d.unit_id).length);
    const wire = requests.reduce((sum, r) => sum + (8 + 5 + dataBytes(r.table, r.count)) * charMs(baud) + 2 * silenceMs(baud), 0);
    const floor = await replayFloor(rig.master, baud, requests);

    const cycles = new Map<string, number[]>();
    let failures = 0;
    driver = createModbusRtuDriver(config.buses[0]!, devices, {
      sink: { data: (id) => { const list = cycles.get(id) ?? []; list.push(performance.now()); cycles.set(id, list); }, failure: () => void failures++ },
      clock: systemClock, log: silentLogger, lastValue: () => null, lastWrite: () => null,
    });
    await driver.start();
    await sleep(WARMUP_MS);
    const from = performance.now();
    await sleep(WINDOW_MS);
    const to = performance.now();
    const periods = DEVICES.map((d) => {
      const n = (cycles.get(d.id) ?? []).filter((t) => t >= from && t < to).length;
      return n > 0 ? (to - from) / n : Infinity;
    });
    const ratios = periods.map((p) => p / floor);
    const worst = Math.max(...ratios);
    const f = (n: number): string => n.toFixed(2);
    return {
      name: `modbus saturated bus: worst device cycle / replay floor @${baud}`,
      measured: worst, target: 1.15, unit: '×', higherIsBetter: false,
      note: `cycle periods ${DEVICES.map((d, i) => `${d.id} (${perDevice[i]} req) ${periods[i]!.toFixed(0)} ms = ${f(ratios[i]!)}×`).join(', ')}; ` +
        `replay floor ${floor.toFixed(0)} ms per round of ${requests.length} requests (bare modbus-serial loop, same rig), wire limit ${wire.toFixed(0)} ms; ` +
        `worst/best ${f(worst / Math.min(...ratios))}; ${DEVICES.length} devices polled every ${POLL_MS} ms through the baud relay, window ${WINDOW_MS / 1000} s after ${WARMUP_MS / 1000} s, ${failures} failures`,
    };
  } finally {
    await driver?.stop();
    await rig.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report([await saturatedBus()]);
}
