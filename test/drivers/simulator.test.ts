import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createSimulatorDriver } from '../../src/drivers/simulator.js';
import { createGenerator } from '../../src/drivers/simulator/generators.js';
import type { DriverContext, RawValue } from '../../src/drivers/types.js';
import { silentLogger } from '../../src/util/logger.js';
import { resolved } from '../helpers/devices.js';
import { FakeClock } from '../helpers/fake-clock.js';

function context(clock: FakeClock, last: Record<string, number | string> = {}, written: Record<string, number | string> = {}) {
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

test('polling delivers each device to the sink on its interval; faults fail reads then recover', async () => {
  const clock = new FakeClock();
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
