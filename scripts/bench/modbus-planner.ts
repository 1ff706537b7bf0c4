/**
 * Modbus benchmarks (issue 3):
 * 1. wire time of our plan vs a contiguous-only merge (the Neuron/EdgeX approach) on gappy maps and on
 *    the model library, at 9600 and 19200 baud — target ≥ 1.5× less on gappy maps;
 * 2. measured poll-cycle time of a multi-device bus through a baud-emulating pty relay vs the
 *    theoretical wire limit of the plan — target ≤ 1.15×;
 * 3. a saturated bus (modbus-saturated.ts): the worst device's cycle period vs the replay floor — target ≤ 1.15×.
 * Run alone: `node --import tsx scripts/bench/modbus-planner.ts`; `make bench` calls benchModbus().
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateConfig, resolveDevices } from '../../src/config/load.js';
import type { ModbusPointBlock } from '../../src/config/types.js';
import { systemClock } from '../../src/core/clock.js';
import { createModbusRtuDriver } from '../../src/drivers/modbus-rtu.js';
import { resolveAddress } from '../../src/protocol/modbus/address.js';
import { pointWidth } from '../../src/protocol/modbus/codec.js';
import { planCostMs, planReads, type PlanPoint, type ReadRequest } from '../../src/protocol/modbus/planner.js';
import { charMs, dataBytes, rtuCostModel, silenceMs } from '../../src/protocol/modbus/wire-cost.js';
import { silentLogger } from '../../src/util/logger.js';
import { RelayRig } from '../../test/drivers/modbus-relay-rig.js';
import { saturatedBus } from './modbus-saturated.js';
import type { Result } from './report.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function gappyMaps(count: number): PlanPoint[][] {
  const rand = rng(7);
  return Array.from({ length: count }, () => {
    const points: PlanPoint[] = [];
    let address = 0;
    for (let k = 0; k < 30; k++) {
      const width = [1, 2, 2, 4][Math.floor(rand() * 4)]!;
      points.push({ table: 'holding', address, width, ref: k });
      address += width + 1 + Math.floor(rand() * 8);
    }
    return points;
  });
}

function libraryMaps(): PlanPoint[][] {
  return readdirSync('board/models').filter((f) => f.endsWith('.json')).map((f) => {
    const model = JSON.parse(readFileSync(join('board/models', f), 'utf8')) as { points: { modbus?: ModbusPointBlock & { address: number | string } }[] };
    return model.points.filter((p) => p.modbus).map((p, i) => ({
      table: p.modbus!.table, address: resolveAddress(p.modbus!.address, p.modbus!.table) as number, width: pointWidth(p.modbus!), ref: i,
    }));
  });
}

export function plannerFigures(): Result[] {
  const out: Result[] = [];
  for (const baud of [9600, 19200]) {
    const cost = rtuCostModel(baud);
    for (const [label, maps] of [['gappy maps', gappyMaps(40)], ['model library', libraryMaps()]] as const) {
      let ours = 0;
      let contiguous = 0;
      for (const points of maps) {
        ours += planCostMs(planReads(points, { cost }), cost);
        contiguous += planCostMs(planReads(points, { cost, maxGap: 0 }), cost);
      }
      out.push({
        name: `modbus plan wire time, contiguous-only / ours, ${label} @${baud}`,
        measured: contiguous / ours, target: label === 'gappy maps' ? 1.5 : 1, unit: '×', higherIsBetter: true,
        note: `${contiguous.toFixed(0)} ms vs ${ours.toFixed(0)} ms`,
      });
    }
  }
  return out;
}

/** Wire time without slave turnaround: both frames at 11 bits/char plus a t3.5 after each. */
function wireLimitMs(requests: readonly ReadRequest[], baud: number): number {
  return requests.reduce((sum, r) => sum + (8 + 5 + dataBytes(r.table, r.count)) * charMs(baud) + 2 * silenceMs(baud), 0);
}

export async function measuredCycle(baud: number, rounds = 5): Promise<Result> {
  const roundMs = baud >= 19_200 ? 700 : 1200;
  const rig = new RelayRig('1,2,3', baud);
  let driver: ReturnType<typeof createModbusRtuDriver> | null = null;
  try {
    await rig.start();
    const config = validateConfig({
      gateway: { id: 'bench' },
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: baud, timeout: '1s' }],
      // Every device due at the same instant each round: the round's length is the bus's poll cycle.
      devices: [
        { id: 'sdm120', model: 'eastron-sdm120', bus: 'rs485', unit_id: 1, poll: `${roundMs}ms` },
        { id: 'sdm630', model: 'eastron-sdm630', bus: 'rs485', unit_id: 2, poll: `${roundMs}ms` },
        { id: 'io', model: 'waveshare-modbus-rtu-io-8ch', bus: 'rs485', unit_id: 3, poll: `${roundMs}ms` },
      ],
    }, { env: {} });
    const devices = resolveDevices(config);
    let failures = 0;
    driver = createModbusRtuDriver(config.buses[0]!, devices, {
      sink: { data: () => {}, failure: () => void failures++ },
      clock: systemClock, log: silentLogger, lastValue: () => null, lastWrite: () => null,
    });
    await driver.start();
    const cycles: number[] = [];
    for (let round = 0; round < rounds + 1; round++) {
      await sleep(roundMs);
      const stats = driver.stats!() as { devices: Record<string, { pollCycleMs: Record<string, number | null> }> };
      const longest = Math.max(...Object.values(stats.devices).map((d) => d.pollCycleMs[`${roundMs}ms`] ?? Infinity));
      if (round > 0) cycles.push(longest); // round 0 includes opening the port
    }
    const cycleMs = cycles.reduce((a, b) => a + b, 0) / cycles.length;
    // The plans the driver uses, recomputed with the same planner for the wire limit.
    const requests: ReadRequest[] = [];
    const cost = rtuCostModel(baud);
    for (const d of devices) {
      const pts = d.model.points.map((p, i) => ({ table: p.modbus!.table, address: p.modbus!.address, width: pointWidth(p.modbus!), ref: i }));
      requests.push(...planReads(pts, { cost }));
    }
    const limit = wireLimitMs(requests, baud);
    return {
      name: `modbus poll cycle / wire limit, 3 devices (SDM120+SDM630+IO-8CH) @${baud} through a baud-emulating relay`,
      measured: cycleMs / limit, target: 1.15, unit: '×', higherIsBetter: false,
      note: `cycle ${cycleMs.toFixed(1)} ms (mean of ${cycles.length} rounds), limit ${limit.toFixed(1)} ms, ${requests.length} requests/cycle, ${failures} failures`,
    };
  } finally {
    await driver?.stop();
    await rig.stop();
  }
}

export async function benchModbus(): Promise<Result[]> {
  const results = plannerFigures();
  if (spawnSync('socat', ['-V']).status !== 0 || spawnSync('/usr/bin/python3', ['-c', 'import pymodbus']).status !== 0) {
    console.log('SKIP: modbus poll-cycle bench (socat or python3-pymodbus missing)');
    return results;
  }
  for (const baud of [9600, 19200]) results.push(await measuredCycle(baud));
  results.push(await saturatedBus(9600));
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { report } = await import('./report.js');
  report(await benchModbus());
}
