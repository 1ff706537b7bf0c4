/**
 * Reading a segment file's blocks for a query: the file opened under either of its names (a log may be sealed
 * while a query reads it), and many blocks read with few, merged, concurrent reads.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { HEADER_BYTES, parseHeader } from './format.js';
import { readAt } from './scan.js';

/** Reads of nearby log blocks are merged when the gap between them is below this. */
export const MERGE_GAP = 64 * 1024;

/**
 * A query that took its snapshot before the log was sealed finds it renamed `.seg` (same bytes at the same
 * offsets); null when neither name is there any more (the segment expired or was evicted meanwhile).
 */
export async function openLog(path: string): Promise<FileHandle | null> {
  for (const name of [path, path.replace(/\.log$/, '.seg')]) {
    try {
      return await open(name, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return null;
}

/** Reads in flight at once for one list: a day of a 1 s point is ~150 blocks, and each read is a thread-pool round trip. */
const READS_IN_FLIGHT = 4;

/**
 * Calls `visit(buf, off)` for the block at each file offset (ascending), in list order. Blocks closer than
 * MERGE_GAP share one read; reads run READS_IN_FLIGHT at a time; a block longer than `guess` that ends a read
 * is read again whole, its length taken from its header.
 */
export async function readBlocks(fh: FileHandle, offsets: readonly number[], guess: number,
  visit: (buf: Buffer, off: number) => void): Promise<void> {
  const runs: { a: number; b: number; buf: Buffer | null }[] = [];
  for (let a = 0; a < offsets.length;) {
    let b = a;
    while (b + 1 < offsets.length && offsets[b + 1]! - offsets[b]! < MERGE_GAP && offsets[b + 1]! > offsets[b]!) b++;
    runs.push({ a, b, buf: null });
    a = b + 1;
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < runs.length) {
      const run = runs[next++]!;
      run.buf = await readAt(fh, offsets[run.a]!, offsets[run.b]! - offsets[run.a]! + guess);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, runs.length) }, worker));
  for (const { a, b, buf } of runs) {
    for (let k = a; k <= b; k++) {
      const rel = offsets[k]! - offsets[a]!;
      const meta = parseHeader(buf!, rel);
      if (!meta) continue;
      if (rel + HEADER_BYTES + meta.payloadLen <= buf!.length) visit(buf!, rel);
      else visit(await readAt(fh, offsets[k]!, HEADER_BYTES + meta.payloadLen), 0);
    }
  }
}
