/**
 * Issue 12 item 4: every Modbus library model, end to end on the pymodbus rig. Each device's register
 * image is written from its manufacturer document (or the cited open-source driver), NOT from our model
 * (scripts/modbus-rig/device_images.py), and served by an independent slave (devices.py) that also
 * behaves like the device: a read over the device's documented request limit answers exception 3, an
 * address it does not have exception 2, a function it lacks exception 1.
 *
 * One real gateway polls all of them on one RTU bus (one unit id each); the test reads every device over
 * REAL HTTP (`GET /api/v1/shadow/device`) and checks each point's engineering value against the number
 * the image was written with (so a wrong scale, word order or address in a model fails), its unit
 * (`GET /api/v1/models`), the not-available markers (value null with the reason), and that the slave
 * refused nothing the gateway sent. A Modbus model in board/models without an image fails the test.
 */
import { spawnSync } from 'node:child_process';
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import M from 'modbus-serial';
import { readModelLibrary } from '../../src/config/models.js';
import { call } from '../helpers/http.js';
import { DeviceRig, describeImages, deviceRigConfig, deviceSpec, startDeviceGateway, type DeviceGateway, type DeviceImage, type ExpectedPoint } from '../helpers/device-rig.js';
import { hasPeer, needs, peerHook } from '../helpers/peers.js';
import { mbpollUnavailable, rigUnavailable, waitFor } from './modbus-rig.js';

const ModbusRTU = M.default; // the d.ts is CJS with `export default` (notes: packages.md §3)

const why = rigUnavailable();
const rigTest = needs(why, 'model library rig tests');

/** Every image devices.py knows, on units 1..N. */
const images: DeviceImage[] = why ? [] : describeImages('');

interface LibraryModel { name: string; sunspec?: unknown; points?: { name: string; decimals?: number; modbus?: unknown }[] }

/** The library models as the loader hands them on, variants resolved (which talk Modbus, each point's display rounding). */
const library: LibraryModel[] = Object.values(readModelLibrary().models).map((m) => m.raw as LibraryModel);

/** The library models that talk Modbus (the gpio-* ones do not). */
function modbusLibraryModels(): string[] {
  return library.filter((m) => m.sunspec !== undefined || (m.points ?? []).some((p) => p.modbus !== undefined)).map((m) => m.name).sort();
}

/** `decimals` of a model point: the gateway rounds the value it shows to that many places. */
const decimalsOf = (model: string, point: string): number | undefined => library.find((m) => m.name === model)?.points?.find((p) => p.name === point)?.decimals;

rigTest('every Modbus library model has a device image written from its source (a model without one fails here)', () => {
  const modbus = modbusLibraryModels();
  assert.ok(modbus.length >= 15, `${modbus.length} Modbus models in board/models`);
  const imaged = new Set(images.map((i) => i.model));
  const missing = modbus.filter((m) => !imaged.has(m));
  assert.equal(missing, [], `Modbus models without a register image in scripts/modbus-rig/device_images.py: ${missing.join(', ')}`);
  const stale = images.filter((i) => !modbus.includes(i.model)).map((i) => `${i.key} (${i.model})`);
  assert.equal(stale, [], `images of models that are not in board/models: ${stale.join(', ')}`);
});

// ------------------------------------------------------------------------------------------------
// One gateway, every image on its own unit id.
// ------------------------------------------------------------------------------------------------

const rig = suite('model library on the rig');
const rigSuiteTest = needs(why, 'model library rig tests', rig);
let run: DeviceGateway | undefined;
let models = new Map<string, Map<string, string | undefined>>(); // model -> point -> unit
let incomplete = new Set<string>(); // devices that had not shown every point after 30 s

interface RestPoint { name: string; value: number | string | boolean | null; reason?: string; updated_at: string }
interface RestDevice { id: string; model: string; online: boolean; state: string; points: RestPoint[] }

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function device(id: string): Promise<RestDevice> {
  const r = await call<RestDevice>(run!.gw.httpPort, `/api/v1/shadow/device?id=${encodeURIComponent(id)}`);
  assert.ok(r.body.success, `GET /shadow/device?id=${id}: ${r.body.errorMsg}`);
  return r.body.data;
}

/** Ready when the device is Online and every point of its image has a value (or, for a marker, a reason). */
function ready(d: RestDevice, image: DeviceImage): boolean {
  if (!d.online) return false;
  const byName = new Map(d.points.map((p) => [p.name, p]));
  return image.points.every((e) => {
    const p = byName.get(e.name);
    return p !== undefined && (e.value === null ? p.reason !== undefined || p.updated_at !== '0001-01-01 00:00:00' : p.value !== null);
  });
}

rig.before(peerHook(why, async () => {
  run = await startDeviceGateway(deviceSpec(images.map((i) => [i.key, i.unit] as const)), (r, dir) => deviceRigConfig(dir, r, {
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: r.master, baud_rate: 9600, timeout: '1s' }],
    devices: images.map((i) => ({ id: i.key, model: i.model, bus: 'rs485', unit_id: i.unit, poll: '1s' })),
  }));
  const r = await call<{ name: string; points: { name: string; unit?: string }[] }[]>(run.gw.httpPort, '/api/v1/models');
  models = new Map(r.body.data.map((m) => [m.name, new Map(m.points.map((p) => [p.name, p.unit]))]));
  // Wait (bounded) until every device shows every point; what is still missing then is reported per model.
  const deadline = Date.now() + 30_000;
  let pending = images.map((i) => i.key);
  while (pending.length > 0 && Date.now() < deadline) {
    const next: string[] = [];
    for (const image of images.filter((i) => pending.includes(i.key))) {
      if (!ready(await device(image.key), image)) next.push(image.key);
    }
    pending = next;
    if (pending.length > 0) await sleep(250);
  }
  incomplete = new Set(pending);
  await sleep(1200); // one more poll of everything, so any request the gateway makes has been made
}));

rig.after(async () => {
  await run?.stop();
});

/** Refusals of the gateway's requests, less those the device's image says a correct master gets (SunSpec discovery). */
function unexpectedRefusals(unit?: number): ReturnType<DeviceGateway['rig']['refusals']> {
  return run!.rig.refusals(unit).filter((e) => {
    const image = images.find((i) => i.unit === e.unit);
    return !image?.expected_refusals.some(([fc, address, count]) => e.fc === fc && e.address === address && e.count === count);
  });
}

/** Unit spellings: "VAr"/"var", "µS/cm"/"uS/cm". */
const normUnit = (u: string | null | undefined): string => (u ?? '').replace('µ', 'u').replace(/^(k?)var(h?)$/i, (_m, k: string, h: string) => `${k.toLowerCase()}var${h.toLowerCase()}`);

function unitOk(expected: ExpectedPoint['unit'], actual: string | undefined): boolean {
  const accepted = Array.isArray(expected) ? expected : [expected];
  return accepted.some((u) => normUnit(u) === normUnit(actual));
}

for (const image of images) {
  rig(`${image.model} (${image.key}, unit ${image.unit}): values, units and markers as its source says`, async () => {
    const d = await device(image.key);
    const problems: string[] = [];
    if (incomplete.has(image.key)) problems.push('not every point had shown a value (or a reason) after 30 s of polling');
    if (!d.online) problems.push(`device is ${d.state}, not Online`);
    const byName = new Map(d.points.map((p) => [p.name, p]));
    const units = models.get(image.model);
    if (!units) problems.push(`model ${image.model} not in GET /api/v1/models`);
    for (const e of image.points) {
      const p = byName.get(e.name);
      if (!p) { problems.push(`${e.name}: no such point in the device (the image has it)`); continue; }
      if (e.value === null) {
        if (p.value !== null) problems.push(`${e.name}: ${JSON.stringify(p.value)}, expected null (not available: ${e.reason})`);
        else if (!p.reason || !p.reason.toLowerCase().includes(String(e.reason).toLowerCase())) problems.push(`${e.name}: reason ${JSON.stringify(p.reason)}, expected one saying "${e.reason}"`);
      } else if (typeof e.value === 'string' || Array.isArray(e.value)) {
        const accepted = (Array.isArray(e.value) ? e.value : [e.value]).map((t) => t.toLowerCase().replace(/[\s_-]/g, ''));
        if (typeof p.value !== 'string' || !accepted.includes(p.value.toLowerCase().replace(/[\s_-]/g, ''))) problems.push(`${e.name}: ${JSON.stringify(p.value)}${p.reason ? ` (${p.reason})` : ''}, expected ${JSON.stringify(e.value)}`);
      } else if (typeof p.value !== 'number') {
        problems.push(`${e.name}: ${JSON.stringify(p.value)}${p.reason ? ` (${p.reason})` : ''}, expected ${e.value}`);
      } else {
        // The gateway shows the value rounded to the model's `decimals` (a display choice, not a scale):
        // allow that rounding; a wrong scale or word order is off by far more.
        const d = decimalsOf(image.model, e.name);
        const rounding = d === undefined ? 0 : 0.5 * 10 ** -d;
        if (Math.abs(p.value - e.value) > Math.max(e.tolerance ?? 1e-6, rounding * (1 + 1e-9)) + Math.abs(e.value) * 1e-9) {
          problems.push(`${e.name}: ${p.value}, expected ${e.value}${d === undefined ? '' : ` (model rounds to ${d} decimals)`}`);
        }
      }
      if (units && !unitOk(e.unit, units.get(e.name))) {
        problems.push(`${e.name}: unit ${JSON.stringify(units.get(e.name) ?? null)}, expected ${JSON.stringify(e.unit)}`);
      }
    }
    // The model's points that the image does not set: each model point must be exercised.
    const imaged = new Set(image.points.map((e) => e.name));
    const unexercised = [...(units?.keys() ?? [])].filter((n) => !imaged.has(n));
    if (unexercised.length > 0) problems.push(`model points with no value in the image (add them from the source): ${unexercised.join(', ')}`);
    const refused = unexpectedRefusals(image.unit);
    if (refused.length > 0) problems.push(`the device refused ${refused.length} request(s) of the gateway, e.g. ${JSON.stringify(refused[0])}`);
    assert.equal(problems, [], `${image.model} (${image.key}, unit ${image.unit}):\n  ${problems.join('\n  ')}`);
  });
}

rigSuiteTest('the gateway sent no request over any device\'s documented limit, and nothing else a device refuses', () => {
  const over = run!.rig.refusals().filter((e) => e.code === 3);
  assert.equal(over, [], `over-limit requests: ${JSON.stringify(over.slice(0, 5))}`);
  const refused = unexpectedRefusals();
  assert.equal(refused, [], `refused requests: ${JSON.stringify(refused.slice(0, 5))}`);
  for (const image of images) {
    const largest = Math.max(0, ...run!.rig.events.filter((e) => e.unit === image.unit && (e.fc === 3 || e.fc === 4)).map((e) => e.count));
    assert.ok(largest <= image.limits.max_registers, `${image.key}: largest read ${largest} > ${image.limits.max_registers}`);
    assert.ok(run!.rig.events.some((e) => e.unit === image.unit && e.kind === 'REQ'), `${image.key}: the gateway never read it`);
  }
  assert.is(run!.rig.errors, '', 'devices.py printed errors');
});

// ------------------------------------------------------------------------------------------------
// The limit enforcement itself: requests sent directly (Modbus TCP into the same slave and images).
// ------------------------------------------------------------------------------------------------

type Client = InstanceType<typeof ModbusRTU>;
async function exceptionOf(what: () => Promise<unknown>): Promise<number | null> {
  try {
    await what();
    return null;
  } catch (e) {
    const code = (e as { modbusCode?: number }).modbusCode;
    if (code === undefined) throw e;
    return code;
  }
}

rigSuiteTest('the slave refuses what the real device refuses: over its limit (3), a hole (2), a missing function (1)', async () => {
  const unit = (key: string): number => images.find((i) => i.key === key)!.unit;
  const before = run!.rig.refusals().length;
  const client: Client = new ModbusRTU();
  await client.connectTCP('127.0.0.1', { port: run!.rig.tcpPort });
  client.setTimeout(3000);
  try {
    client.setID(unit('sdm630'));
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 61)), 3, 'SDM630: 61 registers (Eastron: at most 60)');
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 76)), 3, 'SDM630: the old 76-register plan');
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 60)), null, 'SDM630: 60 registers');
    client.setID(unit('sdm72d-m'));
    assert.is(await exceptionOf(() => client.readInputRegisters(0x34, 61)), 3, 'SDM72D-M: 61 registers (30 parameters)');
    client.setID(unit('em111'));
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 51)), 3, 'EM111: 51 registers (at most 50)');
    assert.is(await exceptionOf(() => client.readHoldingRegisters(0, 51)), 3, 'EM111: FC03 the same');
    assert.is(await exceptionOf(() => client.readHoldingRegisters(0, 50)), null, 'EM111: 50 registers');
    client.setID(unit('acs355'));
    assert.is(await exceptionOf(() => client.readHoldingRegisters(101, 9)), 2, 'ACS355: 40102..40110 includes 40108, no parameter');
    assert.is(await exceptionOf(() => client.readHoldingRegisters(6, 95)), 2, 'ACS355: 40007..40101 bridges the invalid 40013..40100');
    assert.is(await exceptionOf(() => client.readHoldingRegisters(101, 6)), null, 'ACS355: 40102..40107');
    client.setID(unit('dds238'));
    assert.is(await exceptionOf(() => client.writeRegister(0x15, 0x0101)), 1, 'DDS238-2: FC06 not understood');
    client.setID(unit('iem3155'));
    assert.is(await exceptionOf(() => client.readInputRegisters(2999, 2)), 1, 'iEM3155: FC03 only');
    client.setID(unit('sdm120'));
    assert.is(await exceptionOf(() => client.readInputRegisters(1, 2)), 2, 'SDM120: odd start address');
  } finally {
    await new Promise<void>((r) => client.close(() => r()));
  }
  const counted = run!.rig.refusals().slice(before);
  assert.is(counted.length, 10, `every refusal is counted: ${JSON.stringify(counted)}`);
  assert.is(counted.filter((e) => e.code === 3).length, 5);

  // An independent master too: mbpoll asking the SDM630 for 76 registers gets "Illegal data value".
  if (hasPeer(mbpollUnavailable(), 'mbpoll cross-check')) {
    const r = spawnSync('mbpoll', ['-m', 'tcp', '-p', String(run!.rig.tcpPort), '-a', String(unit('sdm630')), '-t', '3', '-r', '1', '-c', '76', '-1', '127.0.0.1'], { encoding: 'utf8', timeout: 5000 });
    assert.match(`${r.stdout}${r.stderr}`, /Illegal data value/i);
  }
});

// Over RTU too, as the gateway talks to the devices (a rig of its own: the gateway's rig owns its pty).
const rtu = suite('limit enforcement over RTU');
const rtuSuiteTest = needs(why, 'model library rig tests', rtu);
rtuSuiteTest('an over-limit request over RTU gets exception 3 from the SDM630 image, and is counted', async () => {
  const own = new DeviceRig(deviceSpec([['sdm630', 1], ['em111', 2]]));
  const client: Client = new ModbusRTU();
  try {
    await own.start();
    await client.connectRTUBuffered(own.master, { baudRate: 9600, dataBits: 8, parity: 'none', stopBits: 1 });
    client.setTimeout(2000);
    client.setID(1);
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 76)), 3, 'SDM630: 76 registers');
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 60)), null, 'SDM630: 60 registers');
    client.setID(2);
    assert.is(await exceptionOf(() => client.readInputRegisters(0, 51)), 3, 'EM111: 51 registers');
    // The slave logs a refusal on its output, which may reach us after the exception did (a loaded machine).
    await waitFor('both refusals logged', () => own.refusals().length >= 2, 5000);
    assert.equal(own.refusals().map((e) => [e.unit, e.fc, e.address, e.count, e.code]), [[1, 4, 0, 76, 3], [2, 4, 0, 51, 3]]);
  } finally {
    if (client.isOpen) await new Promise<void>((r) => client.close(() => r()));
    await own.stop();
  }
});

test.run();
rig.run();
rtu.run();
