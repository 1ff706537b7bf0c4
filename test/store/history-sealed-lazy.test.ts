/**
 * Sealed segments keep no index in memory beyond the last few used (sealed-lazy.ts): a query over many sealed
 * segments still sees every sample, raw and aggregated, before and after a reopen, and the cache never holds
 * more than its limit.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emptySamples } from '../../src/store/history/format.js';
import { LazySealedSegment, SealedIndexCache } from '../../src/store/history/sealed-lazy.js';
import { SealedSegment } from '../../src/store/history/segment.js';
import { FakeClock, open, withDir, within } from './history-helpers.js';

const T0 = Date.UTC(2024, 0, 1);

test('queries across many sealed segments see every sample; at most the limit of indexes loaded', () => within(withDir(async (dir) => {
  const clock = new FakeClock(T0);
  let store = await open(dir, clock, { segmentBytes: 16 << 10 });
  const minutes = 180;
  for (let m = 0; m < minutes; m++) {
    clock.t = T0 + m * 60_000;
    for (let d = 0; d < 20; d++) store.record(`dev-${d}`, 'p', clock.t, m * 100 + d);
    await store.flush();
  }
  const sealedFiles = (await readdir(dir)).filter((f) => f.endsWith('.seg'));
  assert.ok(sealedFiles.length >= 6, `${sealedFiles.length} sealed segments`);
  const expect = Array.from({ length: minutes }, (_, m) => m * 100 + 7);
  const check = async (): Promise<void> => {
    const raw = await store.readRaw('dev-7', 'p', T0, T0 + minutes * 60_000, 10_000);
    assert.equal(raw.map((r) => r.value), expect);
    const hourly = await store.aggregate('dev-7', 'p', 'max', 3_600_000, T0, T0 + minutes * 60_000);
    assert.equal(hourly.map((r) => r.value), [59 * 100 + 7, 119 * 100 + 7, 179 * 100 + 7]);
  };
  await check();
  await store.close();
  store = await open(dir, clock, { segmentBytes: 16 << 10 });
  await check();
  await store.close();

  const cache = new SealedIndexCache(2);
  const segs: LazySealedSegment[] = [];
  for (const [i, f] of sealedFiles.sort().entries()) segs.push(new LazySealedSegment((await SealedSegment.load(i, join(dir, f)))!, cache));
  assert.is(cache.size, 0, 'nothing loaded until asked');
  // dev-7 was registered eighth: series 8. Through a cache of two, every segment answers as its full index does.
  for (const seg of segs) {
    const lazy = emptySamples();
    await seg.readRaw(8, -Infinity, Infinity, lazy);
    const full = emptySamples();
    await (await SealedSegment.load(seg.seq, seg.path))!.readRaw(8, -Infinity, Infinity, full);
    assert.ok(lazy.val.length > 0);
    assert.equal(lazy.val, full.val);
    assert.ok(lazy.val.every((v) => (v as number) % 100 === 7), 'dev-7\'s values');
    assert.ok(cache.size <= 2);
  }
})));

test('a sealed segment keeps its directory on disk: every series of many pages is found, absent ones are empty', () => within(withDir(async (dir) => {
  const clock = new FakeClock(T0);
  const store = await open(dir, clock, { segmentBytes: 1 << 20 });
  // 700 series, text ones among them (a text and a number kind each for every 7th): entries run over many
  // 64-entry pages, and a series' entries straddle page ends.
  const series = 700;
  for (let m = 0; m < 5; m++) {
    clock.t = T0 + m * 60_000;
    for (let d = 0; d < series; d++) {
      store.record(`dev-${d}`, 'p', clock.t, m * 1000 + d);
      if (d % 7 === 0) store.record(`dev-${d}`, 'p', clock.t + 1, `t${m}`);
    }
    await store.flush();
  }
  await store.close();
  // A new day's first flush rolls the log; the seal runs after it.
  const again = await open(dir, clock, { segmentBytes: 1 << 20 });
  clock.t = T0 + 86_400_000;
  again.record('dev-0', 'p', clock.t, 1);
  await again.flush();
  const segs = (await readdir(dir)).filter((f) => f.endsWith('.seg'));
  assert.is(segs.length, 1);
  const seg = (await SealedSegment.load(1, join(dir, segs[0]!)))!;
  for (let d = 0; d < series; d++) {
    const got = emptySamples();
    await seg.readRaw(d + 1, -Infinity, Infinity, got);
    const nums = [0, 1, 2, 3, 4].map((m) => m * 1000 + d);
    const texts = d % 7 === 0 ? [0, 1, 2, 3, 4].map((m) => `t${m}`) : [];
    assert.equal(got.val.filter((v) => typeof v === 'number'), nums, `series ${d + 1}`);
    assert.equal(got.val.filter((v) => typeof v === 'string'), texts, `series ${d + 1} text`);
  }
  for (const absent of [0, series + 1, 10 * series]) {
    const got = emptySamples();
    await seg.readRaw(absent, -Infinity, Infinity, got);
    assert.is(got.val.length, 0, `series ${absent}`);
  }
  await again.close();
})));

test.run();
