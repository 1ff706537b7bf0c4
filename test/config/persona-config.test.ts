/** Persona units in the config: defaults (max_age 5 s, silent), and the cross-checks against the model library and the devices. */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, validateConfig } from '../../src/config/load.js';

const base = {
  gateway: { id: 'x', data_dir: '/tmp' },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: { s: { points: [{ name: 'p', type: 'float', access: 'RW', sim: { fn: 'constant', value: 1 } }] } },
  devices: [{ id: 'p1', model: 's', bus: 'sim' }],
};
const withUnit = (unit: Record<string, unknown>) => ({ ...base, servers: [{ id: 't', transport: 'tcp', port: 0, units: [unit] }] });
const problems = (unit: Record<string, unknown>): string[] => {
  try {
    validateConfig(withUnit(unit), { env: {} });
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
};

test('a persona unit gets max_age 5 s (in ms) and the silent stale policy; a device unit keeps the server max_age', () => {
  const cfg = validateConfig({ ...base, servers: [{ id: 't', transport: 'tcp', port: 0, units: [
    { unit: 1, persona: 'eastron-sdm630', bind: { total_power: 'p1.p' } }, { unit: 2, device: 'p1' }] }] }, { env: {} });
  const [persona, device] = cfg.servers[0]!.units;
  assert.is(persona!.max_age, 5000);
  assert.is(persona!.stale, 'silent');
  assert.is(device!.max_age, undefined);
});

test('cross-checks: the persona model exists, bound points are its register points, sources name known devices', () => {
  assert.equal(problems({ unit: 1, persona: 'nope' }), ['servers[0].units[0].persona: unknown model "nope"']);
  assert.equal(problems({ unit: 1, persona: 'eastron-sdm630', bind: { nothing: 'p1.p', total_power: { sum: ['p1.p', 'zz.p'] } } }), [
    'servers[0].units[0].bind.nothing: model "eastron-sdm630" has no register point "nothing"',
    'servers[0].units[0].bind.total_power: unknown device "zz" in "zz.p" (known: p1)',
  ]);
  assert.equal(problems({ unit: 1, persona: 'sunspec-meter-203', bind: { power: { sum: ['p1.p'] } }, write: { power: 'forward' } }),
    ['servers[0].units[0].write.power: "forward" needs the point bound to one source point']);
  assert.equal(problems({ unit: 1, persona: 'eastron-sdm630', write: { total_power: 'store' } }),
    ['servers[0].units[0].write.total_power: an input register cannot be written']);
  assert.ok(problems({ unit: 1, persona: 'eastron-sdm630', bind: { total_power: 'nodot' } }).some((p) => p.includes('must match')));
  assert.ok(problems({ unit: 1, persona: 'eastron-sdm630', stale: 'maybe' }).length > 0);
  assert.equal(problems({ unit: 1, persona: 'eastron-sdm630', bind: { total_power: { point: 'p1.p', negate: true }, voltage_l1: { value: 230 } } }), []);
});

test('an RTU server serves a device\'s own registers beside personas (one unit table for both transports)', () => {
  const config = validateConfig({ ...base, servers: [{ id: 'r', transport: 'rtu', port: '/dev/ttyUSB1', baud_rate: 9600, units: [{ unit: 1, device: 'p1', writes: true }, { unit: 2, persona: 'eastron-sdm630' }] }] }, { env: {} });
  assert.equal(config.servers[0]!.units.map((u) => u.device ?? u.persona), ['p1', 'eastron-sdm630']);
});

test('the server examples in docs/personas.md are valid configs', () => {
  const text = readFileSync('docs/personas.md', 'utf8');
  const blocks = [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes('"transport"'));
  assert.ok(blocks.length >= 3, `${blocks.length} server examples`);
  for (const block of blocks) {
    // A whole config (the GPIO pulse counter setup brings its own bus, model and device) is validated as it is.
    const whole = block.includes('"gateway"') ? { ...JSON.parse(block), gateway: { id: 'x', data_dir: '/tmp' } } : undefined;
    const parsed = whole ?? JSON.parse(block.trim().startsWith('"servers"') ? `{${block}}` : `{ "servers": [${block}] }`) as { servers: unknown[] };
    const raw = whole ?? {
      gateway: { id: 'x', data_dir: '/tmp' },
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
      devices: [
        { id: 'grid', model: 'eastron-sdm630', bus: 'rs485', unit_id: 1 },
        { id: 'inverter', model: 'sunspec-inverter', bus: 'rs485', unit_id: 3 },
      ],
      servers: parsed.servers,
    };
    try {
      validateConfig(raw, { env: {} });
    } catch (e) {
      assert.unreachable(`${block}\n${e instanceof ConfigError ? e.problems.join('\n') : String(e)}`);
    }
  }
});

test('a model\'s persona constants and same_as pairs name its own points', () => {
  const point = (name: string) => ({ name, type: 'float', access: 'R', modbus: { table: 'holding', address: name === 'w' ? 0 : 2, data_type: 'float32' } });
  const model = { points: [point('w'), point('w_float')], persona: { constants: { wx: 1 }, same_as: { w_float: 'w', nope: 'w', w: 'w2' } } };
  let found: string[] = [];
  try {
    validateConfig({ gateway: { id: 'x', data_dir: '/tmp' }, models: { m: model } }, { env: {}, models: {} });
  } catch (e) {
    if (e instanceof ConfigError) found = e.problems;
    else throw e;
  }
  assert.equal(found.filter((p) => p.includes('persona')).sort(), [
    'models.m.persona.constants.wx: no point named "wx" in this model',
    'models.m.persona.same_as.nope: no point named "nope" in this model',
    'models.m.persona.same_as.w: no point named "w2" in this model',
  ]);
});

test('a persona leaving a register a known consumer reads without a value, in a format with none (the EM24\'s integers), is refused: one problem per register, who misreads it and as what', () => {
  const found = problems({ unit: 1, persona: 'carlo-gavazzi-em24', bind: { total_power: 'p1.p' } });
  assert.ok(found.includes('servers[0].units[0] (persona carlo-gavazzi-em24, unit 1): voltage_l1 is neither bound nor given a constant: Victron GX (dbus-modbus-client) reads it (as -214748364.8 V unbound)'), found.join('\n'));
  assert.ok(found.some((p) => p.includes('frequency is neither bound') && p.includes('as 6553.5 Hz unbound')));
  assert.ok(found.some((p) => p.includes('switch_position is neither bound') && p.includes('as code 65535')));
  assert.not.ok(found.some((p) => /: (total_power|model_id|phase_config|application|serial_number) is/.test(p)), 'bound, a model constant, or text (empty) is fine');
  assert.is(found.length, 18, found.join('\n'));
  // Everything the GX reads bound (or a constant): loads.
  const all = Object.fromEntries(['voltage_l1', 'voltage_l2', 'voltage_l3', 'current_l1', 'current_l2', 'current_l3', 'power_l1', 'power_l2', 'power_l3',
    'total_power', 'frequency', 'import_energy', 'import_energy_l1', 'import_energy_l2', 'import_energy_l3', 'export_energy'].map((n) => [n, 'p1.p']));
  assert.equal(problems({ unit: 1, persona: 'carlo-gavazzi-em24',
    bind: { ...all, hardware_version: { value: 0 }, firmware_version: { value: 0 }, switch_position: { value: 'Locked' } } }), []);
  // Formats with a not-implemented value keep answering it: NaN floats (DTSU666, Eastron), SunSpec's sentinels.
  for (const persona of ['chint-dtsu666', 'eastron-sdm630', 'eastron-sdm120', 'sunspec-meter-203', 'sunspec-meter-204-214']) assert.equal(problems({ unit: 1, persona }), [], persona);
});

test('a model\'s persona consumers and also_at name its own points', () => {
  const point = (name: string) => ({ name, type: 'float', access: 'R', modbus: { table: 'holding', address: 0, data_type: 'float32' } });
  const model = { points: [point('w')], persona: { also_at: { x: 4 }, consumers: [{ name: 'C', reads: ['w', 'y'] }] } };
  let found: string[] = [];
  try {
    validateConfig({ gateway: { id: 'x', data_dir: '/tmp' }, models: { m: model } }, { env: {}, models: {} });
  } catch (e) {
    if (e instanceof ConfigError) found = e.problems;
    else throw e;
  }
  assert.equal(found.filter((p) => p.includes('persona')).sort(), [
    'models.m.persona.also_at.x: no point named "x" in this model',
    'models.m.persona.consumers[0].reads: no point named "y" in this model',
  ]);
});

test.run();
