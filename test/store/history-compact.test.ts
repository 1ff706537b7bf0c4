/**
 * Sealing (compact.ts) with the store's kept read buffer: two logs sealed one after the other through the
 * same scratch give the same segments as without it, and the second seal reads into the first one's buffer.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compactLog, type SealScratch } from '../../src/store/history/compact.js';
import { FlushBlocks } from '../../src/store/history/flush-blocks.js';
import { emptySamples } from '../../src/store/history/format.js';
import { SampleBuffer } from '../../src/store/history/sample-buffer.js';
import { SealedSegment } from '../../src/store/history/segment.js';
import { withDir, within } from './history-helpers.js';

/** A log file of `flushes` flushes of `series` series, sample value = series * 1000 + flush. */
async function writeLog(path: string, series: number, flushes: number): Promise<void> {
  const parts: Buffer[] = [];
  const blocks = new FlushBlocks();
  for (let f = 0; f < flushes; f++) {
    const buf = new SampleBuffer(series);
    for (let s = 0; s < series; s++) buf.push(s, 1_000_000 + f * 1000 + s, s * 1000 + f);
    await blocks.build(buf, () => true);
    parts.push(Buffer.from(blocks.data)); // a copy: the builder's buffer is reused
  }
  await writeFile(path, Buffer.concat(parts));
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
  await writeLog(join(dir, '1.log'), 50, 20);
  assert.ok(await compactLog(join(dir, '1.log'), join(dir, '1.seg'), () => true, scratch));
  const first = scratch.buf;
  assert.ok(first, 'the seal kept its read buffer');
  await writeLog(join(dir, '2.log'), 40, 10); // smaller: fits the kept buffer
  assert.ok(await compactLog(join(dir, '2.log'), join(dir, '2.seg'), (s) => s !== 3, scratch));
  assert.is(scratch.buf, first, 'the second seal read into the same buffer');
  assert.equal(await valuesOf(join(dir, '1.seg'), 7), Array.from({ length: 20 }, (_, f) => 7000 + f));
  assert.equal(await valuesOf(join(dir, '2.seg'), 39), Array.from({ length: 10 }, (_, f) => 39000 + f));
  assert.equal(await valuesOf(join(dir, '2.seg'), 3), [], 'a series no longer live is dropped');
  assert.equal(await valuesOf(join(dir, '2.seg'), 45), [], 'nothing of the first log leaks from the kept buffer');
})));

test.run();
