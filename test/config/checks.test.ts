import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfigFile, validateConfig, type ConfigChecker } from '../../src/config/load.js';
import { modbusConfig, problemsOf } from './helpers.js';

const holding = (address: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'p', type: 'int', modbus: { table: 'holding', address, data_type: 'uint16', ...extra },
});

test('reference notation becomes the 0-based protocol address', () => {
  const cases: Array<[string, string, number]> = [
    ['40001', 'holding', 0], ['40010', 'holding', 9], ['400001', 'holding', 0], ['465536', 'holding', 65535],
    ['30001', 'input', 0], ['10001', 'discrete', 0], ['00001', 'coil', 0], ['00017', 'coil', 16],
  ];
  for (const [ref, table, address] of cases) {
    const dataType = table === 'coil' || table === 'discrete' ? 'bool' : 'uint16';
    const config = validateConfig(modbusConfig([{ name: 'p', type: 'int', modbus: { table, address: ref, data_type: dataType } }]), { env: {}, models: {} });
    assert.is(config.models.meter!.points[0]!.modbus!.address, address, ref);
  }
  const plain = validateConfig(modbusConfig([holding(7)]), { env: {}, models: {} });
  assert.is(plain.models.meter!.points[0]!.modbus!.address, 7);
});

test('reference notation: wrong table, out of range, not a reference', () => {
  assert.equal(problemsOf(modbusConfig([{ name: 'p', type: 'int', modbus: { table: 'input', address: '40001', data_type: 'int16' } }])), [
    'models.meter.points[0].modbus.address: reference "40001" is in the holding table but table is "input"',
  ]);
  assert.equal(problemsOf(modbusConfig([holding('40000')])), [
    'models.meter.points[0].modbus.address: reference "40000" is out of range (numbering starts at 40001)',
  ]);
  assert.equal(problemsOf(modbusConfig([holding('465537')])), [
    'models.meter.points[0].modbus.address: reference "465537" is out of range (the highest is 465536)',
  ]);
  assert.equal(problemsOf(modbusConfig([holding('4x0001')])), [
    'models.meter.points[0].modbus.address: must be an integer address, hex text like "0x0156" or reference notation like "40001", "30001", "10001", "00001" (got "4x0001")',
  ]);
  assert.equal(problemsOf(modbusConfig([holding(65535, { data_type: 'float32' })])), [
    'models.meter.points[0].modbus.address: the value would end at address 65536, beyond 65535',
  ]);
});

test('modbus point rules: data_type vs type, bit, length, coils', () => {
  const problems = problemsOf(modbusConfig([
    { name: 'a', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'string', length: 4 } },
    { name: 'b', type: 'string', modbus: { table: 'holding', address: 4, data_type: 'string' } },
    { name: 'c', type: 'int', modbus: { table: 'holding', address: 8, data_type: 'float32', bit: 3 } },
    { name: 'd', type: 'int', modbus: { table: 'coil', address: 0, data_type: 'uint16' } },
    { name: 'e', type: 'int', modbus: { table: 'holding', address: 9, data_type: 'uint16', bit: 15 } },
    { name: 'f', type: 'int', modbus: { table: 'discrete', address: 0, data_type: 'bool' } },
  ]));
  assert.equal(problems, [
    'models.meter.points[0].modbus.data_type: data_type "string" does not fit point type "int" (string goes only with string)',
    'models.meter.points[1].modbus.length: is required for data_type "string"',
    'models.meter.points[2].modbus.bit: bit is only for data_type int16, uint16, int32 or uint32 (got "float32")',
    'models.meter.points[3].modbus.data_type: a coil holds one bit: data_type must be "bool" (got "uint16")',
  ]);
});

test('modbus devices need a unit_id', () => {
  const raw = modbusConfig([holding(0)]);
  delete (raw.devices as Array<Record<string, unknown>>)[0]!.unit_id;
  assert.equal(problemsOf(raw), ['devices[0].unit_id: is required on a modbus-rtu bus']);
});

test('points need exactly one driver block and unique names', () => {
  const problems = problemsOf({
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [
      { name: 'a', type: 'int', sim: { fn: 'counter' } },
      { name: 'a', type: 'int', sim: { fn: 'counter' } },
      { name: 'b', type: 'int' },
      { name: 'c', type: 'int', sim: { fn: 'counter' }, gpio: { pin: 17, direction: 'in' } },
    ] } },
    devices: [{ id: 'd', model: 'm', bus: 'sim' }],
  });
  assert.equal(problems, [
    'models.m.points[1].name: duplicate point name "a" (also points[0])',
    'models.m.points[2]: must have exactly one driver block (modbus, gpio or sim); has none',
    'models.m.points[3]: must have exactly one driver block (modbus, gpio or sim); has gpio and sim',
    'devices[0].model: model "m" does not fit bus "sim" (simulator): point(s) b have no sim block',
  ]);
});

test('unknown bus and model name the known ones; duplicate ids are caught', () => {
  const problems = problemsOf({
    buses: [{ id: 'sim', driver: 'simulator' }, { id: 'sim', driver: 'simulator' }, { id: 'pins', driver: 'gpio' }],
    models: { b: { points: [{ name: 'x', type: 'int', sim: { fn: 'counter' } }] }, a: { points: [{ name: 'x', type: 'int', sim: { fn: 'counter' } }] } },
    devices: [
      { id: 'd1', model: 'foo', bus: 'sim' },
      { id: 'd1', model: 'a', bus: 'nowhere' },
    ],
  });
  assert.equal(problems, [
    'buses[1].id: duplicate bus id "sim" (also buses[0])',
    'devices[1].id: duplicate device id "d1" (also devices[0])',
    'devices[0].model: unknown model "foo" (known: a, b)',
    'devices[1].bus: unknown bus "nowhere" (known: pins, sim)',
  ]);
});

test('a model must fit its device\'s bus driver', () => {
  const problems = problemsOf({
    buses: [{ id: 'pins', driver: 'gpio' }, { id: 'plc', driver: 'modbus-tcp', host: 'plc.local' }],
    models: { relay: { points: [{ name: 'r1', type: 'int', access: 'RW', gpio: { pin: 17, direction: 'out' } }] } },
    devices: [{ id: 'ok', model: 'relay', bus: 'pins' }, { id: 'bad', model: 'relay', bus: 'plc', unit_id: 1 }],
  });
  assert.equal(problems, ['devices[1].model: model "relay" does not fit bus "plc" (modbus-tcp): point(s) r1 have no modbus block']);
});

test('capacity: configured devices and points must fit the shadow', () => {
  const points = [1, 2, 3].map((i) => ({ name: `p${i}`, type: 'int', sim: { fn: 'counter' } }));
  const raw = {
    shadow: { max_devices: 1, max_points: 5 },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points } },
    devices: [{ id: 'a', model: 'm', bus: 'sim' }, { id: 'b', model: 'm', bus: 'sim' }],
  };
  assert.equal(problemsOf(raw), [
    'shadow.max_devices: 2 devices are configured but the capacity is 1',
    'shadow.max_points: 6 points are configured but the capacity is 5',
  ]);
  const fits = validateConfig({ ...raw, shadow: { max_devices: 2, max_points: 6 } }, { env: {}, models: {} });
  assert.is(fits.devices.length, 2);
});

test('sim generators: ranges, defaults, durations', () => {
  const config = validateConfig({
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [
      { name: 's', type: 'float', sim: { fn: 'sine', min: 0, max: 1 } },
      { name: 'c', type: 'int', sim: { fn: 'counter' } },
      { name: 'w', type: 'float', poll: '250ms', sim: { fn: 'random_walk', min: 0, max: 10, step: 0.5 } },
    ] } },
    devices: [{ id: 'd', model: 'm', bus: 'sim', ttl: '30s' }],
  }, { env: {}, models: {} });
  const [s, c, w] = config.models.m!.points;
  assert.equal(s!.sim, { fn: 'sine', min: 0, max: 1, period: 60_000 });
  assert.equal(c!.sim, { fn: 'counter', step: 1 });
  assert.is(w!.poll, 250);
  assert.is(config.devices[0]!.ttl, 30_000);
  assert.equal(problemsOf({
    models: { m: { points: [
      { name: 's', type: 'float', sim: { fn: 'sine', min: 5, max: 1, period: '1m' } },
      { name: 'k', type: 'int', sim: { fn: 'constant' } },
      { name: 'x', type: 'int', sim: { fn: 'noise' } },
    ] } },
  }), [
    'models.m.points[1].sim.value: is required',
    'models.m.points[2].sim.fn: must be one of constant, sine, random_walk, counter (got "noise")',
    'models.m.points[0].sim.max: must be greater than min (5)',
  ]);
});

test('mqtt user names are unique', () => {
  const user = { username: 'ha', password_hash: 'scrypt$x' };
  assert.equal(problemsOf({ mqtt: { users: [user, { ...user, can_write: true }] } }), ['mqtt.users[1].username: duplicate user "ha"']);
});

test('export targets http/file need their blocks', () => {
  assert.equal(problemsOf({ export: { shadow: { enable: true, targets: ['mqtt', 'http', 'file'] } } }), [
    'export.shadow.http: is required when targets include "http"',
    'export.shadow.file: is required when targets include "file"',
  ]);
});

test('library models: validated, named by file, inline wins', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'shadowgate-models-'));
  try {
    const models = path.join(dir, 'models');
    await mkdir(models);
    await writeFile(path.join(models, 'good.json'), JSON.stringify({ manufacturer: 'acme', points: [{ name: 't', type: 'float', modbus: { table: 'input', address: '30002', data_type: 'float32' } }] }));
    await writeFile(path.join(models, 'broken.json'), JSON.stringify({ points: [{ name: 't', type: 'double', modbus: { table: 'input', address: 0, data_type: 'int16' } }] }));
    await writeFile(path.join(models, 'garbage.json'), '{ nope');
    const file = path.join(dir, 'config.json');
    const config = {
      buses: [{ id: 'plc', driver: 'modbus-tcp', host: 'plc' }],
      devices: [{ id: 'm1', model: 'good', bus: 'plc', unit_id: 3 }],
    };
    await writeFile(file, JSON.stringify(config));
    try {
      await loadConfigFile(file, { env: {}, modelsDir: models });
      assert.unreachable('broken library files must be reported');
    } catch (e) {
      assert.instance(e, ConfigError);
      assert.equal((e as ConfigError).problems, [
        `${models}/garbage.json: (root): not valid JSON at line 1, column 3: ${(() => { try { JSON.parse('{ nope'); } catch (err) { return (err as Error).message; } return ''; })()}`,
        `${models}/broken.json: points[0].type: must be one of int, float, string (got "double")`,
      ]);
    }
    await rm(path.join(models, 'garbage.json'));
    // An inline model of the same name replaces the broken file, so its problems no longer count.
    const fixed = { ...config, models: { broken: { points: [{ name: 'x', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'int16' } }] } } };
    await writeFile(file, JSON.stringify(fixed));
    const loaded = await loadConfigFile(file, { env: {}, modelsDir: models });
    assert.is(loaded.models.good!.name, 'good');
    assert.is(loaded.models.good!.manufacturer, 'acme');
    assert.is(loaded.models.good!.points[0]!.modbus!.address, 1);
    assert.is(loaded.models.broken!.points[0]!.name, 'x');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('models passed to validateConfig are named as board/models files', () => {
  assert.equal(problemsOf({}, { models: { sdm: { points: [] } } }), ['board/models/sdm.json: points: must have at least 1 item(s)']);
});

test('driver checkers add their problems; a throwing checker is one problem', () => {
  const pins: ConfigChecker = (config) => config.devices.filter((d) => d.id.startsWith('x')).map((d) => `devices.${d.id}: no x allowed`);
  const broken: ConfigChecker = () => {
    throw new Error('boom');
  };
  const raw = { buses: [{ id: 'sim', driver: 'simulator' }], models: { m: { points: [{ name: 'p', type: 'int', sim: { fn: 'counter' } }] } }, devices: [{ id: 'x1', model: 'm', bus: 'sim' }] };
  assert.equal(problemsOf(raw, { checkers: [pins, broken] }), ['devices.x1: no x allowed', "(root): a driver's config check failed: boom"]);
  assert.is(validateConfig(raw, { env: {}, models: {}, checkers: [] }).devices.length, 1);
});


test('device markers: scale_factor names a point polled with it, coded meanings fit the type, 32-bit bit fields and scaled points are read-only, SunSpec points need the model\'s sunspec', () => {
  const problems = problemsOf(modbusConfig([
    { name: 'a', type: 'float', access: 'RW', scale_factor: 'a_sf', modbus: { table: 'holding', address: 0, data_type: 'uint16' } },
    { name: 'a_sf', type: 'int', poll: '5s', modbus: { table: 'holding', address: 1, data_type: 'int16' } },
    { name: 'b', type: 'float', scale_factor: 'nope', modbus: { table: 'holding', address: 2, data_type: 'uint16' } },
    { name: 'st', type: 'string', values: { 1: 'off', 2: 3 }, modbus: { table: 'holding', address: 3, data_type: 'uint16' } },
    { name: 'ev', type: 'int', access: 'RW', modbus: { table: 'holding', address: 4, data_type: 'uint32', bit: 20 } },
    { name: 'ss', type: 'int', modbus: { table: 'holding', address: 2, data_type: 'uint16', sunspec_model: 103 } },
    { name: 'ok', type: 'string', values: { 1: 'off', 4: 'mppt' }, invalid: [{ raw: '0xFFFF', reason: 'not implemented' }], modbus: { table: 'holding', address: '0x0010', data_type: 'uint16' } },
  ]));
  assert.equal(problems, [
    'models.meter.points[0].scale_factor: "a_sf" must be polled with this point (same poll)',
    'models.meter.points[0].access: a point with a scale_factor is read-only (access "R")',
    'models.meter.points[2].scale_factor: no point named "nope" in this model',
    'models.meter.points[3].values.2: must be text for a point of type "string"',
    'models.meter.points[4].access: a bit field in a 32-bit register is read-only (access "R")',
    'models.meter.points[5].modbus.sunspec_model: needs the model\'s "sunspec" (where to look for the "SunS" marker)',
  ]);
  assert.equal(problemsOf(modbusConfig([{ name: 'x', type: 'float', invalid: [{ raw: '7FFF', reason: 'overflow' }], modbus: { table: 'holding', address: 0, data_type: 'int16' } }])),
    ['models.meter.points[0].invalid[0].raw: must be a number or hex text like "0x7FFFFFFF" (got "7FFF")']);
});

test('write bounds: min ≤ max, numbers only, not beside coded values', () => {
  const reg = (address: number) => ({ table: 'holding', address, data_type: 'uint16' });
  assert.equal(problemsOf(modbusConfig([
    { name: 'a', type: 'float', access: 'RW', min: 10, max: 5, modbus: reg(0) },
    { name: 'b', type: 'string', access: 'RW', max: 5, modbus: { table: 'holding', address: 1, data_type: 'string', length: 2 } },
    { name: 'c', type: 'int', access: 'RW', min: 0, values: { 0: 0, 1: 1 }, modbus: reg(2) },
    { name: 'ok', type: 'int', access: 'RW', min: 0, max: 1, modbus: reg(3) },
  ])), [
    'models.meter.points[0].min: 10 is above "max" 5',
    'models.meter.points[1].min: "min" and "max" bound numbers; a string point has none',
    'models.meter.points[2].min: a coded point\'s writes are its "values" already; drop "min" and "max"',
  ]);
});


test('a guarded line setting is read-only unless the device unlocks it; unlocking a point that is not guarded is refused', async () => {
  const { resolveDevices, validateConfig } = await import('../../src/config/load.js');
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    devices: [
      { id: 'locked', model: 'xy-md02', bus: 'rs485', unit_id: 1 },
      { id: 'unlocked', model: 'xy-md02', bus: 'rs485', unit_id: 2, unlock_writes: ['slave_address'] },
    ],
  }, { env: {}, checkers: [] });
  const [locked, unlocked] = resolveDevices(config);
  assert.is(locked!.points.get('slave_address')!.access, 'R');
  assert.is(unlocked!.points.get('slave_address')!.access, 'RW');
  assert.is(unlocked!.points.get('temperature_correction')!.access, 'RW', 'other points untouched');
  assert.equal(problemsOf({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    devices: [{ id: 'd', model: 'xy-md02', bus: 'rs485', unit_id: 1, unlock_writes: ['temperature'] }],
  }, { models: undefined }), ['devices[0].unlock_writes: "temperature" is not a guarded point of model "xy-md02" (known: slave_address)']);
});

test.run();
