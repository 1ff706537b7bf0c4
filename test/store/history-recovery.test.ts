import { appendFile, readdir, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FakeClock, open, withDir, within } from './history-helpers.js';

const T0 = Date.UTC(2024, 4, 1, 8, 0, 0);

async function onlyFile(dir: string, ext: string): Promise<string> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(ext));
  assert.is(files.length, 1, `one ${ext} file: ${files.join()}`);
  return join(dir, files[0]!);
}

test('torn tail: garbage appended to the log is cut off; every whole record survives', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 60_000);
    let store = await open(dir, clock);
    for (let flush = 0; flush < 3; flush++) {
      for (let i = 0; i < 10; i++) store.record('d', 'p', T0 + flush * 10 + i, flush * 10 + i);
      await within(store.flush());
    }
    await store.close();
    const log = await onlyFile(dir, '.log');
    const size = (await stat(log)).size;
    // Plausible-looking garbage: starts with the block magic, then noise.
    await appendFile(log, Buffer.concat([Buffer.from([0xb7, 1, 0, 0]), Buffer.alloc(97, 0x5a)]));
    store = await open(dir, clock);
    try {
      assert.is(store.stats().truncatedBytes, 101);
      const rows = await store.readRaw('d', 'p', T0, T0 + 1000, 1000);
      assert.equal(rows.map((r) => r.value), Array.from({ length: 30 }, (_, i) => i));
      assert.is((await stat(log)).size, size, 'file truncated back to the last whole block');
      // Appends after recovery land after the good data, not after the garbage.
      store.record('d', 'p', T0 + 500, 500);
      await store.flush();
    } finally {
      await store.close();
    }
    store = await open(dir, clock);
    try {
      const rows = await store.readRaw('d', 'p', T0, T0 + 1000, 1000);
      assert.is(rows.length, 31);
      assert.is(store.stats().truncatedBytes, 0);
    } finally {
      await store.close();
    }
  }));

test('torn tail: a block cut in half is dropped, the blocks before it are kept', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 60_000);
    let store = await open(dir, clock);
    const sizes: number[] = [];
    const log = async (): Promise<string> => onlyFile(dir, '.log');
    for (let flush = 0; flush < 3; flush++) {
      for (let i = 0; i < 10; i++) store.record('d', 'p', T0 + flush * 10 + i, flush * 10 + i);
      await store.flush();
      sizes.push((await stat(await log())).size);
    }
    await store.close();
    const cut = sizes[1]! + Math.floor((sizes[2]! - sizes[1]!) / 2);
    await truncate(await log(), cut);
    store = await open(dir, clock);
    try {
      assert.is(store.stats().truncatedBytes, cut - sizes[1]!);
      const rows = await store.readRaw('d', 'p', T0, T0 + 1000, 1000);
      assert.equal(rows.map((r) => r.value), Array.from({ length: 20 }, (_, i) => i));
    } finally {
      await store.close();
    }
  }));

test('a flipped bit inside a block is caught by the CRC (data before it kept)', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 60_000);
    let store = await open(dir, clock);
    for (let flush = 0; flush < 2; flush++) {
      store.record('d', 'p', T0 + flush, flush);
      await store.flush();
    }
    await store.close();
    const path = await onlyFile(dir, '.log');
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(path);
    bytes[bytes.length - 3]! ^= 0x10;
    await writeFile(path, bytes);
    store = await open(dir, clock);
    try {
      assert.equal((await store.readRaw('d', 'p', T0, T0 + 10, 10)).map((r) => r.value), [0]);
    } finally {
      await store.close();
    }
  }));

test('damaged sealed segment, leftover temp file and torn registry line never stop the store from opening', () =>
  withDir(async (dir) => {
    const DAY = 86_400_000;
    const clock = new FakeClock(T0);
    let store = await open(dir, clock, { segmentSpan: DAY });
    store.record('d', 'p', T0, 1);
    await store.flush();
    clock.t = T0 + DAY;
    store.record('d', 'p', T0 + DAY, 2);
    await store.flush(); // day 1's log is sealed
    await store.close();
    const seg = await onlyFile(dir, '.seg');
    await truncate(seg, (await stat(seg)).size - 5);
    await writeFile(join(dir, '0000000099.seg.tmp'), 'half written');
    await appendFile(join(dir, 'series.jsonl'), '{"id":7,"dev');
    store = await open(dir, clock, { segmentSpan: DAY });
    try {
      const rows = await store.readRaw('d', 'p', T0 - 1, T0 + DAY + 1, 10);
      assert.equal(rows.map((r) => r.value), [2], 'the damaged day is lost, the rest is served');
      const files = await readdir(dir);
      assert.not.ok(files.some((f) => f.endsWith('.tmp')), files.join());
      store.record('d', 'q', T0 + DAY, 3);
      await store.flush();
      assert.is((await store.readRaw('d', 'q', T0, T0 + DAY + 1, 10)).length, 1);
    } finally {
      await store.close();
    }
  }));

test('concurrent ingest, flushes, sealing and queries: every query sees each earlier sample exactly once', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { segmentBytes: 8 * 1024, bufferSamples: 50_000 });
    try {
      let recorded = 0;
      let done = false;
      const checks: Promise<unknown>[] = [];
      // Failures are collected, not left unhandled: an unhandled rejection would end the whole test process.
      const guard = (p: Promise<void>): Promise<unknown> => p.then(() => null, (err: unknown) => err);
      // A reader that queries back to back, so queries start at every stage of a flush or a seal.
      checks.push(guard((async () => {
        let reads = 0;
        while (!done) {
          const expect = recorded;
          const rows = await store.readRaw('d', 'p', T0, T0 + expect, 100_000);
          assert.is(rows.length, expect, `back-to-back read ${reads}`);
          rows.forEach((r, i) => assert.is(r.value, i));
          reads++;
          await new Promise((r) => setImmediate(r)); // an empty answer resolves at once: yield to the writer
        }
        assert.ok(reads > 10, `reads ${reads}`);
      })()));
      for (let round = 0; round < 150; round++) {
        for (let i = 0; i < 40; i++) {
          store.record('d', 'p', T0 + recorded, recorded);
          store.record('d', 'noise', T0 + recorded, -recorded);
          recorded++;
        }
        clock.t = T0 + recorded;
        if (round % 3 === 0) void store.flush();
        // Now and then wait for the disk, so sealing really runs while queries are in flight.
        if (round % 10 === 9) await within(store.flush());
        if (round % 2 === 0) {
          const expect = recorded;
          checks.push(guard(store.readRaw('d', 'p', T0, T0 + expect, 100_000).then((rows) => {
            assert.is(rows.length, expect, `round ${round}`);
            rows.forEach((r, i) => assert.is(r.value, i));
          })));
          checks.push(guard(store.aggregate('d', 'p', 'count', 60_000, T0, T0 + expect).then((rows) => {
            assert.is(rows.reduce((a, r) => a + (r.value as number), 0), expect, `count at round ${round}`);
          })));
        }
        await new Promise((r) => setImmediate(r));
      }
      done = true;
      const failure = (await within(Promise.all(checks), 20_000)).find((e) => e !== null);
      if (failure) throw failure;
      await within(store.flush());
      assert.ok(store.stats().compactions >= 5, JSON.stringify(store.stats()));
      assert.is((await store.readRaw('d', 'p', T0, T0 + recorded, 100_000)).length, recorded);
    } finally {
      await store.close();
    }
  }));


test('a sealed log groups samples by series and kind, each group in time order, ties in arrival order', async () => {
  const { groupOrder } = await import('../../src/store/history/group-order.js');
  const { KIND_NUM, KIND_STR } = await import('../../src/store/history/format.js');
  const series = [7, 3, 7, 3, 7, 3, 7];
  const kinds = [KIND_NUM, KIND_NUM, KIND_NUM, KIND_STR, KIND_NUM, KIND_NUM, KIND_NUM];
  const times = [30, 10, 20, 5, 20, 11, 40];
  // 3/num: 1 (10), 5 (11); 3/str: 3; 7/num by time: 2 (20), 4 (20, arrived later), 0 (30), 6 (40).
  assert.equal([...groupOrder(series, kinds, times)], [1, 5, 3, 2, 4, 0, 6]);
});

test.run();
