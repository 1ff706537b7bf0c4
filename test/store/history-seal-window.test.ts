/**
 * A seal reads its log through a fixed window (log-window.ts) and rolls numeric series up as the samples stream
 * past (rollup-stream.ts): a log several windows long with blocks across the windows' edges, a block longer than
 * the window, a series whose minute rollups make a block larger than the tail's 64 KiB stage (tail-cursor.ts), and
 * a series whose samples are out of time order in the log (read again and sorted) must seal to
 * the values and rollups their raw samples give. A flush that would take a log past its block limit starts the
 * next log (the log index stops at the limit).
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROLLUP_MIN_SAMPLES, rollups, sealLog, type SealScratch } from '../../src/store/history/compact.js';
import { FlushBlocks } from '../../src/store/history/flush-blocks.js';
import { HOUR, KIND_HOUR, KIND_MINUTE, MINUTE, ROLLUP_FIELDS, emptySamples } from '../../src/store/history/format.js';
import { WINDOW_BYTES } from '../../src/store/history/log-window.js';
import { STAGE_BYTES } from '../../src/store/history/tail-cursor.js';
import { SampleBuffer } from '../../src/store/history/sample-buffer.js';
import { MAX_LOG_BLOCKS, SealedSegment } from '../../src/store/history/segment.js';
import { FakeClock, open, withDir, within } from './history-helpers.js';

const T0 = Date.UTC(2024, 4, 1);
const BIG = 1; // one block longer than the window
const BACK = 2; // its second flush is earlier than its first
const MANY = 600; // series 10..609: many small blocks per flush
const LONG = 3; // 16 hours at 66 samples a minute: its minute rollups (960 records, 69 KB) outgrow a tail stage

type Sample = [series: number, ts: number, value: number];

/** Each flush's samples, written as a log of FlushBlocks (what the store appends). */
async function writeLog(path: string, flushes: Sample[][]): Promise<number> {
  const blocks = new FlushBlocks();
  const parts: Buffer[] = [];
  for (const samples of flushes) {
    const buf = new SampleBuffer(samples.length);
    for (const [s, ts, v] of samples) buf.push(s, ts, v);
    await blocks.build(buf, () => true);
    parts.push(Buffer.from(blocks.data));
  }
  const log = Buffer.concat(parts);
  await writeFile(path, log);
  return log.length;
}

function fleet(): Sample[][] {
  const flushes: Sample[][] = [];
  // The big block: 120,000 samples 10 ms apart (20 minutes, 12-byte records: 1.44 MB).
  flushes.push(Array.from({ length: 120_000 }, (_, i): Sample => [BIG, T0 + i * 10, Math.sin(i / 500) * 100]));
  flushes.push(Array.from({ length: 960 * 66 }, (_, i): Sample => [LONG, T0 + Math.floor(i / 66) * MINUTE + (i % 66) * 900, i % 1000]));
  for (let f = 0; f < 40; f++) {
    const samples: Sample[] = [];
    for (let s = 10; s < 10 + MANY; s++) for (let k = 0; k < 8; k++) samples.push([s, T0 + f * 8000 + k * 1000, s * 7 + f * 3 - k]);
    // BACK: flush 0 holds minutes 10..11, flush 1 minutes 0..1, then on from minute 12.
    const base = f === 0 ? 10 * MINUTE : f === 1 ? 0 : (10 + f) * MINUTE;
    for (let k = 0; k < 600; k++) samples.push([BACK, T0 + base + k * 200, (f * 600 + k) % 97]);
    flushes.push(samples);
  }
  return flushes;
}

test('a log of several windows, a block longer than the window, a series out of time order: values and rollups as the raw samples give', () =>
  within(withDir(async (dir) => {
    const flushes = fleet();
    const size = await writeLog(join(dir, '1.log'), flushes);
    assert.ok(size > 3 * WINDOW_BYTES, `the log spans several windows (${size} bytes)`);
    const scratch: SealScratch = { buf: null };
    assert.ok(await sealLog(join(dir, '1.log'), size, join(dir, '1.seg'), () => true, scratch));
    assert.ok(scratch.buf!.length < size / 2, 'the seal read through a window, not the whole log');
    assert.equal(await readdir(dir), ['1.seg']);
    const seg = await SealedSegment.load(1, join(dir, '1.seg'));
    assert.ok(seg);
    for (const s of [BIG, BACK, LONG, 10, 200, 609]) {
      const raw = flushes.flat().filter(([x]) => x === s).map(([, ts, v]) => [ts, v] as const)
        .map((p, i) => [...p, i] as const).sort((a, b) => a[0] - b[0] || a[2] - b[2]);
      const out = emptySamples();
      await seg.readRaw(s, -Infinity, Infinity, out);
      const got = out.ts.map((t, i) => [t, out.val[i]]).sort((a, b) => (a[0] as number) - (b[0] as number));
      assert.equal(got, raw.map(([t, v]) => [t, v]), `series ${s}: every sample back`);
      for (const [size, kind] of [[MINUTE, KIND_MINUTE], [HOUR, KIND_HOUR]] as const) {
        const want = rollups(raw.map(([t]) => t), raw.map(([, v]) => v), size);
        const pays = raw.length >= ROLLUP_MIN_SAMPLES * (want.length / ROLLUP_FIELDS);
        assert.equal([...await seg.readRollups(s, kind)], pays ? want : [], `series ${s}, ${size} ms rollups`);
      }
    }
    assert.ok(await seg.hasRollups(BACK, KIND_MINUTE) && await seg.hasRollups(BIG, KIND_MINUTE) && await seg.hasRollups(LONG, KIND_MINUTE), 'the cases under test have rollups');
    assert.ok((await seg.readRollups(LONG, KIND_MINUTE)).length * 8 > STAGE_BYTES, 'a rollup block larger than a tail stage');
  })));

test('a flush that would take the log past its block limit starts the next log; the full one is sealed', () =>
  within(withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { segmentSpan: 86_400_000, segmentBytes: 32 << 20, maxSeries: 65_536 });
    const series = 50_000; // three flushes of a block each: 150,000 blocks
    assert.ok(2 * series <= MAX_LOG_BLOCKS && 3 * series > MAX_LOG_BLOCKS);
    try {
      for (let f = 0; f < 3; f++) {
        for (let s = 0; s < series; s++) store.record('d', `p${s}`, T0 + f * 1000, s + f);
        await store.flush();
      }
      assert.equal((await readdir(dir)).filter((f) => /\.(log|seg)$/.test(f)).sort(), ['0000000001.seg', '0000000002.log'],
        'the first two flushes sealed, the third in a log of its own');
      assert.is(store.stats().compactions, 1);
      for (const s of [0, 31_337, series - 1]) {
        const rows = await store.readRaw('d', `p${s}`, T0, T0 + 10_000, 10);
        assert.equal(rows.map((r) => r.value), [s, s + 1, s + 2], `p${s}`);
      }
    } finally {
      await store.close();
    }
  }), 60_000));

test.run();
