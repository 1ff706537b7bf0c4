/**
 * Seals a rolled log: rewrites it grouped by series (time-ordered), adds per-minute and per-hour
 * rollups and a footer index. Written to a temp file, fsynced, then renamed, so a crash leaves either
 * the old log or the whole sealed segment, never half of one. Series deleted meanwhile are dropped.
 */
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { BlockWriter } from './block-writer.js';
import { HEADER_BYTES, HOUR, KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_STR, MINUTE, ROLLUP_FIELDS, checkBlock, decodeSamples, emptySamples, parseHeader, type Samples } from './format.js';
import { FOOTER_ENTRY, FOOT_MAGIC, SEG_MAGIC, TRAILER } from './segment.js';
import { readAt, writeAt } from './scan.js';

/** Returns false when the log held no live data (then nothing is written). */
export async function compactLog(logPath: string, outPath: string, isLive: (series: number) => boolean): Promise<boolean> {
  // The log is read whole (≤ segmentBytes) and only its blocks are indexed; each series' samples are decoded
  // when that series is written. Decoding the whole log first (an object and arrays per series, then flat
  // arrays of every sample) was a 30–100 MB heap spike at each seal of a 1,000 × 100 fleet (issue 16).
  const src = await open(logPath, 'r');
  let log: Buffer;
  try {
    log = await readAt(src, 0, (await src.stat()).size);
  } finally {
    await src.close();
  }
  const offsets: number[] = [];
  const series: number[] = [];
  const kinds: number[] = [];
  for (let pos = 0; pos + HEADER_BYTES <= log.length;) {
    const meta = parseHeader(log, pos);
    if (!meta || pos + HEADER_BYTES + meta.payloadLen > log.length || !checkBlock(log, pos, meta)) break; // a torn tail
    if (isLive(meta.series) && (meta.kind === KIND_NUM || meta.kind === KIND_STR)) {
      offsets.push(pos);
      series.push(meta.series);
      kinds.push(meta.kind);
    }
    pos += HEADER_BYTES + meta.payloadLen;
  }
  if (!offsets.length) return false;
  // Blocks grouped by (series, kind), in the order they were written.
  const order = groupOrder(series, kinds, offsets);

  const tmp = `${outPath}.tmp`;
  const out = await open(tmp, 'w');
  try {
    await writeAt(out, SEG_MAGIC, 0);
    let pos = SEG_MAGIC.length;
    const writer = new BlockWriter();
    for (let r = 0; r < order.length;) {
      const s = series[order[r]!]!;
      const kind = kinds[order[r]!]!;
      const samples = emptySamples();
      for (; r < order.length && series[order[r]!] === s && kinds[order[r]!] === kind; r++) {
        const off = offsets[order[r]!]!;
        decodeSamples(log, off, parseHeader(log, off)!, -Infinity, Infinity, samples);
      }
      const { ts, val } = sortByTime(samples);
      if (kind === KIND_NUM) {
        writer.addNum(s, ts, val as number[]);
        writer.addRollups(KIND_MINUTE, s, rollups(ts, val as number[], MINUTE));
        writer.addRollups(KIND_HOUR, s, rollups(ts, val as number[], HOUR));
      } else {
        writer.addStr(s, ts, val as string[]);
      }
      if (writer.pending >= 1024 * 1024) {
        const chunk = writer.take();
        await writeAt(out, chunk, pos);
        pos += chunk.length;
      }
    }
    const rest = writer.take();
    await writeAt(out, rest, pos);
    pos += rest.length;

    const foot = Buffer.alloc(writer.entries.length * FOOTER_ENTRY);
    writer.entries.forEach((e, i) => {
      const p = i * FOOTER_ENTRY;
      foot.writeUInt32LE(e.series, p);
      foot.writeUInt32LE(e.kind, p + 4);
      foot.writeDoubleLE(SEG_MAGIC.length + e.offset, p + 8);
      foot.writeUInt32LE(e.len, p + 16);
      foot.writeUInt32LE(e.count, p + 20);
      foot.writeDoubleLE(e.minTs, p + 24);
      foot.writeDoubleLE(e.maxTs, p + 32);
    });
    const trailer = Buffer.alloc(TRAILER);
    trailer.writeDoubleLE(pos, 0);
    trailer.writeUInt32LE(writer.entries.length, 8);
    trailer.writeUInt32LE(crc32(foot), 12);
    FOOT_MAGIC.copy(trailer, 16);
    await writeAt(out, Buffer.concat([foot, trailer]), pos);
    await out.sync();
  } catch (err) {
    await out.close().catch(() => {});
    await rm(tmp, { force: true });
    throw err;
  }
  await out.close();
  await rename(tmp, outPath);
  await syncDir(dirname(outPath));
  return true;
}

/**
 * Indices grouped by (series, kind), each group ordered by `times` (ties in arrival order). A counting
 * sort on the group key (O(n), typed arrays) and a sort only of the groups that arrived out of time order: a
 * comparison sort of a whole 8 MiB log (~600k samples) held the event loop for ~200 ms (issue 16's stall goal
 * is 50 ms).
 */
export function groupOrder(series: readonly number[], kinds: readonly number[], times: readonly number[]): Uint32Array {
  const n = series.length;
  let maxKey = 0;
  const keys = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const k = series[i]! * 2 + (kinds[i] === KIND_STR ? 1 : 0);
    keys[i] = k;
    if (k > maxKey) maxKey = k;
  }
  const start = new Uint32Array(maxKey + 2);
  for (let i = 0; i < n; i++) start[keys[i]! + 1]!++;
  for (let k = 1; k < start.length; k++) start[k]! += start[k - 1]!;
  const order = new Uint32Array(n);
  const next = start.slice(0, maxKey + 1);
  for (let i = 0; i < n; i++) order[next[keys[i]!]!++] = i;
  for (let k = 0; k <= maxKey; k++) {
    const a = start[k]!;
    const b = start[k + 1]!;
    let sorted = true;
    for (let j = a + 1; j < b; j++) {
      if (times[order[j]!]! < times[order[j - 1]!]!) {
        sorted = false;
        break;
      }
    }
    if (!sorted) order.subarray(a, b).sort((x, y) => times[x]! - times[y]! || x - y);
  }
  return order;
}

/** The rename is durable only once the directory entry is on disk. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the data file itself is already synced.
  } finally {
    await fh.close();
  }
}

/** Stable sort by time (equal times keep arrival order); a no-op for the usual already-ordered case. */
function sortByTime(s: Samples): Samples {
  for (let i = 1; i < s.ts.length; i++) {
    if (s.ts[i]! < s.ts[i - 1]!) {
      const idx = s.ts.map((_, k) => k).sort((a, b) => s.ts[a]! - s.ts[b]! || a - b);
      return { ts: idx.map((k) => s.ts[k]!), val: idx.map((k) => s.val[k]!) };
    }
  }
  return s;
}

/** Rollup records for time-ordered samples: bucketStart, count, min, max, sum, first, last, firstTs, lastTs. */
export function rollups(ts: readonly number[], val: readonly number[], size: number): number[] {
  const out: number[] = [];
  let bucket = NaN;
  let count = 0, min = 0, max = 0, sum = 0, first = 0, last = 0, firstTs = 0, lastTs = 0;
  const emit = (): void => {
    out.push(bucket, count, min, max, sum, first, last, firstTs, lastTs);
  };
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!;
    const v = val[i]!;
    const b = Math.floor(t / size) * size;
    if (b !== bucket) {
      if (count) emit();
      bucket = b;
      count = 0;
      min = Infinity;
      max = -Infinity;
      sum = 0;
      first = v;
      firstTs = t;
    }
    count++;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    last = v;
    lastTs = t;
  }
  if (count) emit();
  if (out.length % ROLLUP_FIELDS !== 0) throw new Error('rollup record size mismatch');
  return out;
}
