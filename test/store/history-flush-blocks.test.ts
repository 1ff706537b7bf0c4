/**
 * The history flush's encoder (flush-blocks.ts): the blocks it builds hold exactly the buffered samples of
 * live series, grouped per series and kind in arrival order, and a big flush is built across turns of the
 * event loop instead of in one stretch.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FlushBlocks } from '../../src/store/history/flush-blocks.js';
import {
  HEADER_BYTES, KIND_NUM, KIND_NUM16, KIND_STR, NUM16_RECORD, NUM_RECORD, checkBlock, decodeSamples, emptySamples, parseHeader,
} from '../../src/store/history/format.js';
import { SampleBuffer } from '../../src/store/history/sample-buffer.js';
import { TurnBudget } from '../../src/util/turn-budget.js';

/** Every block of `data`, checked (CRC) and decoded, in file order. */
function decodeAll(data: Buffer): { series: number; kind: number; ts: number[]; val: (number | string)[] }[] {
  const out = [];
  for (let off = 0; off < data.length;) {
    const meta = parseHeader(data, off);
    assert.ok(meta, `a block header at ${off}`);
    assert.ok(checkBlock(data, off, meta), `CRC of the block at ${off}`);
    const s = emptySamples();
    decodeSamples(data, off, meta, -Infinity, Infinity, s);
    out.push({ series: meta.series, kind: meta.kind, ...s });
    off += HEADER_BYTES + meta.payloadLen;
  }
  return out;
}

test('blocks hold every live sample, per series and kind, in arrival order; dead series are left out', async () => {
  const buf = new SampleBuffer(64);
  const t0 = 1_700_000_000_000;
  buf.push(7, t0 + 20, 1.5);
  buf.push(3, t0 + 10, 'on');
  buf.push(7, t0 + 5, 2.5); // out of time order: kept as it arrived
  buf.push(3, t0 + 30, 42);
  buf.push(9, t0, 99); // not live
  buf.push(3, t0 + 40, 'off');
  const blocks = new FlushBlocks();
  await blocks.build(buf, (s) => s !== 9);
  const got = decodeAll(blocks.data);
  assert.equal(got, [
    { series: 3, kind: KIND_NUM16, ts: [t0 + 30], val: [42] },
    { series: 3, kind: KIND_STR, ts: [t0 + 10, t0 + 40], val: ['on', 'off'] },
    { series: 7, kind: KIND_NUM16, ts: [t0 + 20, t0 + 5], val: [1.5, 2.5] },
  ]);
  // The index columns name the same blocks, with their byte ranges and time spans.
  assert.is(blocks.count, 3);
  assert.equal([...blocks.series.subarray(0, 3)], [3, 3, 7]);
  assert.equal([...blocks.minTs.subarray(0, 3)], [t0 + 30, t0 + 10, t0 + 5]);
  assert.equal([0, 1, 2].map((i) => blocks.maxTsAt(i)), [t0 + 30, t0 + 40, t0 + 20]);
  assert.is(blocks.offset[0]! + blocks.len[0]!, blocks.offset[1]);
  assert.is(blocks.offset[2]! + blocks.len[2]!, blocks.data.length);
});

test('numbers spanning up to 65,535 ms get 10-byte records (u16 offsets), a wider span 12-byte ones', async () => {
  const buf = new SampleBuffer(8);
  const t0 = 1_700_000_000_000;
  buf.push(1, t0, 1.25);
  buf.push(1, t0 + 65_535, -2);
  buf.push(2, t0, 3);
  buf.push(2, t0 + 65_536, 4);
  const blocks = new FlushBlocks();
  await blocks.build(buf, () => true);
  assert.equal(decodeAll(blocks.data), [
    { series: 1, kind: KIND_NUM16, ts: [t0, t0 + 65_535], val: [1.25, -2] },
    { series: 2, kind: KIND_NUM, ts: [t0, t0 + 65_536], val: [3, 4] },
  ]);
  assert.equal([...blocks.len.subarray(0, 2)], [HEADER_BYTES + 2 * NUM16_RECORD, HEADER_BYTES + 2 * NUM_RECORD]);
  assert.equal([0, 1].map((i) => blocks.maxTsAt(i)), [t0 + 65_535, t0 + 65_536]);
});

test('reused: a second, smaller build replaces the first; times ~60 days apart are split into two blocks', async () => {
  const blocks = new FlushBlocks();
  const big = new SampleBuffer(20_000);
  for (let i = 0; i < 20_000; i++) big.push(i % 500, 1_000 + i, i);
  await blocks.build(big, () => true);
  assert.is(blocks.count, 500);
  const small = new SampleBuffer(4);
  const day = 86_400_000;
  small.push(1, 0, 1);
  small.push(1, 60 * day, 2);
  await blocks.build(small, () => true);
  const got = decodeAll(blocks.data);
  assert.equal(got, [
    { series: 1, kind: 1, ts: [0], val: [1] },
    { series: 1, kind: 1, ts: [60 * day], val: [2] },
  ]);
  assert.is(blocks.count, 2);
});

test('columns grown by a big flush (a start\'s first values) shrink back once flushes are small again', async () => {
  const blocks = new FlushBlocks();
  const first = new SampleBuffer(20_000);
  for (let i = 0; i < 20_000; i++) first.push(i, 1_000, i);
  await blocks.build(first, () => true);
  assert.is(blocks.count, 20_000);
  assert.ok(blocks.series.length >= 20_000);
  const steady = new SampleBuffer(3_000);
  for (let i = 0; i < 3_000; i++) steady.push(i % 1_000, 2_000 + i, i);
  await blocks.build(steady, () => true);
  await blocks.build(steady, () => true);
  // Sized from the flush before it: twice its 1,000 blocks, rounded up to a power of two.
  assert.is(blocks.series.length, 2_048);
  assert.is(blocks.count, 1_000);
  assert.equal([blocks.minTs[999], blocks.maxTsAt(999)], [2_999, 4_999]);
  const got = decodeAll(blocks.data);
  assert.is(got.length, 1_000);
  assert.is(got.reduce((n, b) => n + b.ts.length, 0), 3_000);
});

test('the buffer keeps every time exactly: near the first one, 30 days either side of it, a fraction of a ms', () => {
  const day = 86_400_000;
  const t0 = 1_700_000_000_000;
  const times = [t0, t0 + 1_500, t0 - 30 * day, t0 + 30 * day, t0 + 0.5, t0 - 2_000];
  const buf = new SampleBuffer(8);
  times.forEach((t, i) => buf.push(4, t, i % 2 ? `s${i}` : i));
  assert.equal(times.map((_, i) => buf.time(i)), times);
  const out = emptySamples();
  buf.collect(4, t0 - 31 * day, t0 + 31 * day, out);
  assert.equal(out.ts, times);
  assert.equal(out.val, [0, 's1', 2, 's3', 4, 's5']);
  buf.clear();
  buf.push(4, t0 + 7, 1);
  assert.is(buf.time(0), t0 + 7, 'a cleared buffer counts from its new first sample');
});

test('a fleet-sized flush is built across turns of the event loop, not in one stretch', async () => {
  const buf = new SampleBuffer(50_000);
  for (let i = 0; i < 50_000; i++) buf.push(i % 10_000, 1_000 + i, i);
  let turns = 0;
  let counting = true;
  const tick = (): void => {
    if (!counting) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  // A zero budget yields at every check: 10,000 series give ~150 turns to everything else.
  await new FlushBlocks().build(buf, () => true, new TurnBudget(0));
  counting = false;
  assert.ok(turns >= 100, `other work ran on ${turns} turns during the build`);
});

test('with a sink, a big flush is handed over in pieces whose bytes and offsets are those of one buffer', async () => {
  const buf = new SampleBuffer(50_000);
  for (let i = 0; i < 50_000; i++) buf.push(i % 10_000, 1_000 + i, i % 7 === 0 ? `t${i}` : i);
  const whole = new FlushBlocks();
  await whole.build(buf, (s) => s !== 3);
  const expected = Buffer.from(whole.data);
  const offsets = whole.offset.slice(0, whole.count);

  const spilled = new FlushBlocks();
  const pieces: Buffer[] = [];
  await spilled.build(buf, (s) => s !== 3, undefined, async (bytes) => void pieces.push(Buffer.from(bytes)));
  assert.ok(pieces.length >= 2, `${pieces.length} pieces handed over before the end`);
  const all = Buffer.concat([...pieces, spilled.data]);
  assert.is(spilled.bytes, all.length);
  assert.ok(all.equals(expected), 'the same bytes as built in one buffer');
  assert.equal(spilled.offset.slice(0, spilled.count), offsets, 'offsets count from the build\'s first byte');
  assert.is(decodeAll(all).reduce((n, b) => n + b.ts.length, 0), 50_000 - 5, 'every sample of a live series');
});

test.run();
