/**
 * The persona library beyond the SDM630: the Chint DTSU666 (holding floats in 0.1-unit scale), the Carlo
 * Gavazzi EM24 as Victron reads it (int32 low word first, model code 000Bh, application register A000h
 * written and read back), and the SunSpec three-phase inverter (1 + 103) walked from 40000 by a client
 * that reads each model's ID and length apart, with W and W_SF never torn while the source changes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import type { ModelConfig } from '../../src/config/types.js';
import { Shadow } from '../../src/core/shadow.js';
import { decodeRegisters } from '../../src/protocol/modbus/codec.js';
import { PersonaUnit, powerScaleFactor, type PersonaUnitConfig } from '../../src/runtime/persona/unit.js';
import { FakeClock } from '../helpers/fake-clock.js';

const models = validateConfig({ gateway: { id: 't', data_dir: '/tmp' } }, { env: {} }).models;

const readPdu = (fc: 3 | 4, address: number, count: number): Uint8Array => Uint8Array.of(fc, address >> 8, address & 0xff, count >> 8, count & 0xff);
const writePdu = (address: number, value: number): Uint8Array => Uint8Array.of(6, address >> 8, address & 0xff, value >> 8, value & 0xff);
const words = (pdu: Uint8Array | null): number[] => {
  assert.ok(pdu, 'expected an answer, got silence');
  assert.is(pdu[0]! & 0x80, 0, `exception ${pdu[1]}`);
  return Array.from({ length: pdu[1]! / 2 }, (_, i) => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!);
};
const int16 = (w: number): number => (w >= 0x8000 ? w - 0x10000 : w);
const float32 = (hi: number, lo: number): number => {
  const v = new DataView(new ArrayBuffer(4));
  v.setUint16(0, hi);
  v.setUint16(2, lo);
  return v.getFloat32(0);
};

function setup(model: ModelConfig, extra: Partial<PersonaUnitConfig>, units: Record<string, string> = {}) {
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 8, maxPoints: 64, defaultTtl: 60_000, clock });
  shadow.AddDevice('p1', 'x');
  const unitOf = (device: string, point: string): string | undefined => units[`${device}.${point}`];
  const unit = new PersonaUnit({ unit: 1, model, maxAgeMs: 5000, stale: 'silent', bind: {}, ...extra }, { shadow, clock, unitOf });
  unit.start();
  const at = (fc: 3 | 4, address: number, count: number) => unit.answer(readPdu(fc, address, count)).then(words);
  return { clock, shadow, unit, at };
}

test('DTSU666: FC3 floats at 2000h+ in the meter\'s 0.1 W / 0.1 V / 0.001 A units; unbound registers NaN', async () => {
  const model = models['chint-dtsu666']!;
  const { shadow, at } = setup(model, { bind: { total_power: 'p1.p', voltage_l1: 'p1.u', current_l1: 'p1.i', import_energy: 'p1.e' } });
  shadow.SetDevicePoints('p1', { p: -1234.5, u: 230.7, i: 5.125, e: 4321.5 });
  const pt = await at(3, 0x2012, 2);
  assert.is(float32(pt[0]!, pt[1]!), -12345, 'Pt is served in 0.1 W');
  const u = await at(3, 0x2006, 2);
  assert.ok(Math.abs(float32(u[0]!, u[1]!) - 2307) < 1e-3, 'Ua in 0.1 V');
  const i = await at(3, 0x200c, 2);
  assert.is(float32(i[0]!, i[1]!), 5125, 'Ia in 0.001 A');
  const e = await at(3, 0x101e, 2);
  assert.is(float32(e[0]!, e[1]!), 4321.5, 'ImpEp in kWh');
  const ll = await at(3, 0x2000, 2);
  assert.ok(Number.isNaN(float32(ll[0]!, ll[1]!)), 'unbound Uab: NaN, never 0');
  const p = model.points.find((x) => x.name === 'total_power')!;
  assert.is(decodeRegisters(p.modbus!, pt, 0) as number * p.scale!, -1234.5, 'the model reads back what was bound');
});

test('EM24 as Victron probes it: model code, application A000h written and read back (store), values int32 low word first x10', async () => {
  const model = models['carlo-gavazzi-em24']!;
  const { shadow, unit, at } = setup(model, { bind: { total_power: 'p1.p', serial_number: { value: 'SG00001' } }, write: { application: 'store' } });
  shadow.SetDevicePoints('p1', { p: -1234.5 });
  assert.equal(await at(3, 0x000b, 1), [1648], 'model code EM24DINAV23XE1X');
  assert.equal(await at(3, 0xa000, 1), [7], 'application H from the model\'s persona constants');
  assert.equal([...(await unit.answer(writePdu(0xa000, 5)))!], [6, 0xa0, 0, 0, 5]);
  assert.equal(await at(3, 0xa000, 1), [5], 'stored');
  assert.equal([...(await unit.answer(writePdu(0xa000, 7)))!], [6, 0xa0, 0, 0, 7]);
  assert.equal(await at(3, 0xa000, 1), [7], 'Victron\'s write of 7 reads back as 7');
  assert.equal(await at(3, 0x1002, 1), [0], 'phase config 3P.n (three phases)');
  const w = await at(3, 0x0028, 2);
  assert.equal(w, [(-12345 & 0xffff), 0xffff], '-12345 low word first');
  const sn = await at(3, 0x5000, 7);
  assert.is(String.fromCharCode(...sn.flatMap((x) => [x >> 8, x & 0xff])).replace(/\0+$/, ''), 'SG00001');
  // Without `store` the same write is refused, never silently accepted.
  const strict = setup(model, { bind: { total_power: 'p1.p' } });
  strict.shadow.SetDevicePoints('p1', { p: 1 });
  assert.equal([...(await strict.unit.answer(writePdu(0xa000, 7)))!], [0x86, 0x02]);
});

test('SunSpec inverter persona: 40000 "SunS", model 1, 103, end, walked reading ID and L apart; 0 torn W/W_SF pairs in 10k reads', async () => {
  const model = models['sunspec-inverter-103']!;
  const { shadow, at } = setup(model, { bind: { ac_power: 'p1.w', w_sf: 'p1.sf', energy: 'p1.e' } });
  shadow.SetDevicePoints('p1', { w: 5000, sf: 0, e: 1000 });
  assert.equal(await at(3, 40000, 2), [0x5375, 0x6e53], 'SunS');
  // The walk as pysunspec2 does it: the ID, then the length, each on its own.
  const chain: number[] = [];
  let address = 40002;
  for (let n = 0; n < 5; n++) {
    const [id] = await at(3, address, 1);
    chain.push(id!);
    if (id === 0xffff) break;
    const [length] = await at(3, address + 1, 1);
    address += 2 + length!;
  }
  assert.equal(chain, [1, 103, 0xffff]);
  assert.is(address, 40121, 'end marker right after model 103 (L 50)');
  assert.equal(await at(3, 40122, 1), [0], 'the end marker has its length 0');
  assert.equal(await at(3, 40069, 2), [103, 50]);
  const written = new Set<number>();
  let torn = 0;
  for (let i = 0; i < 10_000; i++) {
    const sf = (i % 4) - 1;
    const w = ((i * 7919) % 30000) * 10 ** sf;
    written.add(Math.round(w * 1000));
    shadow.SetDevicePoints('p1', { w, sf, e: 1000 + i });
    const regs = await at(3, 40083, 2); // W (offset 14) and W_SF (offset 15) of model 103
    if (!written.has(Math.round(int16(regs[0]!) * 10 ** int16(regs[1]!) * 1000)) || int16(regs[1]!) !== sf) torn++;
  }
  assert.is(torn, 0, 'torn W/W_SF pairs');
  const block = await at(3, 40069, 52);
  assert.is(block[2], 0xffff, 'unbound A (uint16): not implemented');
  assert.is(int16(block[6]!), -2, 'A_SF from the persona constants');
});

test('SunSpec meter 203 + 213 in one chain: walked from 40000, 213 serves what 203\'s twin is bound to (float), never torn against W x 10^W_SF', async () => {
  const model = models['sunspec-meter-203-213']!;
  const { shadow, at } = setup(model, { bind: { power: 'p1.w', W_SF: 'p1.sf', voltage_an: 'p1.v', import_energy: 'p1.e' } });
  shadow.SetDevicePoints('p1', { w: -2500, sf: 0, v: 230.5, e: 123456 });
  const chain: number[][] = [];
  let address = 40002;
  for (let n = 0; n < 6; n++) {
    const [id] = await at(3, address, 1);
    const [length] = await at(3, address + 1, 1);
    chain.push([address, id!, length!]);
    if (id === 0xffff) break;
    address += 2 + length!;
  }
  assert.equal(chain, [[40002, 1, 65], [40069, 203, 105], [40176, 213, 124], [40302, 0xffff, 0]]);
  const f = await at(3, 40178, 124);
  const float = (offset: number): number => float32(f[offset]!, f[offset + 1]!);
  assert.is(float(26), -2500, '213 W (offset 28 of the model) from the binding of 203\'s power');
  assert.is(float(10), 230.5, '213 PhVphA');
  assert.is(float(66), 123456, '213 TotWhImp');
  assert.ok(Number.isNaN(float(0)), 'unbound 213 A: NaN (not implemented), never 0');
  assert.ok(Number.isNaN(float(50)), '213 PF is not tied to 203\'s percent: NaN unless bound');
  assert.equal([f[122], f[123]], [0xffff, 0xffff], '213 Evt not implemented');
  // Binding the 213 point itself wins over its twin.
  const own = setup(model, { bind: { power: 'p1.w', float_power: { point: 'p1.w', scale: 2 } } });
  own.shadow.SetDevicePoints('p1', { w: 100 });
  const w = await own.at(3, 40204, 2);
  assert.is(float32(w[0]!, w[1]!), 200);
  // One read over 203's W, W_SF and 213's W (40087..40205): all three from one snapshot while the source changes.
  let torn = 0;
  for (let i = 0; i < 10_000; i++) {
    const sf = (i % 4) - 1;
    shadow.SetDevicePoints('p1', { w: (1000 * (sf + 2) + (i % 500)) * 10 ** sf, sf, v: 230, e: i });
    const r = await at(3, 40087, 119);
    const raw = int16(r[0]!);
    const exp = int16(r[4]!);
    const fw = float32(r[117]!, r[118]!);
    if (Math.floor(raw / 1000) - 2 !== exp || Math.abs(fw - raw * 10 ** exp) > Math.abs(fw) * 1e-6) torn++;
  }
  assert.is(torn, 0, 'torn W/W_SF/float W reads');
});

test('Eastron SDM630/SDM120/SDM230: the serial number at holding FC00h (uint32) served when bound, 0xFFFFFFFF unbound; FC02h: the SDM630\'s meter code 0070h as a WARP charger reads it, the SDM120\'s documented 0020h, none on the SDM230 (0x02)', async () => {
  for (const name of ['eastron-sdm630', 'eastron-sdm120', 'eastron-sdm230']) {
    const model = models[name]!;
    const { at, unit } = setup(model, { bind: { serial_number: { value: 20340789 } } });
    assert.equal(await at(3, 0xfc00, 2), [20340789 >>> 16, 20340789 & 0xffff], `${name}: serial, high word first`);
    if (name === 'eastron-sdm630') assert.equal(await at(3, 0xfc02, 1), [0x0070], `${name}: meter code, unbound (a constant)`);
    else if (name === 'eastron-sdm120') assert.equal(await at(3, 0xfc02, 2), [0x0020, 0xffff], `${name}: meter code 0020h (Eastron SDM120M V2.5), software version unbound`);
    else assert.equal([...(await unit.answer(readPdu(3, 0xfc02, 1)))!], [0x83, 0x02], `${name}: no meter-code register`);
    const unbound = setup(model, {});
    assert.equal(await unbound.at(3, 0xfc00, 2), [0xffff, 0xffff], `${name}: unbound serial is "not available", never 0`);
  }
});

test('a gap among a float meter\'s registers reads NaN, not a made-up 0: the SDM630\'s phase angles (30037..), the DTSU666\'s per-phase import', async () => {
  const sdm = setup(models['eastron-sdm630']!, {});
  const angles = await sdm.at(4, 0x24, 6);
  for (let i = 0; i < 6; i += 2) assert.ok(Number.isNaN(float32(angles[i]!, angles[i + 1]!)), `SDM630 input ${0x24 + i}: ${angles[i]}, ${angles[i + 1]}`);
  const chint = setup(models['chint-dtsu666']!, {});
  const perPhase = await chint.at(3, 0x1020, 6);
  for (let i = 0; i < 6; i += 2) assert.ok(Number.isNaN(float32(perPhase[i]!, perPhase[i + 1]!)), `DTSU666 ${(0x1020 + i).toString(16)}: ${perPhase[i]}, ${perPhase[i + 1]}`);
  // A cluster that is not all floats has no "not available" for a gap: it stays 0 (the EM24's integers).
  const em24 = setup(models['carlo-gavazzi-em24']!, {});
  assert.equal(await em24.at(3, 0x0032, 1), [0]);
});

test('SunSpec 101-103 persona: the temperatures, vendor state and event words the model defines answer not implemented, never 0', async () => {
  for (const name of ['sunspec-inverter-101', 'sunspec-inverter-102', 'sunspec-inverter-103']) {
    const { at } = setup(models[name]!, {});
    assert.equal(await at(3, 40103, 3), [0x8000, 0x8000, 0x8000], `${name}: TmpSnk, TmpTrns, TmpOt`);
    assert.equal(await at(3, 40108, 1), [0xffff], `${name}: StVnd`);
    assert.equal(await at(3, 40113, 8), new Array(8).fill(0xffff), `${name}: EvtVnd1-4`);
  }
});

test('SDM630 persona: every register volkszaehler/mbmd\'s SDM reader polls (FC04, 2 registers each) answers, none 0x02 (mbmd retries a failed one first on every cycle)', async () => {
  // meters/rs485/sdm.go: its Opcodes, all read with ReadInputReg and ReadLen 2.
  const mbmd = [0x00, 0x02, 0x04, 0x06, 0x08, 0x0a, 0x0c, 0x0e, 0x10, 0x34, 0x38, 0x3c, 0x54, 0x15a, 0x15c, 0x15e, 0x48, 0x160, 0x162, 0x164,
    0x4a, 0x166, 0x168, 0x16a, 0x156, 0x1e, 0x20, 0x22, 0x3e, 0xea, 0xec, 0xee, 0xf8, 0x46];
  const { unit } = setup(models['eastron-sdm630']!, {});
  const refused = [];
  for (const address of mbmd) {
    const answer = [...(await unit.answer(readPdu(4, address, 2)))!];
    if (answer[0] !== 4) refused.push(`0x${address.toString(16)}: ${answer.join(',')}`);
  }
  assert.equal(refused, []);
});

test('units converted by the unit table: a meter\'s PF 0.95 (a fraction) is SunSpec\'s 95 %; a source in kW is served in W', async () => {
  for (const name of ['sunspec-meter-203', 'sunspec-meter-203-213', 'sunspec-inverter-103']) {
    const model = models[name]!;
    const pf = model.points.find((p) => p.name === 'power_factor')!;
    const sf = model.points.find((p) => p.name === pf.scale_factor)!;
    const power = model.points.find((p) => p.name === (name.startsWith('sunspec-meter') ? 'power' : 'ac_power'))!;
    const { shadow, at } = setup(model, { bind: { power_factor: 'p1.pf', [power.name]: 'p1.kw' } }, { 'p1.kw': 'kW' });
    shadow.SetDevicePoints('p1', { pf: 0.95, kw: 1.5 });
    const exp = int16((await at(3, sf.modbus!.address, 1))[0]!);
    const raw = int16((await at(3, pf.modbus!.address, 1))[0]!);
    assert.ok(Math.abs(raw * 10 ** exp - 95) < 1e-9, `${name}: PF ${raw} x 10^${exp}, not 95 %`);
    const w = model.points.find((p) => p.name === power.scale_factor)!;
    const wRaw = int16((await at(3, power.modbus!.address, 1))[0]!) * 10 ** int16((await at(3, w.modbus!.address, 1))[0]!);
    assert.is(wRaw, 1500, `${name}: 1.5 kW served as 1500 W`);
    // A binding with its own scale is the whole conversion (configs written with "scale": 1000 keep working).
    const own = setup(model, { bind: { [power.name]: { point: 'p1.kw', scale: 1000 } } }, { 'p1.kw': 'kW' });
    own.shadow.SetDevicePoints('p1', { kw: 1.5 });
    assert.is(int16((await own.at(3, power.modbus!.address, 1))[0]!) * 10 ** int16((await own.at(3, w.modbus!.address, 1))[0]!), 1500, `${name}: scale 1000, not twice`);
  }
});

test('SunSpec power above 32.7 kW: with rated_power the power scale factors fit the site (50 kW reads 50,000 W); without, W is not implemented', async () => {
  assert.equal([20_000, 32_767, 50_000, 400_000].map(powerScaleFactor), [0, 0, 1, 2]);
  for (const [name, power, sf] of [['sunspec-meter-203', 'power', 'W_SF'], ['sunspec-meter-203-213', 'power', 'W_SF'], ['sunspec-inverter-103', 'ac_power', 'w_sf']] as const) {
    const model = models[name]!;
    const at = (n: string) => model.points.find((p) => p.name === n)!.modbus!.address;
    const site = setup(model, { bind: { [power]: 'p1.w' }, ratedPower: 60_000 });
    site.shadow.SetDevicePoints('p1', { w: 50_000 });
    const raw = int16((await site.at(3, at(power), 1))[0]!);
    const exp = int16((await site.at(3, at(sf), 1))[0]!);
    assert.is(raw * 10 ** exp, 50_000, `${name}: ${raw} x 10^${exp}`);
    const plain = setup(model, { bind: { [power]: 'p1.w' } });
    plain.shadow.SetDevicePoints('p1', { w: 50_000 });
    assert.equal(await plain.at(3, at(power), 1), [0x8000], `${name}: without rated_power 50 kW does not fit W_SF 0`);
  }
});

test('SunSpec personas: DA (common model, 40068) is the unit id the persona answers as; a binding still wins', async () => {
  for (const name of ['sunspec-meter-203', 'sunspec-inverter-103']) {
    const model = models[name]!;
    const da = model.points.find((p) => p.name === 'device_address')!.modbus!.address;
    const one = new PersonaUnit({ unit: 126, model, maxAgeMs: 5000, stale: 'silent', bind: {} }, { shadow: new Shadow({ maxDevices: 1, maxPoints: 1, defaultTtl: 1000, clock: new FakeClock() }), clock: new FakeClock() });
    assert.equal(words(await one.answer(readPdu(3, da, 1))), [126], `${name}: DA`);
    const bound = setup(model, { bind: { device_address: { value: 7 } } });
    assert.equal(await bound.at(3, da, 1), [7]);
  }
});

test('SDM630 system type at holding 40011 (000Ah): 3.0 (3P4W) unbound, as a WARP charger reads it every cycle; bound, the site\'s', async () => {
  const model = models['eastron-sdm630']!;
  const { at } = setup(model, {});
  const three = await at(3, 0x000a, 2);
  assert.is(float32(three[0]!, three[1]!), 3);
  const single = setup(model, { bind: { system_type: { value: 1 } } });
  const one = await single.at(3, 0x000a, 2);
  assert.is(float32(one[0]!, one[1]!), 1);
});

test('a persona unit counts its requests as the door counts its units: hits, writes, exceptions by code, silences', async () => {
  const model = models['carlo-gavazzi-em24']!;
  const { clock, shadow, unit, at } = setup(model, { bind: { total_power: 'p1.p' }, write: { application: 'store' } });
  assert.is(await unit.answer(readPdu(3, 0x0028, 2)), null, 'no sample yet: silent');
  shadow.SetDevicePoints('p1', { p: 1 });
  await at(3, 0x0028, 2);
  await at(3, 0x000b, 1);
  await unit.answer(writePdu(0xa000, 7));
  await unit.answer(readPdu(3, 0x7000, 1));
  await unit.answer(writePdu(0x0028, 1));
  clock.advance(6000);
  await unit.answer(readPdu(3, 0x0028, 2));
  const { latency: _latency, ...counts } = unit.counts; // a persona answers from its snapshot: its latency is not measured
  assert.equal(counts, { requests: 7, hits: 2, misses: 0, writes: 1, exceptions: 2, codes: { 2: 2 }, silent: 2 });
});

test.run();
