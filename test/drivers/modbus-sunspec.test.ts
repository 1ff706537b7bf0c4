/**
 * SunSpec discovery (issue 12): the "SunS" marker is searched where the model says, the model chain is walked
 * (model 1 of 65 or 66 registers moves everything after it), and each point lands at its block + offset.
 * The register images here are laid out by hand from the SunSpec information model (ID, L, then L registers).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import { DEFAULT_HEALTH } from '../../src/drivers/modbus/device-health.js';
import { compileDevice, decodeResponse } from '../../src/drivers/modbus/device-plan.js';
import { interpretRaw } from '../../src/core/raw-values.js';
import { placeSunspecPoints, walkSunspec } from '../../src/drivers/modbus/sunspec.js';
import { rtuCostModel } from '../../src/protocol/modbus/wire-cost.js';

/** A sparse holding image; reads of missing addresses answer exception 2, like a real inverter. */
function image(base: number, chain: [number, number][]): Map<number, number> {
  const regs = new Map<number, number>([[base, 0x5375], [base + 1, 0x6e53]]);
  let at = base + 2;
  for (const [id, length] of chain) {
    regs.set(at, id);
    regs.set(at + 1, length);
    for (let i = 0; i < length; i++) regs.set(at + 2 + i, 0);
    at += 2 + length;
  }
  regs.set(at, 0xffff);
  regs.set(at + 1, 0);
  return regs;
}

function reader(regs: Map<number, number>, log: number[] = []) {
  return async (address: number, count: number): Promise<number[]> => {
    log.push(address);
    const out: number[] = [];
    for (let i = 0; i < count; i++) {
      const v = regs.get(address + i);
      if (v === undefined) throw new GatewayError('MODBUS_EXCEPTION', 'modbus exception 2 (illegal data address)');
      out.push(v);
    }
    return out;
  };
}

test('walks the chain from the marker: model 1 of 66 registers puts model 103 at 40070', async () => {
  const models = await walkSunspec(reader(image(40000, [[1, 66], [103, 50], [160, 48]])), [40000, 0, 50000]);
  assert.equal([...models], [[1, 40002], [103, 40070], [160, 40122]]);
});

test('a model 1 of 65 registers (Fronius) moves model 101 one register down; the marker is found at the second candidate', async () => {
  const log: number[] = [];
  const models = await walkSunspec(reader(image(0, [[1, 65], [101, 50]]), log), [40000, 0, 50000]);
  assert.equal([...models], [[1, 2], [101, 69]]);
  assert.is(log[0], 40000, 'tried 40000 first (exception 2 there)');
});

test('an end marker 0xFFFF with no length register after it ends the chain (pysunspec2 reads ID and L apart)', async () => {
  const regs = image(40000, [[1, 66], [103, 50]]);
  regs.delete(40122 + 1); // the device has no register after its end marker
  const log: [number, number][] = [];
  const read = reader(regs);
  const models = await walkSunspec(async (a, c) => { log.push([a, c]); return read(a, c); }, [40000]);
  assert.equal([...models], [[1, 40002], [103, 40070]]);
  assert.equal(log.at(-1), [40122, 1], 'the end marker is read alone');
});

test('a chain that runs into a hole after a model ends there instead of failing the whole map', async () => {
  const regs = image(40000, [[1, 66], [103, 50]]);
  regs.delete(40122);
  regs.delete(40123);
  const models = await walkSunspec(reader(regs), [40000]);
  assert.equal([...models], [[1, 40002], [103, 40070]]);
});

test('no marker anywhere: SUNSPEC_NOT_FOUND naming where it looked; silence is the device\'s failure', async () => {
  try {
    await walkSunspec(reader(new Map([[40000, 1], [40001, 2]])), [40000, 50000]);
    assert.unreachable();
  } catch (err) {
    assert.is((err as GatewayError).code, 'SUNSPEC_NOT_FOUND');
    assert.match((err as Error).message, /no SunSpec marker "SunS" at holding 40000, 50000/);
  }
  const timeout = new GatewayError('DRIVER_TIMEOUT', 'timeout');
  try {
    await walkSunspec(async () => { throw timeout; }, [40000]);
    assert.unreachable();
  } catch (err) {
    assert.is(err, timeout);
  }
});

test('points are placed at block + offset, the first model id the device has wins, absent ones are left out; then planned', () => {
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    models: {
      inv: {
        sunspec: { search: [40000] },
        points: [
          { name: 'mn', type: 'string', modbus: { table: 'holding', address: 2, data_type: 'string', length: 16, sunspec_model: 1 } },
          { name: 'a', type: 'float', scale_factor: 'a_sf', modbus: { table: 'holding', address: 2, data_type: 'uint16', sunspec_model: [101, 102, 103] } },
          { name: 'a_sf', type: 'int', modbus: { table: 'holding', address: 6, data_type: 'int16', sunspec_model: [101, 102, 103] } },
          { name: 'soc', type: 'float', modbus: { table: 'holding', address: 3, data_type: 'uint16', sunspec_model: 124 } },
        ],
      },
    },
    devices: [{ id: 'i1', model: 'inv', bus: 'rs485', unit_id: 1 }],
  }, { env: {}, checkers: [], models: {} });
  const device = compileDevice(resolveDevices(config)[0]!, { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' }, DEFAULT_HEALTH);
  assert.equal(device.groups, [], 'nothing is polled before the map is known');
  const missing = placeSunspecPoints(device, new Map([[1, 40002], [103, 40070]]));
  assert.equal(missing, ['soc']);
  assert.equal([...device.points.values()].filter((p) => p.sunspecCheck === undefined).map((p) => [p.name, p.block.address]), [['mn', 40004], ['a', 40072], ['a_sf', 40076]]);
  // Each block's ID register is read with its points: a poll notices when another model sits there now.
  assert.equal(device.groups[0]!.requests.map((r) => [r.address, r.count]), [[40002, 18], [40070, 7]]);
});


test('a flag of a 32-bit event word that is "not implemented" (0xFFFFFFFF) is not available, not a raised flag', () => {
  const config = validateConfig({
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    models: { inv: { points: [{ name: 'ground_fault', type: 'int', invalid: [{ raw: '0xFFFFFFFF', reason: 'not implemented' }],
      modbus: { table: 'holding', address: 0, data_type: 'uint32', bit: 0 } }] } },
    devices: [{ id: 'i1', model: 'inv', bus: 'rs485', unit_id: 1 }],
  }, { env: {}, checkers: [], models: {} });
  const resolved = resolveDevices(config)[0]!;
  const device = compileDevice(resolved, { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' }, DEFAULT_HEALTH);
  const request = device.groups[0]!.requests[0]!;
  const read = (words: number[]) => interpretRaw(resolved.points, decodeResponse(request, words));
  assert.equal(read([0xffff, 0xffff]), { values: {}, unavailable: { ground_fault: 'not implemented' } });
  assert.equal(read([0x0000, 0x0001]), { values: { ground_fault: 1 }, unavailable: {} });
  assert.equal(read([0x8000, 0x0000]), { values: { ground_fault: 0 }, unavailable: {} });
});

test.run();
