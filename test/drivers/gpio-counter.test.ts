/**
 * The gpio pulse counter (an S0 energy meter, a water meter's reed contact) through an injected fake
 * GpioPort and hand-moved timers: edges → total and energy, the debounce as minimum pulse width, the
 * continuation from the persisted total, the rate and its decay, the config check's refusals.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import type { Clock } from '../../src/core/clock.js';
import type { PointConfig } from '../../src/config/types.js';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { checkGpioConfig, COUNTER_SAMPLE_MS, createGpioDriverWith, gpioConfigChecker } from '../../src/drivers/gpio.js';
import type { Driver, RawValue } from '../../src/drivers/types.js';
import type { Value } from '../../src/core/types.js';
import { onOffStates } from '../../src/config/on-off.js';
import { haPointInfo } from '../../src/runtime/ha-info.js';
import { generateMap } from '../../src/runtime/door/generated-unit.js';
import { resolved } from '../helpers/devices.js';
import { FakePort, FakeTimers, fakeMapping } from './gpio-fakes.js';

const PIN = 17;
/** 1000 imp/kWh: one pulse = 1 Wh; one pulse every 500 ms is 7.2 kW. */
const meterPoints = (counter: Record<string, unknown> = {}, gpio: Record<string, unknown> = {}, energy: Partial<PointConfig> = {}): Partial<PointConfig>[] => [
  { name: 'energy', type: 'float', unit: 'kWh', ...energy,
    gpio: { pin: PIN, direction: 'in', edge: 'rising', debounce: 10, counter: { pulses_per_unit: 1000, rate_per: 'h', rate_timeout: 10_000, ...counter }, ...gpio } as PointConfig['gpio'] },
  { name: 'power', type: 'float', unit: 'W', scale: 1000, gpio: { rate_of: 'energy' } },
];

interface Rig {
  driver: Driver;
  port: FakePort;
  timers: FakeTimers;
  data: Record<string, RawValue>[];
  warnings: string[];
  /** The last reported value of each point. */
  last(): Record<string, RawValue>;
}

async function rig(opts: { lastValue?: Value | null; noInterrupts?: boolean; points?: Partial<PointConfig>[]; poll?: number } = {}): Promise<Rig> {
  const port = new FakePort({ noInterrupts: opts.noInterrupts });
  const timers = new FakeTimers();
  const clock: Clock = { now: () => Date.UTC(2026, 0, 1) + timers.now, mono: () => timers.now };
  const data: Record<string, RawValue>[] = [];
  const warnings: string[] = [];
  const device = resolved('meter', opts.points ?? meterPoints(), { bus: 'pins', poll: opts.poll ?? 1000 });
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
  const driver = createGpioDriverWith({ id: 'pins', driver: 'gpio' }, [device], {
    sink: { data: (_id, values) => data.push(values), failure: (_id, e) => warnings.push(e.message) },
    clock, log,
    lastValue: (id, point) => (id === 'meter' && point === 'energy' ? opts.lastValue ?? null : null),
    lastWrite: () => null,
  }, { mapping: fakeMapping, openPort: async () => port, timers, modelPath: '/nonexistent/device-tree-model' });
  await driver.start();
  return { driver, port, timers, data, warnings, last: () => Object.assign({}, ...data) };
}

/** `n` pulses: high for `widthMs`, then low for the rest of `periodMs`. */
function pulses(r: Rig, n: number, periodMs = 500, widthMs = 40): void {
  for (let i = 0; i < n; i++) {
    r.port.line(PIN).set(1);
    r.timers.advance(widthMs);
    r.port.line(PIN).set(0);
    r.timers.advance(periodMs - widthMs);
  }
}

const close = (actual: RawValue | undefined, expected: number, what: string): void =>
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

test('rising edges are counted: the total is pulses / pulses_per_unit, the rate comes from the pulse interval', async () => {
  const r = await rig();
  assert.equal(r.data[0], { energy: 0 }, 'a new counter starts at 0 and reports no rate before it knows one');
  pulses(r, 5);
  // 1 Wh every 500 ms = 7.2 kW (raw, per hour of kWh); the point's scale 1000 makes it W in the shadow.
  assert.equal(await r.driver.read!('meter', ['energy', 'power']), { energy: 0.005, power: 7.2 });
  r.timers.advance(1000 - (r.timers.now % 1000));
  close(r.last().energy, 0.005, 'energy after 5 pulses (kWh), reported at the poll');
  assert.ok(typeof r.last().power === 'number', 'the rate is reported with the total');
  assert.equal(r.warnings, []);
  await r.driver.stop();
});

test('falling edges with active_low: the line idles high (the S0 transistor off) and a pulse pulls it low', async () => {
  const r = await rig({ points: meterPoints({}, { edge: 'rising', active_low: true }) });
  // Physical: the line idles high; each pulse pulls it low for 40 ms = a logical 0→1.
  r.port.line(PIN).set(1);
  r.timers.advance(100);
  for (let i = 0; i < 3; i++) {
    r.port.line(PIN).set(0);
    r.timers.advance(40);
    r.port.line(PIN).set(1);
    r.timers.advance(460);
  }
  r.timers.advance(1000);
  close(r.last().energy, 0.003, 'three pulses');
  await r.driver.stop();
});

test('the debounce drops contact bounce and pulses shorter than it', async () => {
  const r = await rig();
  // A reed contact closing with 5 ms of bounce, then holding: one pulse.
  for (const level of [1, 0, 1, 0, 1] as const) {
    r.port.line(PIN).set(level);
    r.timers.advance(1);
  }
  r.timers.advance(60);
  r.port.line(PIN).set(0);
  r.timers.advance(200);
  // A 4 ms spike (interference on a long cable) under the 10 ms debounce: not a pulse.
  r.port.line(PIN).set(1);
  r.timers.advance(4);
  r.port.line(PIN).set(0);
  r.timers.advance(1000);
  close(r.last().energy, 0.001, 'one pulse out of the bounce, none from the spike');
  await r.driver.stop();
});

test('a restart continues from the persisted total (scale and offset inverted), not from 0', async () => {
  // The shadow holds raw × scale + offset: 112.5 with offset 100 (the meter's reading when counting began).
  const r = await rig({ lastValue: 112.5, points: meterPoints({}, {}, { offset: 100 }) });
  assert.equal(r.data[0], { energy: 12.5 }, 'the first report is the persisted total, raw');
  pulses(r, 3);
  r.timers.advance(1000);
  close(r.last().energy, 12.503, 'three more Wh');
  await r.driver.stop();
});

test('the rate falls when pulses stop: bounded by one pulse in the time since the last, 0 after rate_timeout', async () => {
  const r = await rig({ poll: 250 });
  const power = async (): Promise<RawValue | undefined> => (await r.driver.read!('meter', ['power'])).power;
  pulses(r, 3, 500);
  // The last pulse settled at 1010 ms (rising at 1000 + 10 ms debounce); now 1500 ms.
  close(await power(), 7.2, 'steady');
  r.timers.advance(1010 + 2000 - r.timers.now);
  close(await power(), 1.8, 'two seconds after the last pulse: at most 1 Wh in 2 s');
  r.timers.advance(1010 + 9_000 - r.timers.now);
  close(await power(), 0.4, 'nine seconds after');
  assert.ok((r.last().power as number) < 0.41 && (r.last().power as number) > 0.39, `the polls report it too: ${r.last().power}`);
  r.timers.advance(1010 + 10_000 - r.timers.now);
  assert.is(await power(), 0, 'after rate_timeout (10 s) without a pulse');
  r.timers.advance(250);
  assert.is(r.last().power, 0, 'and the polls say 0');
  pulses(r, 2, 400);
  close(await power(), 9, 'back at the first interval: 1 Wh in 400 ms');
  await r.driver.stop();
});

test('no rate is made up: none before the second pulse, 0 only after a whole rate_timeout without one', async () => {
  const r = await rig();
  pulses(r, 1);
  r.timers.advance(3000);
  assert.not.ok('power' in r.last(), JSON.stringify(r.data));
  // A read leaves it out too, without failing (a failed read would count against the device).
  assert.equal(await r.driver.read!('meter', ['energy', 'power']), { energy: 0.001 });
  const quiet = await rig();
  quiet.timers.advance(10_000);
  assert.is(quiet.last().power, 0);
  await r.driver.stop();
  await quiet.driver.stop();
});

test('without edge interrupts a counter is sampled every COUNTER_SAMPLE_MS: 40 ms S0 pulses are all counted', async () => {
  const r = await rig({ noInterrupts: true });
  assert.is(COUNTER_SAMPLE_MS, 10);
  pulses(r, 20, 200, 40);
  r.timers.advance(1000);
  close(r.last().energy, 0.02, '20 pulses');
  assert.ok(r.warnings.some((w) => w.includes('polling it every 10ms')), JSON.stringify(r.warnings));
  assert.is(r.driver.stats!().polled_fallback, 1);
  await r.driver.stop();
});

test('a clean stop reports the pulses since the last poll (the shadow saved at stop holds them)', async () => {
  const r = await rig();
  pulses(r, 2, 200);
  assert.not.ok(r.data.some((d) => d.energy === 0.002), 'no poll yet');
  await r.driver.stop();
  assert.equal(r.data.at(-1), { energy: 0.002 });
});

test('the total of an RW counter is set by a write (the meter\'s display) and counts on from it; the rate never takes one', async () => {
  const r = await rig({ points: meterPoints({}, {}, { access: 'RW' }) });
  await r.driver.write('meter', [{ name: 'energy', value: 1234.5 }]);
  assert.equal(await r.driver.read!('meter', ['energy']), { energy: 1234.5 });
  pulses(r, 2);
  close((await r.driver.read!('meter', ['energy'])).energy, 1234.502, 'two pulses on');
  for (const [value, code] of [[-1, 'INVALID_VALUE'], [Number.NaN, 'INVALID_VALUE']] as const) {
    const err = await r.driver.write('meter', [{ name: 'energy', value }]).then(() => undefined, (e) => e);
    assert.is(err?.code, code, String(value));
  }
  const rate = await r.driver.write('meter', [{ name: 'power', value: 1 }]).then(() => undefined, (e) => e);
  assert.is(rate?.code, 'POINT_READONLY');
  close((await r.driver.read!('meter', ['energy'])).energy, 1234.502, 'refused writes changed nothing');
  await r.driver.stop();
});

test('an R counter refuses writes', async () => {
  const r = await rig();
  for (const name of ['energy', 'power']) {
    const err = await r.driver.write('meter', [{ name, value: 1 }]).then(() => undefined, (e) => e);
    assert.is(err?.code, 'POINT_READONLY', name);
  }
  await r.driver.stop();
});

test('a counter and its rate are numbers, not on/off lines: console switch, Home Assistant, generated Modbus unit', () => {
  const device = resolved('meter', [...meterPoints(), { name: 'contact', type: 'int', gpio: { pin: 5, direction: 'in' } }], { bus: 'pins' });
  const [energy, power, contact] = device.model.points;
  assert.is(onOffStates(energy!), undefined);
  assert.is(onOffStates(power!), undefined);
  assert.equal(onOffStates(contact!), [0, 1], 'a plain line still is one');
  assert.equal(haPointInfo(device).map((p) => [p.name, p.binary]), [['energy', false], ['power', false], ['contact', true]]);
  assert.equal(generateMap(device.model).map((e) => [e.point, e.table, e.kind]),
    [['energy', 'input', 'float32'], ['power', 'input', 'float32'], ['contact', 'discrete', 'bit']]);
});

test('bad counter config is refused with a message naming the point and what to do', () => {
  const check = (points: Partial<PointConfig>[]): string[] => checkGpioConfig([resolved('m', points, { bus: 'pins' })]);
  const [energy, power] = meterPoints();
  const withGpio = (p: Partial<PointConfig>, gpio: Record<string, unknown>, extra: Partial<PointConfig> = {}): Partial<PointConfig> =>
    ({ ...p, ...extra, gpio: { ...p.gpio, ...gpio } as PointConfig['gpio'] });
  assert.equal(check([energy!, power!]), []);
  assert.equal(check([withGpio(energy!, { edge: 'none' })]),
    ['devices.m.points.energy.gpio.edge: a counter counts edges: set edge to "rising", "falling" or "both"']);
  assert.equal(check([withGpio(energy!, { direction: 'out', edge: 'none' })]).filter((p) => p.includes('gpio.counter')),
    ['devices.m.points.energy.gpio.counter: a counter counts pulses on an input: use direction "in"']);
  assert.equal(check([withGpio(energy!, {}, { type: 'int' })]),
    ['devices.m.points.energy.type: a counter with pulses_per_unit 1000 has fractional totals: use type "float"']);
  assert.equal(check([withGpio(energy!, {}, { decimals: 2 })]),
    ['devices.m.points.energy.decimals: a counter total is not rounded (the persisted total must keep every pulse)']);
  assert.equal(check([energy!, withGpio(power!, { rate_of: 'energie' })]),
    ['devices.m.points.power.gpio.rate_of: "energie" is not a counter point of this model (a point with a gpio.counter block)']);
  assert.equal(check([{ name: 'level', type: 'int', gpio: { pin: 5, direction: 'in' } }, withGpio(power!, { rate_of: 'level' })]),
    ['devices.m.points.power.gpio.rate_of: "level" is not a counter point of this model (a point with a gpio.counter block)']);
  assert.equal(check([energy!, withGpio(power!, { pin: 5, direction: 'in' })]),
    ['devices.m.points.power.gpio.pin: a rate_of point has no line of its own: remove pin, direction (they belong to the counter point "energy")']);
});

test('the schema refuses a counter without a sane pulses_per_unit, unknown keys, and a line point without a pin', () => {
  const config = (points: unknown[]): unknown => ({
    gateway: { id: 'gw', data_dir: '/tmp/unused' }, buses: [{ id: 'pins', driver: 'gpio' }],
    models: { s0: { points } }, devices: [{ id: 'meter', model: 's0', bus: 'pins' }],
  });
  const problems = (points: unknown[]): string[] => {
    try {
      validateConfig(config(points), { env: {}, checkers: [(c) => gpioConfigChecker(c)] });
      return [];
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      return e.problems;
    }
  };
  const counter = (c: unknown): unknown => ({ name: 'energy', type: 'float', access: 'R', gpio: { pin: 17, direction: 'in', edge: 'rising', counter: c } });
  assert.equal(problems([counter({ pulses_per_unit: 1000 }), { name: 'power', type: 'float', access: 'R', gpio: { rate_of: 'energy' } }]), []);
  assert.match(problems([counter({ pulses_per_unit: 0 })]).join('\n'), /models\.s0\.points\[0\]\.gpio\.counter\.pulses_per_unit: must be > 0/);
  assert.match(problems([counter({ pulses_per_kwh: 1000 })]).join('\n'), /gpio\.counter: must not have property "pulses_per_kwh"/);
  assert.match(problems([counter({ rate_timeout: 'soon' })]).join('\n'), /gpio\.counter\.rate_timeout: must be a duration/);
  assert.match(problems([{ name: 'x', type: 'int', access: 'R', gpio: { direction: 'in' } }]).join('\n'), /models\.s0\.points\[0\]\.gpio\.pin: is required/);
  // Defaults come from the schema: 1 pulse per unit, per hour, 5 minutes.
  const ok = validateConfig(config([counter({})]), { env: {} });
  assert.equal(ok.models.s0!.points[0]!.gpio!.counter, { pulses_per_unit: 1, rate_per: 'h', rate_timeout: 300_000 });
});

test.run();
