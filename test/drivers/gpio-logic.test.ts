/**
 * Edge, debounce, active_low, polling and the write/read paths of the gpio driver, through an injected
 * fake GpioPort and hand-moved timers (epoll cannot be faked on tmpfs; the onoff path itself is
 * covered by gpio-sysfs.test.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import type { PointConfig } from '../../src/config/types.js';
import { createGpioDriverWith, FALLBACK_SAMPLE_MS } from '../../src/drivers/gpio.js';
import type { Driver, RawValue } from '../../src/drivers/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { resolved } from '../helpers/devices.js';
import { FakePort, FakeTimers, fakeMapping } from './gpio-fakes.js';
import type { Level } from '../../src/drivers/gpio/port.js';

interface Rig {
  driver: Driver;
  port: FakePort;
  timers: FakeTimers;
  data: { id: string; values: Record<string, RawValue>; at: number }[];
  failures: string[];
  warnings: string[];
}

function gpioPoint(name: string, gpio: PointConfig['gpio'], extra: Partial<PointConfig> = {}): Partial<PointConfig> {
  return { name, type: 'int', access: gpio?.direction === 'out' ? 'RW' : 'R', gpio, ...extra };
}

const door = (gpio: Partial<NonNullable<PointConfig['gpio']>> = {}, poll = 5000) =>
  resolved('door', [gpioPoint('contact', { pin: 17, direction: 'in', edge: 'both', active_low: true, debounce: 20, ...gpio })], { bus: 'pins', poll });

async function rig(devices: ReturnType<typeof resolved>[], portOpts: ConstructorParameters<typeof FakePort>[0] = {}): Promise<Rig> {
  const port = new FakePort(portOpts);
  const timers = new FakeTimers();
  const data: Rig['data'] = [];
  const failures: string[] = [];
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
  const driver = createGpioDriverWith({ id: 'pins', driver: 'gpio' }, devices, {
    sink: {
      data: (id, values) => data.push({ id, values, at: timers.now }),
      failure: (id, e) => failures.push(`${id}: ${e.message}`),
    },
    clock: new FakeClock(),
    log,
    lastValue: () => null,
    lastWrite: () => null,
  }, { mapping: fakeMapping, openPort: async () => port, timers, modelPath: '/nonexistent/device-tree-model' });
  await driver.start();
  return { driver, port, timers, data, failures, warnings };
}

/** Moves the line through `levels`, `gapMs` apart (a bouncing contact). */
function bounce(r: Rig, bcm: number, levels: Level[], gapMs: number): void {
  for (const level of levels) {
    r.port.line(bcm).set(level);
    r.timers.advance(gapMs);
  }
}

test('first values are reported at start, logical after active_low', async () => {
  const r = await rig([door()], { initialLevels: { 17: 1 } });
  // Line high = contact open with a pull-up; active_low makes it 0.
  assert.equal(r.data, [{ id: 'door', values: { contact: 0 }, at: 0 }]);
  assert.ok(r.port.line(17).watched);
  assert.equal(r.port.line(17).request, { line: 17, direction: 'in', edges: true, initial: 1 });
  await r.driver.stop();
});

test('bouncing edges within the debounce are one change, delivered when the line settles, not on the poll', async () => {
  const r = await rig([door()], { initialLevels: { 17: 1 } });
  r.data.length = 0;
  // Contact closes with 4 bounces 3 ms apart, ending low.
  bounce(r, 17, [0, 1, 0, 1, 0], 3);
  assert.equal(r.data, [], 'nothing before the line has been quiet for 20 ms');
  r.timers.advance(20 - 3 - 1);
  assert.equal(r.data, []);
  r.timers.advance(1);
  assert.equal(r.data, [{ id: 'door', values: { contact: 1 }, at: 12 + 20 }]);
  // Nothing more until the 5 s safety poll, which repeats the value.
  r.timers.advance(4000);
  assert.is(r.data.length, 1);
  r.timers.advance(1000);
  assert.equal(r.data[1], { id: 'door', values: { contact: 1 }, at: 5000 });
  await r.driver.stop();
});

test('a bounce that ends where it began is no change', async () => {
  const r = await rig([door()], { initialLevels: { 17: 1 } });
  r.data.length = 0;
  bounce(r, 17, [0, 1, 0, 1], 2);
  r.timers.advance(100);
  assert.equal(r.data, []);
  await r.driver.stop();
});

test('debounce 0: the change is reported at the interrupt, synchronously', async () => {
  const pir = resolved('pir', [gpioPoint('motion', { pin: 27, direction: 'in', edge: 'both' })], { bus: 'pins', poll: 1000 });
  const r = await rig([pir]);
  r.data.length = 0;
  r.port.line(27).set(1);
  assert.equal(r.data, [{ id: 'pir', values: { motion: 1 }, at: 0 }]);
  r.port.line(27).set(0);
  assert.equal(r.data[1]?.values, { motion: 0 });
  await r.driver.stop();
});

test('edge "rising" reports 0→1 at once; the fall waits for the poll', async () => {
  const button = resolved('btn', [gpioPoint('pressed', { pin: 23, direction: 'in', edge: 'rising', debounce: 10 })], { bus: 'pins', poll: 1000 });
  const r = await rig([button]);
  r.data.length = 0;
  r.port.line(23).set(1);
  r.timers.advance(10);
  assert.equal(r.data, [{ id: 'btn', values: { pressed: 1 }, at: 10 }]);
  r.port.line(23).set(0);
  r.timers.advance(100);
  assert.is(r.data.length, 1, 'falling edge not reported by the interrupt path');
  r.timers.advance(890);
  assert.equal(r.data[1], { id: 'btn', values: { pressed: 0 }, at: 1000 });
  // And the next rise is reported again (the fall was recorded).
  r.port.line(23).set(1);
  r.timers.advance(10);
  assert.equal(r.data[2], { id: 'btn', values: { pressed: 1 }, at: 1010 });
  await r.driver.stop();
});

test('watch() failing (EPERM) falls back to sampling with a warning; debounce still applies', async () => {
  const r = await rig([door()], { initialLevels: { 17: 1 }, noInterrupts: true });
  assert.ok(r.warnings.some((w) => w.includes('edge interrupts unavailable for door.contact')), r.warnings.join('|'));
  assert.equal(r.driver.stats!().polled_fallback, 1);
  r.data.length = 0;
  r.port.line(17).set(0);
  r.timers.advance(FALLBACK_SAMPLE_MS + 20);
  assert.equal(r.data, [{ id: 'door', values: { contact: 1 }, at: FALLBACK_SAMPLE_MS + 20 }]);
  await r.driver.stop();
  assert.ok(r.port.line(17).closed, 'line released on stop');
});

test('a point poll overrides the device poll; an edge-less input changes on the poll', async () => {
  const dev = resolved('mix', [
    gpioPoint('fast', { pin: 5, direction: 'in' }, { poll: 100 }),
    gpioPoint('slow', { pin: 6, direction: 'in' }),
  ], { bus: 'pins', poll: 1000 });
  const r = await rig([dev]);
  assert.equal(r.data, [{ id: 'mix', values: { fast: 0, slow: 0 }, at: 0 }]);
  r.port.line(5).set(1);
  r.port.line(6).set(1);
  r.timers.advance(99);
  assert.is(r.data.length, 1);
  r.timers.advance(1);
  assert.equal(r.data[1], { id: 'mix', values: { fast: 1 }, at: 100 });
  r.timers.advance(900);
  const slow = r.data.filter((d) => 'slow' in d.values);
  assert.equal(slow.at(-1), { id: 'mix', values: { slow: 1 }, at: 1000 });
  await r.driver.stop();
});

test('outputs: initial applied glitch-free, writes invert for active_low, read-back is logical', async () => {
  const relays = resolved('relays', [
    gpioPoint('relay1', { pin: 26, direction: 'out', active_low: true, initial: 0 }),
    gpioPoint('relay2', { pin: 'P1-38', direction: 'out', active_low: true, initial: 1 }),
    gpioPoint('led', { pin: 22, direction: 'out' }),
  ], { bus: 'pins', poll: 1000 });
  const r = await rig([relays]);
  // initial 0 on an active-low relay = line high from the moment it becomes an output.
  assert.is(r.port.line(26).request.initial, 1);
  assert.is(r.port.line(20).request.initial, 0, 'P1-38 is BCM 20');
  assert.is(r.port.line(22).request.initial, 0, 'no initial: off');
  assert.equal(r.data, [{ id: 'relays', values: { relay1: 0, relay2: 1, led: 0 }, at: 0 }]);
  r.data.length = 0;
  await r.driver.write('relays', [{ name: 'relay1', value: 1 }, { name: 'led', value: true }]);
  assert.is(r.port.line(26).level, 0);
  assert.is(r.port.line(22).level, 1);
  assert.equal(await r.driver.read!('relays', ['relay1', 'relay2', 'led']), { relay1: 1, relay2: 1, led: 1 });
  assert.equal(r.data, [], 'read() does not report to the sink');
  await r.driver.stop();
});

test('write refusals: input point, bad value (nothing written), unknown point and device', async () => {
  const relays = resolved('relays', [gpioPoint('relay1', { pin: 26, direction: 'out', active_low: true })], { bus: 'pins', poll: 1000 });
  const r = await rig([relays, door()]);
  const code = (p: Promise<unknown>): Promise<string> => p.then(() => 'ok', (e: { code: string }) => e.code);
  assert.is(await code(r.driver.write('door', [{ name: 'contact', value: 1 }])), 'POINT_READONLY');
  const before = r.port.line(26).writes.length;
  assert.is(await code(r.driver.write('relays', [{ name: 'relay1', value: 1 }, { name: 'relay1', value: 7 }])), 'INVALID_VALUE');
  assert.is(r.port.line(26).writes.length, before, 'a batch with a bad value writes nothing');
  assert.is(await code(r.driver.write('relays', [{ name: 'nope', value: 1 }])), 'UNKNOWN_POINT');
  assert.is(await code(r.driver.write('ghost', [{ name: 'relay1', value: 1 }])), 'UNKNOWN_DEVICE');
  assert.is(await code(r.driver.read!('ghost', ['relay1'])), 'UNKNOWN_DEVICE');
  await r.driver.stop();
});

test('a line that cannot be claimed fails its device only; the others run', async () => {
  const pir = resolved('pir', [gpioPoint('motion', { pin: 27, direction: 'in', edge: 'both' })], { bus: 'pins', poll: 1000 });
  const r = await rig([door(), pir], { busy: [17] });
  assert.is(r.failures.length, 1);
  assert.match(r.failures[0]!, /^door: cannot claim BCM 17 for point contact: EBUSY/);
  assert.equal(r.data.map((d) => d.id), ['pir']);
  const err = await r.driver.read!('door', ['contact']).catch((e: { code: string }) => e.code);
  assert.is(err, 'DRIVER_ERROR');
  await r.driver.stop();
});

test('stop closes every line, clears every timer and reports nothing after', async () => {
  const r = await rig([door({}, 1000)], { initialLevels: { 17: 1 } });
  r.port.line(17).set(0); // a debounce is pending at stop
  await r.driver.stop();
  assert.ok(r.port.line(17).closed);
  assert.is(r.timers.count, 0);
  const n = r.data.length;
  r.timers.advance(5000);
  assert.is(r.data.length, n);
});

test('no usable chip: every device gets a failure, and start throws why (the bus is not running)', async () => {
  const timers = new FakeTimers();
  const failures: string[] = [];
  const driver = createGpioDriverWith({ id: 'pins', driver: 'gpio' }, [door()], {
    sink: { data: () => {}, failure: (id, e) => failures.push(`${id}: ${e.message}`) },
    clock: new FakeClock(), log: pino({ level: 'silent' }), lastValue: () => null, lastWrite: () => null,
  }, { sysfsRoot: '/nonexistent/sys/class/gpio', modelPath: '/nonexistent/model', timers });
  const err = await driver.start().then(() => null, (e: Error) => e);
  assert.match(err?.message ?? 'start did not throw', /^gpio bus pins unavailable: cannot read \/nonexistent\/sys\/class\/gpio/);
  assert.is(failures.length, 1);
  assert.match(failures[0]!, /door: gpio bus pins unavailable: cannot read \/nonexistent\/sys\/class\/gpio/);
  await driver.stop();
});

test.run();
