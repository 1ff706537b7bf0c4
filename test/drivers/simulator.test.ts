import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createSimulatorDriver } from '../../src/drivers/simulator.js';
import { createGenerator } from '../../src/drivers/simulator/generators.js';
import { POLL_SLICE_MS } from '../../src/drivers/simulator/poll-ticker.js';
import type { DriverContext, RawValue } from '../../src/drivers/types.js';
import type { ResolvedDevice } from '../../src/config/types.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { resolved } from '../helpers/devices.js';
import { FakeClock } from '../helpers/fake-clock.js';

function context(clock: Clock, last: Record<string, number | string> = {}, written: Record<string, number | string> = {}) {
  const data: [string, Record<string, RawValue>][] = [];
  const failures: string[] = [];
  const ctx: DriverContext = {
    clock, log: silentLogger,
    sink: { data: (id, v) => data.push([id, v]), failure: (id) => failures.push(id) },
    lastValue: (id, p) => last[`${id}/${p}`] ?? null,
    lastWrite: (id, p) => written[`${id}/${p}`] ?? null,
  };
  return { ctx, data, failures };
}

const bus = { id: 'sim', driver: 'simulator' as const };

test('generators: sine stays within min..max with its period, counter steps, walk is deterministic and bounded', () => {
  const sine = createGenerator({ fn: 'sine', min: 18, max: 26, period: 60_000 }, 'x');
  assert.is(sine.next(0), 22);
  assert.ok(Math.abs((sine.next(15_000) as number) - 26) < 1e-9);
  assert.ok(Math.abs((sine.next(45_000) as number) - 18) < 1e-9);
  const counter = createGenerator({ fn: 'counter', step: 2 }, 'c', 10);
  assert.equal([counter.next(0), counter.next(0)], [12, 14]);
  const a = createGenerator({ fn: 'random_walk', min: 0, max: 1, step: 0.5 }, 'seed');
  const b = createGenerator({ fn: 'random_walk', min: 0, max: 1, step: 0.5 }, 'seed');
  const seqA = Array.from({ length: 50 }, () => a.next(0) as number);
  assert.equal(seqA, Array.from({ length: 50 }, () => b.next(0)));
  assert.ok(seqA.every((v) => v >= 0 && v <= 1));
  assert.ok(new Set(seqA).size > 10, 'it walks');
});

test('read returns raw values; RW points hold written values, also from the persisted write value', async () => {
  const clock = new FakeClock();
  const dev = resolved('d1', [
    { name: 'sp', access: 'RW', sim: { fn: 'constant', value: 21.5 } },
    { name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } },
    { name: 'relay', type: 'int', access: 'RW', sim: { fn: 'constant', value: 0 } },
  ]);
  const { ctx } = context(clock, { 'd1/n': 41 }, { 'd1/relay': 1 });
  const driver = createSimulatorDriver(bus, [dev], ctx);
  assert.equal(await driver.read!('d1', ['sp', 'n', 'relay']), { sp: 21.5, n: 42, relay: 1 });
  await driver.write('d1', [{ name: 'sp', value: 19 }]);
  assert.equal(await driver.read!('d1', ['sp']), { sp: 19 });
});

test('devices of one model share its generators but not what moves: walks, counters and written values are each device\'s own', async () => {
  const walk = { fn: 'random_walk' as const, min: 0, max: 100, step: 5 };
  const a = resolved('a', [
    { name: 'w', sim: walk },
    { name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } },
    { name: 'sp', access: 'RW', sim: { fn: 'constant', value: 20 } },
  ]);
  // The same model object, as resolveDevices hands every device of a model.
  const b: ResolvedDevice = { ...a, config: { ...a.config, id: 'b' } };
  const { ctx } = context(new FakeClock(), { 'a/n': 41 });
  const driver = createSimulatorDriver(bus, [a, b], ctx);
  const wa = createGenerator(walk, 'a/w');
  const wb = createGenerator(walk, 'b/w');
  for (let i = 0; i < 5; i++) {
    assert.equal(await driver.read!('a', ['w', 'n']), { w: wa.next(0), n: 42 + i });
    assert.equal(await driver.read!('b', ['w', 'n']), { w: wb.next(0), n: 1 + i });
  }
  await driver.write('a', [{ name: 'sp', value: 19 }]);
  assert.equal(await driver.read!('a', ['sp']), { sp: 19 });
  assert.equal(await driver.read!('b', ['sp']), { sp: 20 });
});

test('poll groups: a point\'s own poll reads it apart; devices of one model with different polls each keep theirs', async () => {
  const a = resolved('a', [
    { name: 'x', type: 'int', sim: { fn: 'counter', step: 1 } },
    { name: 'slow', type: 'int', poll: 10_000, sim: { fn: 'constant', value: 7 } },
    { name: 'cmd', type: 'int', access: 'W', sim: { fn: 'constant', value: 0 } },
  ], { poll: 20 });
  const b: ResolvedDevice = { ...a, config: { ...a.config, id: 'b', poll: 40 } };
  const { ctx, data } = context(systemClock);
  const driver = createSimulatorDriver(bus, [a, b], ctx);
  await driver.start();
  try {
    // Ten of b's polls, not four: a loop a busy machine wakes only every 40 ms or more polls both at every wake,
    // and over 400 ms that is far less likely to last the whole window than over 160.
    await waitFor(() => data.filter(([id]) => id === 'b').length >= 10, 5000, 'b polled');
  } finally {
    await driver.stop();
  }
  const of = (id: string) => data.filter(([d]) => d === id).map(([, v]) => Object.keys(v).sort().join());
  // Each device reads `slow` once at first (its 10 s group), then only `x`; `cmd` (write-only) never.
  for (const id of ['a', 'b']) {
    assert.is(of(id).filter((k) => k === 'slow').length, 1, `${id}: slow read once`);
    assert.ok(of(id).every((k) => k === 'x' || k === 'slow'), `${id}: ${of(id).join(' | ')}`);
  }
  assert.ok(of('a').length > of('b').length, `a (20 ms) polled more often than b (40 ms): ${of('a').length} vs ${of('b').length}`);
});

const waitFor = async (done: () => boolean, ms: number, what: string): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

test('polling delivers each device to the sink on its interval; faults fail reads then recover', async () => {
  // Due times are on the context's monotonic clock: a running one here.
  const clock = systemClock;
  const dev = resolved('d1', [{ name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } }], { poll: 5, sim_fault: { fail_reads: 2 } });
  const { ctx, data, failures } = context(clock);
  const driver = createSimulatorDriver(bus, [dev], ctx);
  await driver.start();
  try {
    const deadline = Date.now() + 2000;
    while (data.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  } finally {
    await driver.stop();
  }
  assert.equal(failures, ['d1', 'd1'], 'the first two reads fail');
  assert.equal(data.slice(0, 3).map(([, v]) => v.n), [1, 2, 3]);
  const count = data.length;
  await new Promise((r) => setTimeout(r, 30));
  assert.is(data.length, count, 'stop() ends polling');
});

test('a fleet of 2,000 devices holds one timer, polls each device once per interval, first polls in device order', async () => {
  const devices = Array.from({ length: 2000 }, (_, i) => resolved(`d${i}`, [{ name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } }], { poll: 1000 }));
  const { ctx, data } = context(systemClock);
  const driver = createSimulatorDriver(bus, devices, ctx);
  const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  await driver.start();
  try {
    // One timer per device and poll group before: 2,000 here.
    assert.ok(timers() - before <= 1, `timers held: ${timers() - before}`);
    await waitFor(() => data.length >= devices.length, 10_000, 'every device polled');
  } finally {
    await driver.stop();
  }
  assert.is(timers() - before, 0, 'stop() leaves no timer');
  const first = data.slice(0, devices.length).map(([id]) => id);
  assert.equal(first, devices.map((d) => d.config.id), 'the staggered first polls come in device order, each device once');
});

test('a turn of the event loop polls at most a slice\'s worth of devices when each poll costs the gateway time', async () => {
  // Each delivery busy-waits COST_MS, as a shadow update with MQTT and history behind it does. 200 devices at
  // 200 ms start 1 ms apart, so one timer per device fell behind at once and ran doubling batches (1, 2, 4, …,
  // over 60) in one task. Load only lengthens each poll, so it can only lower the count per turn.
  const COST_MS = 2;
  const devices = Array.from({ length: 200 }, (_, i) => resolved(`d${i}`, [{ name: 'n', type: 'int', sim: { fn: 'counter', step: 1 } }], { poll: 200 }));
  let delivered = 0;
  let inTurn = 0;
  let most = 0;
  const ctx: DriverContext = {
    ...context(systemClock).ctx,
    sink: {
      data: () => {
        const until = performance.now() + COST_MS;
        while (performance.now() < until);
        delivered++;
        // Counted until the loop's next check phase: what ran in one turn (setImmediate queued by a run runs after it).
        if (inTurn++ === 0) setImmediate(() => {
          most = Math.max(most, inTurn);
          inTurn = 0;
        });
      },
      failure: () => undefined,
    },
  };
  const driver = createSimulatorDriver(bus, devices, ctx);
  await driver.start();
  try {
    await waitFor(() => delivered >= devices.length, 20_000, 'every device polled');
  } finally {
    await driver.stop();
  }
  await new Promise((r) => setImmediate(r));
  const bound = 2 * Math.ceil(POLL_SLICE_MS / COST_MS);
  assert.ok(most >= 1 && most <= bound, `most polls in one turn: ${most} (bound ${bound})`);
});

test('a silent device times out on reads and writes; inject brings it back', async () => {
  const dev = resolved('d1', [{ name: 'sp', access: 'RW', sim: { fn: 'constant', value: 1 } }], { sim_fault: { silent: true } });
  const driver = createSimulatorDriver(bus, [dev], context(new FakeClock()).ctx);
  let readError: unknown;
  await driver.read!('d1', ['sp']).catch((e: unknown) => (readError = e));
  assert.match(String(readError), /did not answer/);
  let error: unknown;
  await driver.write('d1', [{ name: 'sp', value: 2 }]).catch((e: unknown) => (error = e));
  assert.match(String(error), /did not answer/);
  driver.inject('d1', { silent: false });
  assert.equal(await driver.read!('d1', ['sp']), { sp: 1 });
});

test.run();
