/**
 * Issue 12 (first part): a model says what its device tolerates (`limits.max_registers`, from the
 * manufacturer's document) and the read planner obeys it. The default plan of EVERY library Modbus model —
 * at 9600 baud with the bus's default limit of 125 — stays within its documented limit; the SDM630, which
 * Eastron limits to 60 registers per request, was planned as one 76-register read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import { DEFAULT_HEALTH } from '../../src/drivers/modbus/device-health.js';
import { compileDevice } from '../../src/drivers/modbus/device-plan.js';
import { rtuCostModel } from '../../src/protocol/modbus/wire-cost.js';

function plans(): { model: string; limit: number; largest: number; requests: number }[] {
  const base = validateConfig({}, { env: {} });
  const modbusModels = Object.entries(base.models).filter(([, m]) => m.points.some((p) => p.modbus));
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    devices: modbusModels.map(([name], i) => ({ id: `d${i}`, model: name, bus: 'rs485', unit_id: 1 + (i % 247) })),
  }, { env: {}, checkers: [] });
  const bus = config.buses[0] as unknown as { max_registers: number };
  return resolveDevices(config).map((d) => {
    const compiled = compileDevice(d, { cost: rtuCostModel(9600), maxRegisters: bus.max_registers, maxGap: 'auto' }, DEFAULT_HEALTH);
    const requests = compiled.groups.flatMap((g) => g.requests);
    return {
      model: d.config.model,
      limit: d.model.limits?.max_registers ?? 125,
      largest: Math.max(...requests.map((r) => (r.table === 'coil' || r.table === 'discrete' ? 0 : r.count))),
      requests: requests.length,
    };
  });
}

test('every library Modbus model: its default plan stays within the limit its device documents', () => {
  const all = plans();
  assert.ok(all.length >= 10, `${all.length} Modbus models`);
  for (const p of all) assert.ok(p.largest <= p.limit, `${p.model}: a read of ${p.largest} registers, the device takes ${p.limit}`);
});

test('the SDM630 declares Eastron\'s 60-register limit and is read in requests of at most 60', () => {
  const sdm630 = plans().find((p) => p.model === 'eastron-sdm630')!;
  assert.is(sdm630.limit, 60);
  assert.ok(sdm630.largest <= 60 && sdm630.largest > 30, `largest read ${sdm630.largest}`);
});

test('the Deye hybrid is read in requests of at most 20 registers (RS-485/TCP gateways of the USR type need it; its plan had reads of 24 and 23)', () => {
  const deye = plans().find((p) => p.model === 'deye-hybrid-1p')!;
  assert.is(deye.limit, 20);
  assert.ok(deye.largest <= 20, `largest read ${deye.largest}`);
});

test('a device config can narrow the model\'s limit, never widen it', () => {
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    devices: [
      { id: 'narrow', model: 'eastron-sdm630', bus: 'rs485', unit_id: 1, max_registers: 20 },
      { id: 'wide', model: 'eastron-sdm630', bus: 'rs485', unit_id: 2, max_registers: 125 },
    ],
  }, { env: {}, checkers: [] });
  const largest = resolveDevices(config).map((d) => Math.max(...compileDevice(d, { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' }, DEFAULT_HEALTH)
    .groups.flatMap((g) => g.requests).map((r) => r.count)));
  assert.ok(largest[0]! <= 20, `narrowed: ${largest[0]}`);
  assert.ok(largest[1]! <= 60, `not widened: ${largest[1]}`);
});


test('a model\'s max_gap and max_bits bound the plan; a device can narrow max_gap; write options come from the model', () => {
  const pts = [0, 2, 10].map((a) => ({ name: `p${a}`, type: 'float', modbus: { table: 'holding', address: a, data_type: 'float32' } }));
  const coils = Array.from({ length: 20 }, (_, i) => ({ name: `c${i}`, type: 'int', modbus: { table: 'coil', address: i, data_type: 'bool' } }));
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    models: {
      strict: { limits: { max_gap: 0, max_bits: 8, max_write_registers: 2 }, write: { single_register: 'fc16' }, points: [...pts, ...coils] },
      loose: { points: pts },
    },
    devices: [
      { id: 'strict', model: 'strict', bus: 'rs485', unit_id: 1 },
      { id: 'loose', model: 'loose', bus: 'rs485', unit_id: 2 },
      { id: 'narrowed', model: 'loose', bus: 'rs485', unit_id: 3, max_gap: 0 },
    ],
  }, { env: {}, checkers: [], models: {} });
  const [strict, loose, narrowed] = resolveDevices(config).map((d) => compileDevice(d, { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' }, DEFAULT_HEALTH));
  const spans = (d: typeof strict) => d!.groups.flatMap((g) => g.requests).map((r) => `${r.table}:${r.address}+${r.count}`);
  assert.equal(spans(loose), ['holding:0+12'], 'bridging the gap is cheaper at 9600 baud');
  assert.equal(spans(narrowed), ['holding:0+4', 'holding:10+2']);
  assert.equal(spans(strict), ['holding:0+4', 'holding:10+2', 'coil:0+8', 'coil:8+8', 'coil:16+4']);
  assert.equal(strict!.write, { singleAsFc16: true, maxRegisters: 2 });
  assert.equal(loose!.write, { singleAsFc16: false, maxRegisters: 123 });
});

test.run();
