import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ModbusPointBlock } from '../../../src/config/types.js';
import type { ModbusTable } from '../../../src/protocol/modbus/address.js';
import { resolveAddress } from '../../../src/protocol/modbus/address.js';
import { pointWidth } from '../../../src/protocol/modbus/codec.js';
import { capFor, PlanError, planCostMs, planReads, type PlanOptions, type PlanPoint } from '../../../src/protocol/modbus/planner.js';
import { requestCostMs, rtuCostModel, tcpCostModel } from '../../../src/protocol/modbus/wire-cost.js';
import { referenceCost } from './plan-reference.js';
import { readModelLibrary } from '../../../src/config/models.js';

const rtu9600 = rtuCostModel(9600);
const pp = (table: ModbusTable, address: number, width = 1, ref = `${table}${address}`): PlanPoint<string> => ({ table, address, width, ref });

/** Every point sits fully inside exactly one request of its table; caps are respected. */
function assertValid(plan: ReturnType<typeof planReads>, points: readonly PlanPoint[], options: PlanOptions): void {
  const seen = new Set<PlanPoint>();
  for (const r of plan) {
    assert.ok(r.count >= 1 && r.count <= capFor(r.table, options), `count ${r.count} over cap`);
    for (const p of r.points) {
      assert.is(p.table, r.table, 'request crosses tables');
      assert.ok(p.address >= r.address && p.address + p.width <= r.address + r.count, 'point outside its request');
      assert.not.ok(seen.has(p), 'point read twice');
      seen.add(p);
    }
  }
  assert.is(seen.size, points.length, 'every point planned');
}

function ratioToReference(points: PlanPoint[], options: PlanOptions): number {
  const plan = planReads(points, options);
  assertValid(plan, points, options);
  let ref = 0;
  for (const table of new Set(points.map((p) => p.table))) {
    const mine = points.filter((p) => p.table === table);
    const gap = options.maxGap === undefined || options.maxGap === 'auto' ? Infinity : options.maxGap;
    ref += referenceCost(table, mine, options.cost, capFor(table, options), gap);
  }
  const cost = planCostMs(plan, options.cost);
  assert.ok(cost >= ref - 1e-9, `planner ${cost} beat the exact reference ${ref}: the reference is wrong`);
  return cost / ref;
}

test('contiguous points become one request; a far point its own', () => {
  const plan = planReads([pp('holding', 0, 2), pp('holding', 2, 2), pp('holding', 4, 2), pp('holding', 1000, 2)], { cost: rtu9600 });
  assert.equal(plan.map((r) => [r.address, r.count]), [[0, 6], [1000, 2]]);
});

test('a small gap is bridged at 9600 baud, a gap costlier than a request is not', () => {
  // At 9600 a request costs ~26 ms and a register ~2.3 ms: bridging 8 unused registers (18 ms) pays, 14 (32 ms) does not.
  const bridged = planReads([pp('input', 0, 2), pp('input', 10, 2)], { cost: rtu9600 });
  assert.equal(bridged.map((r) => [r.address, r.count]), [[0, 12]]);
  const split = planReads([pp('input', 0, 2), pp('input', 16, 2)], { cost: rtu9600 });
  assert.equal(split.map((r) => [r.address, r.count]), [[0, 2], [16, 2]]);
  // Over TCP bytes are nearly free: bridge everything the cap allows.
  const tcp = planReads([pp('input', 0, 2), pp('input', 100, 2)], { cost: tcpCostModel() });
  assert.is(tcp.length, 1);
});

test('never over max_registers, never across tables, coils capped at 2000 bits', () => {
  const points = Array.from({ length: 100 }, (_, i) => pp('holding', i * 2, 2));
  const capped = planReads(points, { cost: rtu9600, maxRegisters: 16 });
  assert.ok(capped.every((r) => r.count <= 16));
  assert.is(capped.length, Math.ceil(200 / 16));
  const mixed = planReads([pp('holding', 0), pp('input', 1), pp('coil', 2), pp('discrete', 3)], { cost: rtu9600 });
  assert.is(mixed.length, 4);
  const coils = Array.from({ length: 2500 }, (_, i) => pp('coil', i));
  const coilPlan = planReads(coils, { cost: rtu9600 });
  assert.ok(coilPlan.every((r) => r.count <= 2000));
  assert.is(coilPlan.length, 2);
});

test('numeric max_gap limits bridging; 0 means contiguous only', () => {
  const pts = [pp('holding', 0), pp('holding', 3), pp('holding', 10)];
  assert.is(planReads(pts, { cost: tcpCostModel(), maxGap: 0 }).length, 3);
  assert.equal(planReads(pts, { cost: tcpCostModel(), maxGap: 2 }).map((r) => r.count), [4, 1]);
  assert.is(planReads(pts, { cost: tcpCostModel(), maxGap: 'auto' }).length, 1);
});

test('a point wider than the cap is a clear error', () => {
  assert.throws(() => planReads([pp('holding', 0, 40)], { cost: rtu9600, maxRegisters: 32 }), (e: unknown) => e instanceof PlanError && /exceeds the cap of 32/.test((e as Error).message));
});

test('overlapping points (a bit and its register) share one read', () => {
  const plan = planReads([pp('holding', 5, 1, 'word'), pp('holding', 5, 1, 'bit3'), pp('holding', 6, 2, 'f')], { cost: rtu9600 });
  assert.equal(plan.map((r) => [r.address, r.count, r.points.length]), [[5, 3, 3]]);
});

// Deterministic PRNG so a failure is reproducible.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function randomMap(rand: () => number, table: ModbusTable, n: number, gappy: boolean): PlanPoint<string>[] {
  const points: PlanPoint<string>[] = [];
  let address = Math.floor(rand() * 50);
  for (let i = 0; i < n; i++) {
    const width = table === 'coil' || table === 'discrete' ? 1 : [1, 2, 2, 4][Math.floor(rand() * 4)]!;
    points.push(pp(table, address, width, `p${i}`));
    const gap = gappy ? Math.floor(rand() ** 2 * 40) : rand() < 0.8 ? 0 : Math.floor(rand() * 6);
    address += width + gap;
  }
  return points;
}

const ratios: number[] = [];

test('random maps: planner within 5% of the exact reference (RTU 9600/19200/115200, TCP, caps, max_gap)', () => {
  const rand = rng(42);
  const models = [rtuCostModel(9600), rtuCostModel(19200), rtuCostModel(115200), tcpCostModel()];
  for (let i = 0; i < 160; i++) {
    const table = (['holding', 'input', 'coil', 'discrete'] as const)[i % 4]!;
    const points = randomMap(rand, table, 5 + Math.floor(rand() * 60), i % 2 === 0);
    const options: PlanOptions = {
      cost: models[i % models.length]!,
      maxRegisters: [125, 64, 32, 10][Math.floor(i / 4) % 4],
      maxGap: i % 7 === 0 ? 5 : 'auto',
    };
    ratios.push(ratioToReference(points, options));
  }
  const worst = Math.max(...ratios);
  console.log(`planner/reference on ${ratios.length} random maps: worst ${worst.toFixed(4)}`);
  assert.ok(worst <= 1.05, `worst ratio ${worst}`);
});

interface ModelFile { name: string; points: { name: string; poll?: string; modbus?: ModbusPointBlock & { address: number | string } }[] }

test('model library: at least 12 Modbus models, every one planned within 5% of the reference', () => {
  const dir = 'board/models';
  let modbusModels = 0;
  // Read through the library loader: a variant file takes its points from its base.
  for (const [name, { raw }] of Object.entries(readModelLibrary(dir).models)) {
    const file = `${name}.json`;
    const model = raw as ModelFile;
    const points: PlanPoint<string>[] = [];
    for (const p of model.points) {
      if (!p.modbus) continue;
      const address = resolveAddress(p.modbus.address, p.modbus.table);
      assert.type(address, 'number', `${file} ${p.name}: ${String(address)}`);
      points.push(pp(p.modbus.table, address as number, pointWidth(p.modbus), p.name));
    }
    if (points.length === 0) continue; // a GPIO or simulator model
    modbusModels++;
    for (const cost of [rtuCostModel(9600), rtuCostModel(19200)]) {
      const ratio = ratioToReference(points, { cost, maxRegisters: 125 });
      assert.ok(ratio <= 1.05, `${file}: ratio ${ratio}`);
    }
  }
  assert.ok(modbusModels >= 12, `only ${modbusModels} Modbus models in ${dir}`);
});

test('gappy maps: the planner needs markedly less wire time than a contiguous-only merge', () => {
  const rand = rng(7);
  let ours = 0;
  let contiguous = 0;
  for (let i = 0; i < 40; i++) {
    // Meter-like gappy map: 30 values with 1..8 unused registers between neighbours.
    const points: PlanPoint<string>[] = [];
    let address = 0;
    for (let k = 0; k < 30; k++) {
      const width = [1, 2, 2, 4][Math.floor(rand() * 4)]!;
      points.push(pp('holding', address, width));
      address += width + 1 + Math.floor(rand() * 8);
    }
    ours += planCostMs(planReads(points, { cost: rtu9600 }), rtu9600);
    contiguous += planCostMs(planReads(points, { cost: rtu9600, maxGap: 0 }), rtu9600);
  }
  console.log(`gappy maps at 9600: contiguous-only ${contiguous.toFixed(0)} ms vs planner ${ours.toFixed(0)} ms (${(contiguous / ours).toFixed(2)}x)`);
  assert.ok(contiguous / ours >= 1.5);
  assert.ok(requestCostMs(rtu9600, 'holding', 1) > 20);
});

test.run();
