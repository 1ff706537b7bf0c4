/**
 * The fair order of poll cycles on a simulated line (no clock, no I/O): groups on the poller's fixed grid
 * (a cycle begins when due, the next is due one period later, a group over a second behind starts afresh)
 * queue one request at a time; the line serves the first in the order, each request taking its wire time.
 * Saturated, every group's period stretches by the same factor; unsaturated, every group keeps its own.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CycleOrder, type CycleTag } from '../../../src/protocol/modbus/cycle-order.js';

interface Group {
  name: string;
  periodMs: number;
  /** wire time of each request of a cycle, ms */
  costs: number[];
}

interface Entry { group: number; request: number; tag: CycleTag }

/** Cycle periods (ms per completed cycle over the window after a warm-up) of each group. */
function simulate(groups: readonly Group[], mode: 'fair' | 'fifo', windowMs = 60_000): number[] {
  const order = new CycleOrder();
  const keys = groups.map(() => ({}));
  // fifo: first come, first served, what the bus did before: every poll request at the back of the queue.
  const tagOf = (i: number): CycleTag => (mode === 'fair' ? order.begin(keys[i]!, groups[i]!.periodMs) : order.now());
  const due = groups.map(() => 0);
  const running = groups.map(() => false);
  const cycleDue = groups.map(() => 0);
  const done = groups.map(() => 0);
  const warmUp = 5000;
  const queue: Entry[] = [];
  let t = 0;
  while (t < warmUp + windowMs) {
    groups.forEach((_g, i) => {
      if (running[i] || due[i]! > t) return;
      running[i] = true;
      cycleDue[i] = due[i]!;
      queue.push({ group: i, request: 0, tag: tagOf(i) });
    });
    if (queue.length === 0) {
      t = Math.min(...due);
      continue;
    }
    const entry = queue.splice(CycleOrder.first(queue), 1)[0]!;
    order.served(entry.tag);
    const g = groups[entry.group]!;
    t += g.costs[entry.request]!;
    if (entry.request + 1 < g.costs.length) {
      queue.push({ ...entry, request: entry.request + 1, tag: mode === 'fair' ? entry.tag : order.now() });
    } else {
      running[entry.group] = false;
      const next = cycleDue[entry.group]! + g.periodMs;
      due[entry.group] = t - next <= 1000 ? next : t;
      if (t >= warmUp) done[entry.group]!++;
    }
  }
  return done.map((n) => windowMs / n);
}


const stretches = (groups: readonly Group[], periods: readonly number[]): number[] => periods.map((p, i) => p / groups[i]!.periodMs);
const spread = (xs: readonly number[]): number => Math.max(...xs) / Math.min(...xs);

test('saturated, equal periods: the 3-request meter and the 1-request sensors all cycle once per round of the line', () => {
  // Round of the line: 96 + 46 + 32 + 3 × 32 = 270 ms (the SDM120's plan and three small sensors at 9600 baud), all due every 50 ms.
  const groups: Group[] = [
    { name: 'meter', periodMs: 50, costs: [96, 46, 32] },
    { name: 's2', periodMs: 50, costs: [32] },
    { name: 's3', periodMs: 50, costs: [32] },
    { name: 's4', periodMs: 50, costs: [32] },
  ];
  const round = 270;
  const periods = simulate(groups, 'fair');
  for (const [i, p] of periods.entries()) assert.ok(Math.abs(p / round - 1) <= 0.02, `${groups[i]!.name}: ${p.toFixed(1)} ms per cycle, round ${round} ms`);
  // The order is what makes it fair: first come, first served gives the meter three rounds per cycle.
  const before = simulate(groups, 'fifo');
  assert.ok(before[0]! / round > 1.4 && spread(before) > 2.5, `first come first served: ${before.map((p) => p.toFixed(0)).join(', ')} ms`);
});

test('saturated, mixed periods and sizes: every group stretches within 15% of the same factor', () => {
  const groups: Group[] = [
    { name: 'meter 100 ms', periodMs: 100, costs: [96, 46, 32] },
    { name: 'sensor 50 ms', periodMs: 50, costs: [32] },
    { name: 'inverter 250 ms', periodMs: 250, costs: [140, 60, 60, 30] },
    { name: 'io 1 s', periodMs: 1000, costs: [20, 20] },
    { name: 'sensor 2 s', periodMs: 2000, costs: [25] },
  ];
  const s = stretches(groups, simulate(groups, 'fair'));
  const before = stretches(groups, simulate(groups, 'fifo'));
  console.log(`  stretch per group, fair: ${s.map((x) => x.toFixed(2)).join(', ')}; first come first served: ${before.map((x) => x.toFixed(2)).join(', ')}`);
  // Demand: 174/100 + 32/50 + 290/250 + 40/1000 + 25/2000 ≈ 3.6 lines: the stretch should be about that.
  assert.ok(s.every((x) => x > 2.5), `every group stretched: ${s.map((x) => x.toFixed(2)).join(', ')}`);
  assert.ok(spread(s) <= 1.15, `stretches ${s.map((x) => x.toFixed(2)).join(', ')} (worst/best ${spread(s).toFixed(3)})`);
  assert.ok(spread(before) > 1.5, `first come first served is uneven: ${before.map((x) => x.toFixed(2)).join(', ')}`);
});

test('unsaturated: every group keeps its own period, whatever the order', () => {
  const groups: Group[] = [
    { name: 'meter', periodMs: 1000, costs: [96, 46, 32] },
    { name: 'sensor', periodMs: 200, costs: [32] },
    { name: 'io', periodMs: 500, costs: [20, 20] },
  ];
  const periods = simulate(groups, 'fair');
  for (const [i, p] of periods.entries()) assert.ok(Math.abs(p / groups[i]!.periodMs - 1) <= 0.01, `${groups[i]!.name}: ${p.toFixed(1)} ms, configured ${groups[i]!.periodMs}`);
});

test('a group back from idle starts at the virtual time: no credit saved up to burst with', () => {
  const order = new CycleOrder();
  const busy = {};
  const idle = {};
  const first = order.begin(idle, 100);
  order.served(first);
  let tag = order.begin(busy, 100);
  for (let i = 0; i < 20; i++) {
    order.served(tag);
    tag = order.begin(busy, 100);
  }
  const back = order.begin(idle, 100);
  assert.ok(back.start >= 1900, `the idle group starts at ${back.start}, not at its old 100`);
  // Same start: the cycle begun first goes first.
  assert.is(CycleOrder.first([{ tag: { start: 5, seq: 9 } }, { tag: { start: 5, seq: 3 } }, { tag: { start: 7, seq: 1 } }]), 1);
  assert.is(CycleOrder.first([]), -1);
});

test.run();
