/**
 * Issue 16 (flash): between full generations the shadow is saved as deltas in a journal. A restore from the
 * newest generation plus its deltas gives exactly the shadow that was saved last; a record cut short by a
 * crash is ignored (the loss bound is one save); a journal of another generation is never applied; a delta of
 * a fleet where 10% of the values move is a small fraction of a full generation.
 */
import { appendFile, mkdtemp, readdir, readFile, readlink, rm, stat, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { takeSnapshot, type ShadowSnapshot } from '../../src/core/snapshot.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';

const TTL = 600_000;

function fleet(now: { t: number }, devices: number, points: number): Shadow {
  const shadow = new Shadow({ maxDevices: devices, maxPoints: devices * points, defaultTtl: TTL, clock: { now: () => now.t, mono: () => now.t } });
  for (let d = 0; d < devices; d++) shadow.AddDevice(`dev-${d}`, 'm', TTL, { points: Array.from({ length: points }, (_, i) => ({ name: `p${i}` })) });
  return shadow;
}

/** One poll of every device: every point refreshed, `moving` of them with new values, one text point. */
function poll(shadow: Shadow, now: { t: number }, devices: number, points: number, moving: number, round: number): void {
  now.t += 1000;
  for (let d = 0; d < devices; d++) {
    const values: Record<string, number | string> = {};
    for (let i = 0; i < points; i++) values[`p${i}`] = i < moving ? round * 10 + d + i / 4 : i === points - 1 ? `s${d}` : i;
    shadow.SetDevicePoints(`dev-${d}`, values, d === 1 ? { unavailable: { p1: 'overflow' } } : {});
  }
}

const withDir = async (fn: (dir: string) => Promise<void>): Promise<void> => {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-journal-'));
  try {
    await fn(path.join(dir, 'shadow'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

const same = (a: ShadowSnapshot, b: ShadowSnapshot): void => {
  assert.equal([...a.dev.updatedAt], [...b.dev.updatedAt], 'device times');
  assert.equal([...a.dev.version], [...b.dev.version], 'versions');
  assert.equal([...a.dev.state], [...b.dev.state], 'states');
  assert.equal([...a.dev.disconnect], [...b.dev.disconnect], 'disconnect counters');
  assert.equal([...a.pts.num], [...b.pts.num], 'values');
  assert.equal([...a.pts.flags], [...b.pts.flags], 'flags');
  assert.equal([...a.pts.updatedAt], [...b.pts.updatedAt], 'point times');
  assert.equal([...a.pts.writeNum], [...b.pts.writeNum], 'write values');
  assert.equal([...a.pts.writeAt], [...b.pts.writeAt], 'write times');
  assert.equal(new Map(a.strValues), new Map(b.strValues), 'text values');
  assert.equal(new Map(a.strWrites), new Map(b.strWrites), 'text write values');
};

test('a generation plus its deltas restores exactly the last save; deltas are small next to a generation', async () => {
  await withDir(async (dir) => {
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = fleet(now, 50, 20);
    poll(shadow, now, 50, 20, 2, 0);
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    await store.saveShadow(shadow, now.t);
    const full = (await stat(path.join(dir, 'gen-a.bin'))).size;
    for (let round = 1; round <= 5; round++) {
      poll(shadow, now, 50, 20, 2, round);
      if (round === 3) {
        shadow.SetWritePointValue('dev-4', 'p3', 42.5);
        shadow.SetWritePointValue('dev-4', 'p4', 'open');
        shadow.MayBeOffline('dev-7');
        shadow.SetDevicePoints('dev-9', { p5: 9.75 }); // one point: its own time, the device not all refreshed
      }
      // Text that changes with its flags unchanged, and points that turn from a number to text and back.
      if (round === 4) shadow.SetDevicePoints('dev-5', { p19: 'changed', p18: 'now text', p17: 'text for a while' });
      if (round === 5) shadow.SetDevicePoints('dev-5', { p19: 'changed again', p17: 17.5 });
      await store.saveShadow(shadow, now.t);
    }
    assert.is(store.fullSaves, 1);
    assert.is(store.deltaSaves, 5);
    const perDelta = (store.journalBytes - 32) / 5;
    assert.ok(perDelta < full * 0.2, `a delta of 10% moving values is ${perDelta} bytes, a generation ${full}`);
    const expected = takeSnapshot(shadow, now.t);
    const again = await openShadowStore({ dir, log: silentLogger });
    const loaded = await again.load();
    assert.equal(loaded.problems, []);
    assert.match(loaded.source, /gen-a\.bin \(seq 1\) \+ 5 journal deltas/);
    same(loaded.snapshot!, expected);
    assert.is(loaded.snapshot!.savedAt, now.t);
  });
});

test('a record cut short by a crash is ignored: the restore is the save before it', async () => {
  await withDir(async (dir) => {
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = fleet(now, 5, 5);
    poll(shadow, now, 5, 5, 2, 0);
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    await store.saveShadow(shadow, now.t);
    poll(shadow, now, 5, 5, 2, 1);
    await store.saveShadow(shadow, now.t);
    const before = takeSnapshot(shadow, now.t);
    poll(shadow, now, 5, 5, 2, 2);
    await store.saveShadow(shadow, now.t);
    const file = path.join(dir, 'journal.bin');
    await truncate(file, (await stat(file)).size - 5);
    const loaded = await (await openShadowStore({ dir, log: silentLogger })).load();
    assert.equal(loaded.problems, []);
    assert.match(loaded.source, /\+ 1 journal deltas/);
    same(loaded.snapshot!, before);
    // Garbage after the last record (a write that never finished) is no record either.
    await appendFile(file, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]));
    same((await (await openShadowStore({ dir, log: silentLogger })).load()).snapshot!, before);
  });
});

test('a journal is applied only to its own generation; a later generation starts an empty one', async () => {
  await withDir(async (dir) => {
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = fleet(now, 5, 5);
    poll(shadow, now, 5, 5, 2, 0);
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    await store.saveShadow(shadow, now.t);
    poll(shadow, now, 5, 5, 2, 1);
    await store.saveShadow(shadow, now.t);
    const journal = await readFile(path.join(dir, 'journal.bin'));
    // A device deleted: a new structure, so a full generation (seq 2) and a fresh journal.
    shadow.DeleteDevice('dev-4');
    await store.saveShadow(shadow, now.t);
    assert.is(store.fullSaves, 2);
    assert.is(store.journalBytes, 32);
    // The old journal put back beside the new generation names seq 1: ignored.
    await rm(path.join(dir, 'journal.bin'));
    await appendFile(path.join(dir, 'journal.bin'), journal);
    const loaded = await (await openShadowStore({ dir, log: silentLogger })).load();
    assert.equal(loaded.problems, []);
    assert.is(loaded.snapshot!.devices.length, 4);
    assert.not.match(loaded.source, /journal/);
  });
});


test('a save that would only move update times waits up to a minute; a value change is written at once', async () => {
  await withDir(async (dir) => {
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = fleet(now, 3, 5);
    poll(shadow, now, 3, 5, 0, 0);
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    await store.saveShadow(shadow, now.t);
    poll(shadow, now, 3, 5, 0, 0);
    await store.saveShadow(shadow, now.t);
    assert.is(store.deltaSaves, 1, 'the first delta is written');
    for (let i = 0; i < 5; i++) {
      poll(shadow, now, 3, 5, 0, 0); // constant values: only times move
      await store.saveShadow(shadow, now.t);
    }
    assert.is(store.deltaSaves, 1, 'times alone wait');
    shadow.SetDevicePoints('dev-2', { p0: 123 });
    await store.saveShadow(shadow, now.t);
    assert.is(store.deltaSaves, 2, 'a value is written at once');
    now.t += 61_000;
    poll(shadow, now, 3, 5, 0, 0);
    shadow.SetDevicePoints('dev-2', { p0: 123 });
    await store.saveShadow(shadow, now.t);
    assert.is(store.deltaSaves, 3, 'a minute later the times go too');
    const loaded = await (await openShadowStore({ dir, log: silentLogger })).load();
    same(loaded.snapshot!, takeSnapshot(shadow, now.t));
  });
});

test('full generations again and again, then a new device: every restore is exactly the last save', async () => {
  await withDir(async (dir) => {
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = fleet(now, 5, 5);
    poll(shadow, now, 5, 5, 4, 0);
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    await store.saveShadow(shadow, now.t);
    // Deltas until the journal is long enough for a second and a third full generation (same structure).
    for (let round = 1; store.fullSaves < 3 && round < 200; round++) {
      poll(shadow, now, 5, 5, 4, round);
      await store.saveShadow(shadow, now.t);
    }
    assert.is(store.fullSaves, 3);
    poll(shadow, now, 5, 5, 4, 500);
    await store.saveShadow(shadow, now.t);
    same((await (await openShadowStore({ dir, log: silentLogger })).load()).snapshot!, takeSnapshot(shadow, now.t));
    // A device deleted and another added: a new structure, and the deltas after it name the new ordinals.
    shadow.DeleteDevice('dev-1');
    shadow.AddDevice('dev-new', 'm', TTL, { points: Array.from({ length: 5 }, (_, i) => ({ name: `q${i}` })) });
    await store.saveShadow(shadow, now.t);
    assert.is(store.fullSaves, 4);
    for (let round = 600; round < 603; round++) {
      poll(shadow, now, 1, 5, 4, round); // dev-0 only
      shadow.SetDevicePoints('dev-new', { q0: round, q4: `t${round}` });
      shadow.SetDevicePoints('dev-4', { p2: round / 8 });
      await store.saveShadow(shadow, now.t);
    }
    assert.is(store.fullSaves, 4, 'the changes after the new device went to the journal');
    const loaded = await (await openShadowStore({ dir, log: silentLogger })).load();
    assert.equal(loaded.problems, []);
    assert.match(loaded.source, /\+ 3 journal deltas/);
    same(loaded.snapshot!, takeSnapshot(shadow, now.t));
  });
});

/** Descriptors of this process open on `file`. */
async function openOn(file: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir('/proc/self/fd')) if (await readlink(`/proc/self/fd/${fd}`).catch(() => '') === file) n++;
  return n;
}

test('close() releases the journal file: a store stopped and opened again leaks no descriptor', () =>
  withDir(async (dir) => {
    const now = { t: 1_700_000_000_000 };
    const shadow = fleet(now, 2, 5);
    const journal = path.join(dir, 'journal.bin');
    for (let round = 1; round <= 3; round++) {
      const store = await openShadowStore({ dir, log: silentLogger });
      await store.load();
      poll(shadow, now, 2, 5, 2, round);
      await store.saveShadow(shadow, now.t); // a full generation: the journal starts
      poll(shadow, now, 2, 5, 2, round + 10);
      await store.saveShadow(shadow, now.t);
      assert.is(await openOn(journal), 1, 'the journal is open while the store saves');
      await store.close();
      assert.is(await openOn(journal), 0, `round ${round}: closed`);
    }
  }));

test.run();
