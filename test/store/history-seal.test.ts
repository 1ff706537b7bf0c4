/**
 * Sealing in place (compact.ts): the log's blocks stay byte for byte and become the segment's data, the seal
 * appends only block lists, the rollups that pay and a directory; the store's kept read buffer is reused from
 * seal to seal; a seal cut short before its rename is undone at the next start; segments of the first format
 * (the log rewritten grouped by series) are still read, and give the same values.
 */
import { appendFile, copyFile, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sealLog, type SealScratch } from '../../src/store/history/compact.js';
import { FlushBlocks } from '../../src/store/history/flush-blocks.js';
import { KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_NUM16, emptySamples } from '../../src/store/history/format.js';
import { SampleBuffer } from '../../src/store/history/sample-buffer.js';
import { SEAL_MAGIC, SealedSegment } from '../../src/store/history/segment.js';
import { FakeClock, open, withDir, within } from './history-helpers.js';
import { writeSealedV1 } from './history-seal-v1.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2024, 4, 1);

/** A log file of `flushes` flushes of `series` series, sample value = series * 1000 + flush. */
async function writeLog(path: string, series: number, flushes: number): Promise<number> {
  const parts: Buffer[] = [];
  const blocks = new FlushBlocks();
  for (let f = 0; f < flushes; f++) {
    const buf = new SampleBuffer(series);
    for (let s = 0; s < series; s++) buf.push(s, 1_000_000 + f * 1000 + s, s * 1000 + f);
    await blocks.build(buf, () => true);
    parts.push(Buffer.from(blocks.data)); // a copy: the builder's buffer is reused
  }
  const all = Buffer.concat(parts);
  await writeFile(path, all);
  return all.length;
}

async function valuesOf(path: string, series: number): Promise<number[]> {
  const seg = await SealedSegment.load(1, path);
  assert.ok(seg, `${path} is a whole sealed segment`);
  const out = emptySamples();
  await seg.readRaw(series, -Infinity, Infinity, out);
  return out.val as number[];
}

test('two seals through one kept buffer: both segments whole, the buffer reused', () => within(withDir(async (dir) => {
  const scratch: SealScratch = { buf: null };
  const size1 = await writeLog(join(dir, '1.log'), 50, 20);
  assert.ok(await sealLog(join(dir, '1.log'), size1, join(dir, '1.seg'), () => true, scratch));
  const first = scratch.buf;
  assert.ok(first, 'the seal kept its read buffer');
  const size2 = await writeLog(join(dir, '2.log'), 40, 10); // smaller: fits the kept buffer
  assert.ok(await sealLog(join(dir, '2.log'), size2, join(dir, '2.seg'), (s) => s !== 3, scratch));
  assert.is(scratch.buf, first, 'the second seal read into the same buffer');
  assert.equal(await valuesOf(join(dir, '1.seg'), 7), Array.from({ length: 20 }, (_, f) => 7000 + f));
  assert.equal(await valuesOf(join(dir, '2.seg'), 39), Array.from({ length: 10 }, (_, f) => 39000 + f));
  assert.equal(await valuesOf(join(dir, '2.seg'), 3), [], 'a series no longer live is not served');
  assert.equal(await valuesOf(join(dir, '2.seg'), 45), [], 'nothing of the first log leaks from the kept buffer');
  assert.equal((await readdir(dir)).sort(), ['1.seg', '2.seg'], 'each log became its segment (renamed, not copied)');
})));

test('in place: the log\'s bytes are the segment\'s first bytes; the seal adds a list entry per block and a directory', () => within(withDir(async (dir) => {
  const series = 200;
  const flushes = 30;
  const size = await writeLog(join(dir, '1.log'), series, flushes);
  const log = await readFile(join(dir, '1.log'));
  assert.ok(await sealLog(join(dir, '1.log'), size, join(dir, '1.seg'), () => true));
  const seg = await readFile(join(dir, '1.seg'));
  assert.ok(seg.subarray(0, size).equals(log), 'the blocks were not rewritten');
  assert.ok(seg.subarray(size, size + SEAL_MAGIC.length).equals(SEAL_MAGIC));
  // 30 samples a series: too few for rollups. 8 (magic) + 4 per block + 20 per series + 48 (trailer).
  assert.is(seg.length - size, 8 + 4 * series * flushes + 20 * series + 48);
  assert.equal(await valuesOf(join(dir, '1.seg'), 123), Array.from({ length: flushes }, (_, f) => 123_000 + f));
})));

test('a series with blocks of both record widths is one numeric series to the sealed segment', () => within(withDir(async (dir) => {
  const blocks = new FlushBlocks();
  const parts: Buffer[] = [];
  const t = 1_000_000;
  for (const times of [[t, t + 100], [t + 1000, t + 100_000]]) { // 10-byte records, then a span too wide for u16
    const buf = new SampleBuffer(4);
    for (const ts of times) buf.push(1, ts, ts - t);
    await blocks.build(buf, () => true);
    parts.push(Buffer.from(blocks.data));
  }
  const log = Buffer.concat(parts);
  await writeFile(join(dir, '1.log'), log);
  assert.ok(log[1] === KIND_NUM16 && log[parts[0]!.length + 1] === KIND_NUM, 'one block of each width');
  assert.ok(await sealLog(join(dir, '1.log'), log.length, join(dir, '1.seg'), () => true));
  assert.equal(await valuesOf(join(dir, '1.seg'), 1), [0, 100, 1000, 100_000]);
})));

test('rollups only where they pay: 1 Hz gets hour rollups, not minute ones; 10 Hz both; aggregates equal the raw ones', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { segmentSpan: DAY });
    try {
      for (let ms = 0; ms < 2 * 3_600_000; ms += 100) {
        store.record('d', 'fast', T0 + ms, Math.sin(ms / 7e5) * 100);
        if (ms % 1000 === 0) store.record('d', 'slow', T0 + ms, (ms / 1000) % 977);
        if (ms % 600_000 === 0) await store.flush();
      }
      clock.t = T0 + DAY;
      store.record('d', 'slow', clock.t, 0);
      await store.flush(); // yesterday's log is sealed
      const name = (await readdir(dir)).find((f) => f.endsWith('.seg'));
      const seg = await SealedSegment.load(1, join(dir, name!));
      assert.ok(seg);
      // Series ids in registration order, from 1: fast 1, slow 2.
      assert.ok(await seg.hasRollups(1, KIND_MINUTE) && await seg.hasRollups(1, KIND_HOUR), '600 samples a minute');
      assert.ok(!(await seg.hasRollups(2, KIND_MINUTE)) && await seg.hasRollups(2, KIND_HOUR), '60 a minute, 3,600 an hour');
      for (const point of ['fast', 'slow']) {
        const raw = await store.readRaw('d', point, T0, T0 + 2 * 3_600_000, 100_000);
        for (const interval of [60_000, 3_600_000, 90_000]) {
          const from = T0 + 12_345;
          const to = T0 + 2 * 3_600_000 - 6_789;
          const sums = new Map<number, number>();
          for (const r of raw) {
            if (r.ts < from || r.ts >= to) continue;
            const b = Math.floor(r.ts / interval) * interval;
            sums.set(b, (sums.get(b) ?? 0) + 1);
          }
          const rows = await store.aggregate('d', point, 'count', interval, from, to);
          assert.equal(rows.map((r) => [r.ts, r.value]), [...sums.entries()], `${point} count per ${interval} ms`);
          const max = await store.aggregate('d', point, 'max', interval, from, to);
          const first = max[0]!;
          const expect = Math.max(...raw.filter((r) => r.ts >= Math.max(from, first.ts) && r.ts < first.ts + interval).map((r) => r.value as number));
          assert.is(first.value, expect, `${point} max of the first bucket per ${interval} ms`);
        }
      }
    } finally {
      await store.close();
    }
  }));

test('a seal cut short before its rename: the next start removes its tail (no damage), values equal, sealed again', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    let store = await open(dir, clock, { segmentSpan: DAY });
    for (let f = 0; f < 5; f++) {
      for (let i = 0; i < 100; i++) store.record('d', 'p', T0 + f * 100 + i, f * 100 + i);
      await store.flush();
    }
    await store.close();
    const log = join(dir, (await readdir(dir)).find((f) => f.endsWith('.log'))!);
    const size = (await stat(log)).size;
    // The tail a seal appends, cut at every stage of its write: as if the power went before the rename.
    await copyFile(log, join(dir, 'copy'));
    assert.ok(await sealLog(join(dir, 'copy'), size, join(dir, 'copy.seg'), () => true));
    const tail = (await readFile(join(dir, 'copy.seg'))).subarray(size);
    await rm(join(dir, 'copy.seg'));
    for (const cut of [SEAL_MAGIC.length, Math.floor(tail.length / 2), tail.length]) {
      await appendFile(log, tail.subarray(0, cut));
      const damaged: string[] = [];
      const damage = { setAside: async (f: string) => void damaged.push(f), repaired: async (f: string) => void damaged.push(f) };
      store = await open(dir, clock, { segmentSpan: DAY, damage });
      try {
        assert.equal(damaged, [], 'an interrupted seal is not damage');
        assert.is(store.stats().truncatedBytes, 0);
        assert.is((await stat(log)).size, size, `tail cut at ${cut} removed`);
        const rows = await store.readRaw('d', 'p', T0, T0 + 1000, 1000);
        assert.equal(rows.map((r) => r.value), Array.from({ length: 500 }, (_, i) => i));
      } finally {
        await store.close();
      }
    }
    clock.t = T0 + DAY;
    store = await open(dir, clock, { segmentSpan: DAY });
    try {
      await store.flush();
      assert.is(store.stats().compactions, 1);
      assert.ok((await readdir(dir)).some((f) => f.endsWith('.seg')));
      const rows = await store.readRaw('d', 'p', T0, T0 + 1000, 1000);
      assert.equal(rows.map((r) => r.value), Array.from({ length: 500 }, (_, i) => i));
    } finally {
      await store.close();
    }
  }));

test('a data dir with segments of the first format: read after the change, values equal, beside new segments', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    let store = await open(dir, clock, { segmentSpan: DAY });
    // Day 1: two points at 1 Hz for two hours and a text point, left as a log, then sealed the old way.
    for (let s = 0; s < 7200; s++) {
      store.record('d', 'a', T0 + s * 1000, s);
      store.record('d', 'b', T0 + s * 1000, -s / 2);
      if (s % 900 === 0) store.record('d', 'mode', T0 + s * 1000, `m${s}`);
      if (s % 600 === 599) await store.flush();
    }
    await store.flush();
    await store.close();
    const log = (await readdir(dir)).find((f) => f.endsWith('.log'))!;
    const old = join(dir, log.replace('.log', '.seg'));
    await writeSealedV1(join(dir, log), old);
    await rm(join(dir, log));
    assert.ok((await readFile(old)).subarray(0, 8).equals(Buffer.from('SGHSEG01')));
    // Day 2 is written and sealed by the current code.
    clock.t = T0 + DAY;
    store = await open(dir, clock, { segmentSpan: DAY });
    for (let s = 0; s < 600; s++) store.record('d', 'a', T0 + DAY + s * 1000, 10_000 + s);
    await store.flush();
    clock.t = T0 + 2 * DAY;
    await store.flush();
    await store.close();
    const segs = (await readdir(dir)).filter((f) => f.endsWith('.seg')).sort();
    assert.is(segs.length, 2);
    assert.ok((await readFile(join(dir, segs[1]!))).subarray(0, 1)[0] === 0xb7, 'the new day sealed in place');

    store = await open(dir, clock, { segmentSpan: DAY });
    try {
      const a = await store.readRaw('d', 'a', T0, T0 + 2 * DAY, 100_000);
      assert.equal(a.map((r) => r.value), [...Array.from({ length: 7200 }, (_, s) => s), ...Array.from({ length: 600 }, (_, s) => 10_000 + s)]);
      const b = await store.readRaw('d', 'b', T0, T0 + DAY, 100_000);
      assert.equal(b.map((r) => r.value), Array.from({ length: 7200 }, (_, s) => -s / 2));
      const mode = await store.readRaw('d', 'mode', T0, T0 + DAY, 100);
      assert.equal(mode.map((r) => r.value), Array.from({ length: 8 }, (_, i) => `m${i * 900}`));
      // Hourly and per-minute aggregates from the old segment's rollups, the new one's and raw samples.
      const hourly = await store.aggregate('d', 'a', 'sum', 3_600_000, T0, T0 + 2 * DAY);
      assert.equal(hourly.map((r) => r.value), [
        (3599 * 3600) / 2, (3600 + 7199) * 3600 / 2, (10_000 * 2 + 599) * 600 / 2,
      ]);
      const minutes = await store.aggregate('d', 'b', 'min', 60_000, T0 + 30_000, T0 + 3 * 60_000);
      assert.equal(minutes.map((r) => r.value), [-29.5, -59.5, -89.5]);
    } finally {
      await store.close();
    }
  }));

test.run();
