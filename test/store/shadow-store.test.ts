import { mkdir, mkdtemp, readFile, readdir, rm, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { restoreSnapshot, takeSnapshot } from '../../src/core/snapshot.js';
import { type Encoded, GenerationEncoder } from '../../src/store/generation-encoder.js';
import { DeltaTracker } from '../../src/store/shadow-delta.js';
import { decodeGeneration } from '../../src/store/snapshot-codec.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';

const T0 = Date.UTC(2024, 0, 1);
const TTL = 60_000;

function makeShadow(now: { t: number }, ids = ['meter', 'relay', 'free']): Shadow {
  const shadow = new Shadow({ maxDevices: 16, maxPoints: 256, defaultTtl: TTL, clock: { now: () => now.t, mono: () => now.t } });
  for (const id of ids) {
    // 'free' has no declared points: restore must bring back every persisted point.
    const points = id === 'free' ? [] : [{ name: 'temp' }, { name: 'label' }, { name: 'setpoint' }];
    shadow.AddDevice(id, `${id}-model`, TTL, { points });
  }
  return shadow;
}

function fill(shadow: Shadow, now: { t: number }, base: number): void {
  shadow.SetDevicePoints('meter', { temp: base + 0.25, label: `meter ${base} ünïcødé` });
  shadow.SetWritePointValue('meter', 'setpoint', base * 2);
  shadow.SetDevicePoints('relay', { temp: -base });
  shadow.SetWritePointValue('relay', 'label', `on-${base}`);
  now.t += 1000;
  shadow.SetDevicePoints('relay', { temp: -base - 1 });
  shadow.SetDevicePoints('free', { a: base, b: 'text', c: 1e300 });
  shadow.MayBeOffline('free'); // a disconnect counter > 0 and a non-Online state must survive
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-store-'));
  try {
    await fn(path.join(dir, 'shadow'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const open = (dir: string) => openShadowStore({ dir, log: silentLogger });

/** Saves two generations: seq 1 with base 1 (gen-a), seq 2 with base 2 (gen-b). */
async function twoGenerations(dir: string, now: { t: number }): Promise<void> {
  const store = await open(dir);
  const shadow = makeShadow(now);
  fill(shadow, now, 1);
  await store.save(takeSnapshot(shadow, now.t));
  fill(shadow, now, 2);
  await store.save(takeSnapshot(shadow, now.t));
}

test('round trip restores values, times, write values, strings, counters, versions and states', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    const a = makeShadow(now);
    fill(a, now, 7);
    await (await open(dir)).save(takeSnapshot(a, now.t));
    const loaded = await (await open(dir)).load(); // a fresh store instance: nothing cached
    assert.equal(loaded.problems, []);
    assert.is(loaded.seq, 1);
    assert.match(loaded.source, /gen-a\.bin/);
    const b = makeShadow(now);
    const report = restoreSnapshot(b, loaded.snapshot!, now.t);
    assert.is(report.restoredDevices, 3);
    assert.is(report.expiredValues, 0);
    for (const id of ['meter', 'relay', 'free']) assert.equal(b.GetDevice(id), a.GetDevice(id), id);
    assert.is(b.GetDevicePoint('meter', 'label'), 'meter 7 ünïcødé');
    assert.is(b.GetWritePointValue('relay', 'label'), 'on-7');
    assert.is(b.GetDevicePoint('free', 'c'), 1e300);
    assert.ok(b.GetDeviceVersion('relay') >= 2);
    assert.is(b.GetDeviceState('free'), a.GetDeviceState('free'));
    assert.is.not(b.GetDeviceState('free'), 'Online');
  }));

const corruptions: [string, (file: string) => Promise<void>][] = [
  ['truncated to half', async (f) => truncate(f, Math.floor((await stat(f)).size / 2))],
  ['0 bytes', async (f) => truncate(f, 0)],
  ['one byte flipped in the columns', async (f) => {
    const buf = await readFile(f);
    buf.writeUInt8(buf.readUInt8(buf.length - 100) ^ 0x01, buf.length - 100);
    await writeFile(f, buf);
  }],
  ['one byte flipped in the seq header', async (f) => {
    const buf = await readFile(f);
    buf.writeUInt8(buf.readUInt8(22) ^ 0x40, 22);
    await writeFile(f, buf);
  }],
];

for (const [what, corrupt] of corruptions) {
  test(`newest generation ${what}: the previous generation is restored and the problem reported`, () =>
    withDir(async (dir) => {
      const now = { t: T0 };
      await twoGenerations(dir, now);
      await corrupt(path.join(dir, 'gen-b.bin'));
      const loaded = await (await open(dir)).load();
      assert.is(loaded.seq, 1);
      assert.match(loaded.source, /gen-a\.bin \(seq 1\)/);
      assert.ok(loaded.problems.some((p) => p.startsWith('gen-b.bin: corrupt')), loaded.problems.join('; '));
      assert.ok(loaded.problems.some((p) => /seq 2 .* lost/.test(p)), 'manifest tells the newest one was lost');
      const b = makeShadow(now);
      restoreSnapshot(b, loaded.snapshot!, now.t);
      assert.is(b.GetDevicePoint('meter', 'temp'), 1.25);
    }));
}

test('a save after falling back never overwrites the only good generation', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    await truncate(path.join(dir, 'gen-b.bin'), 0);
    const store = await open(dir);
    const shadow = makeShadow(now);
    fill(shadow, now, 3);
    await store.save(takeSnapshot(shadow, now.t)); // no load() first: the store must still look before it writes
    const loaded = await (await open(dir)).load();
    assert.equal(loaded.problems, []);
    assert.is(loaded.seq, 3, 'seq stays above the lost generation');
    assert.match(loaded.source, /gen-b\.bin/);
    assert.is((await decodeGeneration(await readFile(path.join(dir, 'gen-a.bin')))).seq, 1);
  }));

test('both generations corrupt: null snapshot with loud problems, no throw', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    await truncate(path.join(dir, 'gen-a.bin'), 0);
    await writeFile(path.join(dir, 'gen-b.bin'), 'garbage');
    const loaded = await (await open(dir)).load();
    assert.is(loaded.snapshot, null);
    assert.is(loaded.problems.length, 3);
    assert.ok(loaded.problems.some((p) => /EMPTY/.test(p)));
  }));

test('an unreadable generation (a directory in its place) is a reported problem, not a throw', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    await unlink(path.join(dir, 'gen-b.bin'));
    await mkdir(path.join(dir, 'gen-b.bin'));
    const loaded = await (await open(dir)).load();
    assert.is(loaded.seq, 1);
    assert.ok(loaded.problems.some((p) => p.startsWith('gen-b.bin: cannot read')), loaded.problems.join('; '));
  }));

test('corrupt manifest alone: generations still judged by their headers, and no loss reported', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    const names = (await readdir(dir)).filter((n) => !n.startsWith('gen-'));
    assert.is(names.length, 1, 'one node-persist manifest file');
    await truncate(path.join(dir, names[0]!), 0);
    const loaded = await (await open(dir)).load();
    assert.is(loaded.seq, 2);
    // Written after its generation, by node-persist in place: torn by a crash, it means nothing was lost.
    assert.equal(loaded.problems, []);
  }));

/** The file an encode streams (digest left out), each chunk copied as it comes (one may be a reused scratch). */
function bytesOf(enc: Encoded, seq = 1): Buffer {
  const copies: Buffer[] = [];
  for (const chunk of enc.chunks(seq)) copies.push(Buffer.from(chunk));
  return Buffer.concat(copies);
}

function direct(encoder: GenerationEncoder, shadow: Shadow, now: number): Encoded {
  const tracker = new DeltaTracker();
  tracker.rebase(shadow);
  return encoder.fromShadow(shadow, now, tracker);
}

test('encoding straight from the table gives the same file as encoding takeSnapshot', () => {
  const now = { t: T0 };
  const shadow = makeShadow(now);
  fill(shadow, now, 3);
  const fromTable = direct(new GenerationEncoder(), shadow, now.t);
  const viaSnapshot = new GenerationEncoder().fromSnapshot(takeSnapshot(shadow, now.t));
  assert.ok(bytesOf(fromTable).equals(bytesOf(viaSnapshot)));
  assert.is(fromTable.bytes, bytesOf(fromTable).length + 32, 'length stated = bytes streamed + the digest');
  // A second encode reuses the cached structure and must still see new values.
  const encoder = new GenerationEncoder();
  const first = bytesOf(direct(encoder, shadow, now.t));
  shadow.SetDevicePoints('meter', { temp: 99 });
  assert.not.ok(bytesOf(direct(encoder, shadow, now.t)).equals(first));
});

test('a generation larger than one write chunk streams and decodes (every column, flags across chunks)', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    // 400 × 100 = 40,000 points: each f64 column is 320 KB, more than one 256 KB chunk.
    const shadow = new Shadow({ maxDevices: 400, maxPoints: 40_000, defaultTtl: TTL, clock: { now: () => now.t, mono: () => now.t } });
    const names = Array.from({ length: 100 }, (_, i) => ({ name: `p${i}` }));
    for (let d = 0; d < 400; d++) shadow.AddDevice(`d${d}`, 'm', TTL, { points: names });
    for (let d = 0; d < 400; d++) {
      shadow.SetDevicePoints(`d${d}`, Object.fromEntries(names.map((n, i) => [n.name, i % 7 === 0 ? `s${d}.${i}` : d * 1000 + i])));
    }
    shadow.SetWritePointValue('d399', 'p99', 5);
    const store = await open(dir);
    await store.saveShadow(shadow, now.t);
    await store.close();
    const loaded = await (await open(dir)).load();
    assert.equal(loaded.problems, []);
    const want = takeSnapshot(shadow, now.t);
    const got = loaded.snapshot!;
    for (const col of ['num', 'updatedAt', 'writeNum', 'writeAt', 'flags'] as const) assert.equal(got.pts[col], want.pts[col], col);
    assert.equal(got.strValues, want.strValues);
    assert.equal(got.strWrites, want.strWrites);
  }));

test('saveShadow round trip and a new device after a save (structure cache invalidated)', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    const store = await open(dir);
    const a = makeShadow(now, ['meter', 'free']);
    fill2(a);
    await store.saveShadow(a, now.t);
    a.AddDevice('late', 'm', TTL, { points: [{ name: 'x' }] });
    a.SetDevicePoints('late', { x: 'hello' });
    a.SetDevicePoints('free', { d: 4 }); // a new point on an undeclared device
    await store.saveShadow(a, now.t);
    const b = makeShadow(now, ['meter', 'free', 'late']);
    restoreSnapshot(b, (await (await open(dir)).load()).snapshot!, now.t);
    for (const id of ['meter', 'free']) assert.equal(b.GetDevice(id), a.GetDevice(id), id);
    assert.is(b.GetDevicePoint('late', 'x'), null, "'late' has no declared x point in b's config");
    assert.is(b.GetDevicePoint('free', 'd'), 4);
  }));

function fill2(shadow: Shadow): void {
  shadow.SetDevicePoints('meter', { temp: 1.5, label: 'x' });
  shadow.SetWritePointValue('meter', 'label', 'w');
  shadow.SetDevicePoints('free', { a: 1, b: 'two' });
}

test('first start: no files, null snapshot, no problems', () =>
  withDir(async (dir) => {
    const loaded = await (await open(dir)).load();
    assert.equal(loaded, { snapshot: null, seq: 0, source: 'none (first start)', problems: [] });
  }));

test('stale temp files are removed on open, other files kept', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    await writeFile(path.join(dir, '.gen-a.bin.999.3.tmp'), 'half a write');
    await writeFile(path.join(dir, '.abcdef.1.1.tmp'), '');
    await open(dir);
    const names = await readdir(dir);
    assert.not.ok(names.some((n) => n.endsWith('.tmp')), names.join(','));
    assert.ok(names.includes('gen-a.bin') && names.includes('gen-b.bin'));
  }));

test('values past their TTL are removed on restore and the device re-judged offline', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    const a = makeShadow(now);
    a.SetDevicePoints('meter', { temp: 1 });
    now.t += TTL - 1000;
    a.SetDevicePoints('relay', { temp: 2 });
    const store = await open(dir);
    await store.save(takeSnapshot(a, now.t));
    now.t += 2000; // meter's data is now past its TTL, relay's not
    const b = makeShadow(now);
    const report = restoreSnapshot(b, (await store.load()).snapshot!, now.t);
    assert.is(report.expiredValues, 1);
    assert.is(b.GetDevicePoint('meter', 'temp'), null);
    assert.is(b.GetDeviceState('meter'), 'Offline');
    assert.is(b.GetDevicePoint('relay', 'temp'), 2);
  }));

test('a device no longer configured is dropped, and its data leaves both generations on the next save', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    const store = await open(dir);
    const b = makeShadow(now, ['meter', 'free']);
    const report = restoreSnapshot(b, (await store.load()).snapshot!, now.t);
    assert.equal(report.droppedDevices, ['relay']);
    assert.is(b.HasDevice('relay'), false);
    await store.save(takeSnapshot(b, now.t));
    for (const f of ['gen-a.bin', 'gen-b.bin']) {
      const gen = await decodeGeneration(await readFile(path.join(dir, f)));
      assert.equal(gen.snapshot.devices.map((d) => d.id), ['meter', 'free'], f);
    }
    assert.is(store.seq, 4);
  }));

test('concurrent saves are serialized and the last one wins', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    const store = await open(dir);
    const shadow = makeShadow(now);
    const saves: Promise<void>[] = [];
    for (let i = 1; i <= 6; i++) {
      shadow.SetDevicePoints('meter', { temp: i });
      saves.push(store.save(takeSnapshot(shadow, now.t)));
    }
    await Promise.all(saves);
    const loaded = await (await open(dir)).load();
    assert.is(loaded.seq, 6);
    const b = makeShadow(now);
    restoreSnapshot(b, loaded.snapshot!, now.t);
    assert.is(b.GetDevicePoint('meter', 'temp'), 6);
  }));

test('destroy removes every persisted file; the store keeps working', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    const store = await open(dir);
    await store.load();
    await store.destroy();
    assert.equal(await readdir(dir), []);
    assert.equal((await (await open(dir)).load()).problems, []);
    const shadow = makeShadow(now);
    fill(shadow, now, 5);
    await store.save(takeSnapshot(shadow, now.t));
    assert.ok((await (await open(dir)).load()).snapshot);
  }));

test('a missing newest generation file is reported from the manifest', () =>
  withDir(async (dir) => {
    const now = { t: T0 };
    await twoGenerations(dir, now);
    await unlink(path.join(dir, 'gen-b.bin'));
    const loaded = await (await open(dir)).load();
    assert.is(loaded.seq, 1);
    assert.equal(loaded.problems.length, 1);
  }));

test.run();
