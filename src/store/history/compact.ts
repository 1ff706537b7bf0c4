/**
 * Seals a rolled log: rewrites it grouped by series (time-ordered), adds per-minute and per-hour
 * rollups and a footer index. Written to a temp file, fsynced, then renamed, so a crash leaves either
 * the old log or the whole sealed segment, never half of one. Series deleted meanwhile are dropped.
 */
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { BlockWriter } from './block-writer.js';
import { HOUR, KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_STR, MINUTE, ROLLUP_FIELDS, decodeSamples, emptySamples, type Samples } from './format.js';
import { FOOTER_ENTRY, FOOT_MAGIC, SEG_MAGIC, TRAILER } from './segment.js';
import { scanBlocks, writeAt } from './scan.js';

interface SeriesSamples {
  num: Samples;
  str: Samples;
}

/** Returns false when the log held no live data (then nothing is written). */
export async function compactLog(logPath: string, outPath: string, isLive: (series: number) => boolean): Promise<boolean> {
  const bySeries = new Map<number, SeriesSamples>();
  const src = await open(logPath, 'r');
  try {
    const size = (await src.stat()).size;
    await scanBlocks(src, 0, size, (buf, off, meta) => {
      if (!isLive(meta.series) || (meta.kind !== KIND_NUM && meta.kind !== KIND_STR)) return;
      let s = bySeries.get(meta.series);
      if (!s) bySeries.set(meta.series, (s = { num: emptySamples(), str: emptySamples() }));
      decodeSamples(buf, off, meta, -Infinity, Infinity, meta.kind === KIND_NUM ? s.num : s.str);
    });
  } finally {
    await src.close();
  }
  if (!bySeries.size) return false;

  const tmp = `${outPath}.tmp`;
  const out = await open(tmp, 'w');
  try {
    await writeAt(out, SEG_MAGIC, 0);
    let pos = SEG_MAGIC.length;
    const writer = new BlockWriter();
    for (const series of [...bySeries.keys()].sort((a, b) => a - b)) {
      const s = bySeries.get(series)!;
      bySeries.delete(series); // free as we go: peak memory is one log, not two
      const num = sortByTime(s.num);
      const str = sortByTime(s.str);
      if (num.ts.length) writer.addNum(series, num.ts, num.val as number[]);
      if (str.ts.length) writer.addStr(series, str.ts, str.val as string[]);
      if (num.ts.length) {
        writer.addRollups(KIND_MINUTE, series, rollups(num.ts, num.val as number[], MINUTE));
        writer.addRollups(KIND_HOUR, series, rollups(num.ts, num.val as number[], HOUR));
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
export function sortByTime(s: Samples): Samples {
  let sorted = true;
  for (let i = 1; i < s.ts.length; i++) {
    if (s.ts[i]! < s.ts[i - 1]!) {
      sorted = false;
      break;
    }
  }
  if (sorted) return s;
  const idx = s.ts.map((_, i) => i).sort((a, b) => s.ts[a]! - s.ts[b]! || a - b);
  return { ts: idx.map((i) => s.ts[i]!), val: idx.map((i) => s.val[i]!) };
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
