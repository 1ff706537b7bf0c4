import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BLOCK_FOR_DRIVER } from '../../src/config/cross-checks.js';
import { loadConfigFile, resolveDevices, validateConfig } from '../../src/config/load.js';
import { readModelLibrary } from '../../src/config/models.js';

const DOCS = fileURLToPath(new URL('../../docs/config.md', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../board/examples/', import.meta.url));

test('every board/models file is a valid model (the library is checked on every load)', () => {
  const library = readModelLibrary();
  assert.equal(library.problems, []);
  const config = validateConfig({}, { env: {} });
  assert.equal(Object.keys(config.models).sort(), Object.keys(library.models).sort());
});

test('every board/models model can be used by a device on a bus of its driver', () => {
  const library = readModelLibrary();
  const buses = [
    { id: 'sim', driver: 'simulator' },
    { id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' },
    { id: 'pins', driver: 'gpio' },
  ];
  const busFor = (model: unknown): string | undefined => {
    const first = (model as { points?: Array<Record<string, unknown>> }).points?.[0] ?? {};
    return buses.find((b) => first[BLOCK_FOR_DRIVER[b.driver]!] !== undefined)?.id;
  };
  const devices = Object.entries(library.models).map(([name, { raw }], i) => ({
    id: `d${i}`, model: name, bus: busFor(raw) ?? 'sim', ...(busFor(raw) === 'rs485' ? { unit_id: 1 + (i % 247) } : {}),
  }));
  // A gpio model may claim pins another already uses; each is checked alone so only the model itself is judged.
  for (const device of devices) {
    const config = validateConfig({ buses, devices: [device] }, { env: {}, checkers: [] });
    assert.is(config.devices[0]!.model, device.model);
  }
});

test('every board/examples config validates', async () => {
  // A missing or empty directory fails: the README points users at these files.
  const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'));
  assert.ok(files.length > 0, `no example configs in ${EXAMPLES}`);
  for (const file of files) {
    const config = await loadConfigFile(`${EXAMPLES}${file}`, { env: {} }).catch((err: Error) => {
      throw new Error(`board/examples/${file}: ${err.message}`);
    });
    assert.ok(config.gateway.id, file);
  }
});

test('the complete example of docs/config.md validates', () => {
  const example = readFileSync(DOCS, 'utf8').split('## Complete example')[1]?.split('```json')[1]?.split('```')[0];
  assert.ok(example, 'docs/config.md has a "Complete example" JSON block');
  const config = validateConfig(JSON.parse(example), { env: {}, models: {}, checkers: [] });
  assert.is(config.devices.length, 2);
  assert.is(config.models['room-sensor']!.points[0]!.modbus!.address, 0);
});

/** A library model file as it is on disk. */
interface LibraryModelFile { source: string; serial?: unknown; limits?: { max_registers?: number }; points: { name: string; description?: string; unverified?: string }[] }
const libraryModel = (name: string): LibraryModelFile => JSON.parse(readFileSync(fileURLToPath(new URL(`../../board/models/${name}.json`, import.meta.url)), 'utf8'));

test('model audit: EM111 names its factory line settings (Carlo Gavazzi protocol v4.0 p. 18: address 1, 9.6 kbps, no parity, 1 stop bit)', () => {
  const em111 = libraryModel('carlo-gavazzi-em111');
  assert.equal(em111.serial, { baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, unit_id: 1 });
  assert.match(em111.source, /p\. 18/);
});

test('model audit: the PZEM alarm register is documented as 0xFFFF = alarm, 0x0000 = no alarm (not "unverified")', () => {
  for (const name of ['peacefair-pzem-016', 'peacefair-pzem-004t-v3']) {
    const alarm = libraryModel(name).points.find((p) => p.name === 'alarm')!;
    assert.match(alarm.description ?? '', /0xFFFF\) = alarm/, name);
    assert.is(alarm.unverified, undefined, `${name}: the alarm value is documented`);
  }
});

test('model audit: the Deye model cites the merged evcc deye-storage template (not the unmerged deye-hybrid-1p PR) and caps reads at 20 registers', () => {
  const deye = libraryModel('deye-hybrid-1p');
  const text = JSON.stringify(deye);
  assert.not.match(text, /deye-hybrid-1p\.yaml/);
  assert.match(deye.source, /evcc-io\/evcc templates\/definition\/meter\/deye-storage\.yaml/);
  assert.is(deye.limits?.max_registers, 20);
});

test('hostile model names do not crash or pollute', () => {
  const raw = JSON.parse('{"models": {"__proto__": {"points": [{"name": "p", "type": "int", "sim": {"fn": "counter"}}]}}, "buses": [{"id": "s", "driver": "simulator"}], "devices": [{"id": "d", "model": "toString", "bus": "s"}]}');
  try {
    validateConfig(raw, { env: {}, models: {}, checkers: [] });
    assert.unreachable('toString is not a model');
  } catch (e) {
    assert.equal((e as { problems?: string[] }).problems, ['devices[0].model: unknown model "toString" (known: __proto__)']);
  }
  raw.devices[0].model = '__proto__';
  const config = validateConfig(raw, { env: {}, models: {}, checkers: [] });
  assert.ok(Object.hasOwn(config.models, '__proto__'));
  assert.is(resolveDevices(config)[0]!.points.size, 1);
});

test('a variant file is its base model with its own identity and persona constants; a broken variant is named', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-variants-'));
  try {
    const put = (name: string, model: unknown): void => writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(model));
    put('base', { name: 'base', source: 'base doc', persona: { constants: { id: 1, model: 'base' }, same_as: { b: 'a' } },
      points: [{ name: 'a', type: 'int' }, { name: 'b', type: 'int' }, { name: 'id', type: 'int' }] });
    put('two', { name: 'two', variant_of: 'base', source: 'two doc', persona: { constants: { id: 2 } } });
    put('nobase', { name: 'nobase', variant_of: 'missing' });
    put('chained', { name: 'chained', variant_of: 'two' });
    put('zchained', { name: 'zchained', variant_of: 'two' }); // read after its base: the same answer
    put('ownpoints', { name: 'ownpoints', variant_of: 'base', points: [] });
    const library = readModelLibrary(dir);
    assert.equal(library.models['two']!.raw, {
      name: 'two', source: 'two doc', persona: { constants: { id: 2, model: 'base' }, same_as: { b: 'a' } },
      points: [{ name: 'a', type: 'int' }, { name: 'b', type: 'int' }, { name: 'id', type: 'int' }],
    });
    assert.equal(Object.keys(library.models).sort(), ['base', 'two']);
    assert.equal(library.problems.sort(), [
      `${dir}/chained.json: variant_of: "two" is itself a variant; name its base`,
      `${dir}/nobase.json: variant_of: no library model "missing"`,
      `${dir}/ownpoints.json: variant_of: a variant takes its points from its base (leave "points" out)`,
      `${dir}/zchained.json: variant_of: "two" is itself a variant; name its base`,
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
