/**
 * What a persona answers beyond its model's FC03/FC04 tables: the EM24 and the DTSU666 answer FC04 from the
 * same registers as FC03 (as the real meters do), a model saying FC04 is not served answers 0x01; the
 * DTSU666's disputed energy addresses both answer, alike; Solax's meter type; and values served unrounded
 * (the shadow shows 950.3 W, the persona serves the 950.25 W the device gave). Each value is decoded the way
 * the consumer's own source decodes it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import type { ModelConfig } from '../../src/config/types.js';
import { Shadow } from '../../src/core/shadow.js';
import { createShadowSink } from '../../src/io/sink.js';
import { PersonaUnit, type PersonaUnitConfig } from '../../src/runtime/persona/unit.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { silentLogger } from '../../src/util/logger.js';

const models = validateConfig({ gateway: { id: 't', data_dir: '/tmp' } }, { env: {} }).models;

const readPdu = (fc: number, address: number, count: number): Uint8Array => Uint8Array.of(fc, address >> 8, address & 0xff, count >> 8, count & 0xff);
const words = (pdu: Uint8Array | null): number[] => {
  assert.ok(pdu, 'expected an answer, got silence');
  assert.is(pdu[0]! & 0x80, 0, `exception ${pdu[1]}`);
  return Array.from({ length: pdu[1]! / 2 }, (_, i) => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!);
};
/** victronenergy/dbus-modbus-client register.py Reg_s32l: struct.unpack('<i', struct.pack('<2H', *regs)) / scale. */
const victronS32l = (regs: number[], scale: number): number => (((regs[1]! << 16) | regs[0]!) >> 0) / scale;
/** volkszaehler/mbmd (and the inverter-side DTSU666 emulators): IEEE 754 float, high word first, divided by the scaler. */
const mbmdFloat = (regs: number[], scaler = 1): number => {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint16(0, regs[0]!);
  view.setUint16(2, regs[1]!);
  return view.getFloat32(0) / scaler;
};

function setup(model: ModelConfig, extra: Partial<PersonaUnitConfig>) {
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 8, maxPoints: 64, defaultTtl: 60_000, clock });
  shadow.AddDevice('p1', 'x');
  const unit = new PersonaUnit({ unit: 1, model, maxAgeMs: 5000, stale: 'silent', bind: {}, ...extra }, { shadow, clock });
  unit.start();
  return { shadow, unit, at: (fc: number, address: number, count: number) => unit.answer(readPdu(fc, address, count)) };
}

test('EM24: FC04 answers the registers FC03 does (a reader with FC04 gets the Victron values, not 0x02)', async () => {
  const { shadow, at } = setup(models['carlo-gavazzi-em24']!, { bind: { total_power: 'p1.p', voltage_l1: 'p1.u', frequency: 'p1.f' } });
  shadow.SetDevicePoints('p1', { p: -1234.5, u: 231.4, f: 50.02 });
  for (const fc of [3, 4]) {
    assert.is(victronS32l(words(await at(fc, 0x0028, 2)), 10), -1234.5, `FC0${fc} total power`);
    assert.is(victronS32l(words(await at(fc, 0x0000, 2)), 10), 231.4, `FC0${fc} V L1`);
    assert.equal(words(await at(fc, 0x000b, 1)), [1648], `FC0${fc} model code`);
    assert.equal(words(await at(fc, 0x0033, 1)), [500], `FC0${fc} Hz x10`);
  }
  assert.equal([...(await at(4, 0x0100, 2))!], [0x84, 0x02], 'outside the map: 0x02 under FC04 too');
});

test('Eastron: FC04 reads the identity registers where there is no input register (Victron\'s meter library probes FC02h so); measurements stay input registers', async () => {
  for (const [name, code, voltage] of [['eastron-sdm630', 0x0070, 'voltage_l1'], ['eastron-sdm120', 0x0020, 'voltage']] as const) {
    const { shadow, at } = setup(models[name]!, { bind: { [voltage]: 'p1.u' } });
    shadow.SetDevicePoints('p1', { u: 231.5 });
    assert.equal(words(await at(4, 0xfc02, 1)), [code], `${name}: FC04 at FC02h`);
    assert.equal(words(await at(3, 0xfc02, 1)), [code], `${name}: FC03 at FC02h`);
    assert.is(mbmdFloat(words(await at(4, 0x0000, 2))), 231.5, `${name}: FC04 at 0000h is still the input register (voltage)`);
  }
});

test('DTSU666: FC04 as FC03; the energies answer at 101Eh/1028h and at 401Eh/4028h, always alike; meter type 166 at 000Bh', async () => {
  const { shadow, at } = setup(models['chint-dtsu666']!, { bind: { total_power: 'p1.p', import_energy: 'p1.imp', export_energy: 'p1.exp' } });
  shadow.SetDevicePoints('p1', { p: 812.3, imp: 4321.5, exp: 98.25 });
  for (const fc of [3, 4]) {
    assert.ok(Math.abs(mbmdFloat(words(await at(fc, 0x2012, 2)), 10) - 812.3) < 1e-4, `FC0${fc} Pt`);
    for (const [low, high, value] of [[0x101e, 0x401e, 4321.5], [0x1028, 0x4028, 98.25]] as const) {
      assert.is(mbmdFloat(words(await at(fc, low, 2))), value, `FC0${fc} 0x${low.toString(16)}`);
      assert.is(mbmdFloat(words(await at(fc, high, 2))), value, `FC0${fc} 0x${high.toString(16)}`);
    }
    assert.equal(words(await at(fc, 0x000b, 1)), [166], `FC0${fc} meter type (what the Solax emulator serves)`);
  }
  // One snapshot: after a change both places carry the new value.
  shadow.SetDevicePoints('p1', { imp: 4322 });
  assert.equal(words(await at(3, 0x401e, 2)), words(await at(3, 0x101e, 2)));
  assert.is(mbmdFloat(words(await at(3, 0x401e, 2))), 4322);
});

test('FC04 where the device has none: a model saying "fc04": "none" answers 0x01 (illegal function); SDM630 FC04 reads its input table', async () => {
  const base = models['carlo-gavazzi-em24']!;
  const none: ModelConfig = { ...base, persona: { ...base.persona, fc04: 'none' } };
  const { at } = setup(none, {});
  assert.equal([...(await at(4, 0x000b, 1))!], [0x84, 0x01]);
  assert.equal(words(await at(3, 0x000b, 1)), [1648]);
  const sdm = setup(models['eastron-sdm630']!, { bind: { total_power: 'p1.p' } });
  sdm.shadow.SetDevicePoints('p1', { p: 10 });
  assert.is(mbmdFloat(words(await sdm.at(4, 0x0034, 2))), 10);
  assert.equal([...(await sdm.at(3, 0x0034, 2))!], [0x83, 0x02], 'the SDM630 keeps FC03 for its holding table');
});

test('unrounded: a device\'s 950.25 W shows as 950.3 in the shadow (decimals 1) and reads 950.25 through the persona', async () => {
  const config = validateConfig({
    gateway: { id: 't', data_dir: '/tmp' },
    buses: [{ id: 'tcp', driver: 'modbus-tcp', host: '127.0.0.1', port: 5020 }],
    models: { m: { points: [{ name: 'p', type: 'float', access: 'R', unit: 'W', decimals: 1, modbus: { table: 'holding', address: 0, data_type: 'float32' } }] } },
    devices: [{ id: 'src', model: 'm', bus: 'tcp', unit_id: 1 }],
  }, { env: {} });
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 8, maxPoints: 64, defaultTtl: 60_000, clock });
  const devices = new Map(resolveDevices(config).map((d) => [d.config.id, d]));
  shadow.AddDevice('src', 'm', undefined, { points: [{ name: 'p' }] });
  const sink = createShadowSink(shadow, devices, silentLogger);
  const sdm = new PersonaUnit({ unit: 1, model: models['eastron-sdm630']!, maxAgeMs: 5000, stale: 'silent', bind: { total_power: 'src.p' } }, { shadow, clock });
  const dtsu = new PersonaUnit({ unit: 2, model: models['chint-dtsu666']!, maxAgeMs: 5000, stale: 'silent', bind: { total_power: 'src.p' } }, { shadow, clock });
  sdm.start();
  dtsu.start();
  sink.apply('src', { p: 950.25 });
  assert.is(shadow.GetDevicePoint('src', 'p'), 950.3, 'the shadow shows the model\'s decimals');
  assert.is(mbmdFloat(words(await sdm.answer(readPdu(4, 0x0034, 2)))), 950.25, 'SDM630 total power, as mbmd decodes it');
  assert.is(mbmdFloat(words(await dtsu.answer(readPdu(3, 0x2012, 2))), 10), 950.25, 'DTSU666 Pt in 0.1 W');
  // A change below the shown decimals is still a change of what the persona serves.
  sink.apply('src', { p: 950.26 });
  assert.is(shadow.GetDevicePoint('src', 'p'), 950.3);
  assert.ok(Math.abs(mbmdFloat(words(await sdm.answer(readPdu(4, 0x0034, 2)))) - 950.26) < 1e-4, 'the persona follows 950.26');
  // A value set without a device's raw reading (REST, a restore) has no hidden digits: the persona serves it as shown.
  shadow.SetDevicePoints('src', { p: 940.5 });
  assert.is(mbmdFloat(words(await sdm.answer(readPdu(4, 0x0034, 2)))), 940.5);
  sdm.stop();
  dtsu.stop();
});

test.run();
