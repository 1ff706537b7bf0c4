import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { restoreSnapshot } from '../../src/core/snapshot.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { startPersisting } from '../../src/store/persist-loop.js';
import type { ShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { ownMs, processStamp as stamp, type Stamp } from '../helpers/lateness.js';

const now = { t: Date.UTC(2024, 0, 1) };
const clock = { now: () => now.t, mono: () => now.t };

function makeShadow(): Shadow {
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: 60_000, clock });
  shadow.AddDevice('d1', 'm', 60_000, { points: [{ name: 'p' }] });
  shadow.AddDevice('d2', 'm', 60_000, { points: [{ name: 'p' }] });
  return shadow;
}

async function withStore(fn: (store: ShadowStore, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-persist-'));
  try {
    await fn(await openShadowStore({ dir, log: silentLogger }), dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function until(what: string, cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Counts saves reaching the store, to prove "only on change" from the outside. */
function counting(store: ShadowStore): { store: ShadowStore; saves: () => number } {
  let n = 0;
  const wrapped = Object.create(store) as ShadowStore;
  wrapped.saveShadow = (shadow, at) => {
    n++;
    return store.saveShadow(shadow, at);
  };
  return { store: wrapped, saves: () => n };
}

test('saves on the interval only when the shadow changed', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    const c = counting(store);
    const persister = startPersisting(shadow, c.store, 10, clock, silentLogger);
    try {
      await until('first save', () => persister.stats().saves === 1);
      await sleep(80); // ~8 ticks with nothing changed
      assert.is(c.saves(), 1);
      shadow.SetDevicePoint('d1', 'p', 42);
      await until('save after change', () => persister.stats().saves === 2);
      await sleep(60);
      assert.is(c.saves(), 2);
      const stats = persister.stats();
      assert.is(stats.lastError, null);
      assert.is(stats.seq, 1, 'the second save is a journal delta: the generation is still seq 1');
      assert.is(store.deltaSaves, 1);
      assert.is(stats.lastSaveAt, now.t);
      assert.ok(stats.lastStallMs >= 0 && stats.lastStallMs < stats.lastSaveMs + 1);
    } finally {
      await persister.stop();
    }
  }));

test('flush saves at once, waits for a save in flight, and never runs two at once', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    let inFlight = 0;
    let maxInFlight = 0;
    const slow = Object.create(store) as ShadowStore;
    slow.saveShadow = async (s, at) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        const saved = store.saveShadow(s, at); // encodes now, as the real one does
        await sleep(30);
        await saved;
      } finally {
        inFlight--;
      }
    };
    const persister = startPersisting(shadow, slow, 60_000, clock, silentLogger); // the timer never fires here
    try {
      shadow.SetDevicePoint('d1', 'p', 1);
      const first = persister.flush();
      shadow.SetDevicePoint('d1', 'p', 2);
      await Promise.all([first, persister.flush(), persister.flush()]);
      assert.is(maxInFlight, 1);
      assert.is(persister.stats().saves, 2, 'the second flush saved the change made during the first');
      const b = makeShadow();
      restoreSnapshot(b, (await store.load()).snapshot!, now.t);
      assert.is(b.GetDevicePoint('d1', 'p'), 2);
    } finally {
      await persister.stop();
    }
  }));

test('after DeleteDevice a flush removes the device from disk; stop makes a final save', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    shadow.SetDevicePoint('d2', 'p', 5);
    const persister = startPersisting(shadow, store, 60_000, clock, silentLogger);
    await persister.flush();
    shadow.DeleteDevice('d2');
    await persister.flush();
    const loaded = await store.load();
    assert.equal(loaded.snapshot!.devices.map((d) => d.id), ['d1']);
    shadow.SetDevicePoint('d1', 'p', 9);
    await persister.stop();
    const b = makeShadow();
    restoreSnapshot(b, (await store.load()).snapshot!, now.t);
    assert.is(b.GetDevicePoint('d1', 'p'), 9);
  }));

test('a failing save is recorded, never thrown, and retried', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    let fail = true;
    const flaky = Object.create(store) as ShadowStore;
    flaky.saveShadow = (s, at) => (fail ? Promise.reject(new Error('disk full')) : store.saveShadow(s, at));
    const persister = startPersisting(shadow, flaky, 10, clock, silentLogger);
    try {
      await persister.flush();
      assert.is(persister.stats().lastError, 'disk full');
      assert.is(persister.stats().saves, 0);
      fail = false;
      await until('retry on the next tick', () => persister.stats().saves === 1);
      assert.is(persister.stats().lastError, null);
    } finally {
      await persister.stop();
    }
  }));

/** Persists a change every 5 ms for `ms`. */
async function persistWhileChanging(shadow: Shadow, store: ShadowStore, intervalMs: number, ms: number): Promise<void> {
  const persister = startPersisting(shadow, store, intervalMs, clock, silentLogger);
  const changes = setInterval(() => shadow.SetDevicePoint('d1', 'p', Math.random()), 5);
  try {
    await sleep(ms);
  } finally {
    clearInterval(changes);
    await persister.stop();
  }
}

/**
 * A store whose saves take `ms` (timed from the snapshot to the end of the write), recording both ends with
 * the time this process's threads had waited for a CPU (the loop, and the pool threads that write and fsync
 * and the GC threads it may block on: beside a CPU hog and the rest of the suite, the loop's own wait alone
 * left a 156 ms lag against 115 unexplained): a loaded machine (a CI building an image beside the tests) keeps
 * the persister's timers from running by tens of ms, which no schedule can undo. The bounds below take that
 * wait off each span, so they stay what the schedule decides; the old fixed ticks still exceed them.
 */
function timed(store: ShadowStore, ms: number): { store: ShadowStore; saves: { start: Stamp; end: Stamp }[] } {
  const saves: { start: Stamp; end: Stamp }[] = [];
  const wrapped = Object.create(store) as ShadowStore;
  wrapped.saveShadow = async (s, at) => {
    const start = stamp();
    const saved = store.saveShadow(s, at);
    await sleep(ms);
    await saved;
    saves.push({ start, end: stamp() });
  };
  return { store: wrapped, saves };
}

test('the disk never lags the shadow by more than the interval, though a save takes 40% of it', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    const t = timed(store, 40);
    const begun = stamp();
    await persistWhileChanging(shadow, t.store, 100, 700);
    // A kill just before save i+1 is on disk restores snapshot i: that is the worst lag, end(i+1) - start(i).
    // A save the disk made slower than its 40 ms (an fsync behind other writers) is not the schedule's doing.
    const slow = (s: { start: Stamp; end: Stamp }): number => Math.max(0, ownMs(s.start, s.end) - 40);
    const lags = [ownMs(begun, t.saves[0]!.end) - slow(t.saves[0]!), ...t.saves.slice(1).map((s, i) => ownMs(t.saves[i]!.start, s.end) - slow(s))];
    assert.ok(t.saves.length >= 6, `${t.saves.length} saves`);
    // 15 ms over the interval; the old fixed ticks lagged 140 ms here.
    const bound = 115;
    assert.ok(Math.max(...lags) <= bound, `worst lag ${Math.max(...lags).toFixed(0)} ms (bound ${bound}), less CPU waits: ${lags.map((x) => x.toFixed(0)).join(' ')}`);
  }));

test('a save longer than the interval is followed at once by the next, never a whole tick later', () =>
  withStore(async (store) => {
    const shadow = makeShadow();
    const t = timed(store, 60);
    await persistWhileChanging(shadow, t.store, 50, 500);
    const idle = t.saves.slice(1).map((s, i) => ownMs(t.saves[i]!.end, s.start));
    assert.ok(idle.length >= 4, `${t.saves.length} saves`);
    assert.ok(Math.max(...idle) <= 15, `idle between saves, less CPU waits: ${idle.map((x) => x.toFixed(0)).join(' ')} ms (bound 15)`);
  }));

test.run();
