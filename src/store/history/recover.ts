/**
 * Startup recovery of the history directory. Never fails the gateway's start for damaged data:
 * temp files are removed, torn log tails truncated to the last whole block, the tail of a seal cut short
 * removed from its log, damaged sealed segments dropped (each logged).
 */
import { open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../util/logger.js';
import { ignoreDamage, type DamageSink } from '../damage.js';
import { HEADER_BYTES, blockMaxTs } from './format.js';
import { readAt, scanBlocks } from './scan.js';
import { LogSegment, SEAL_MAGIC, SealedSegment, type Segment } from './segment.js';

const FILE_RE = /^(\d{10})\.(log|seg)$/;

export const fileName = (seq: number, ext: 'log' | 'seg'): string => `${String(seq).padStart(10, '0')}.${ext}`;

export interface Loaded {
  /** Oldest first; the last one, when a log, is the one to resume appending to. */
  segments: Segment[];
  nextSeq: number;
  truncatedBytes: number;
}

/** `keep` is what is kept of each sealed segment once checked (store.ts keeps it without its index: sealed-lazy.ts). */
export async function loadSegments(dir: string, log: Logger, damage: DamageSink = ignoreDamage,
  keep: (seg: SealedSegment) => Segment = (seg) => seg): Promise<Loaded> {
  const seqs = new Map<number, Set<string>>();
  for (const name of await readdir(dir)) {
    if (name.endsWith('.tmp')) {
      await rm(join(dir, name), { force: true });
      continue;
    }
    const m = FILE_RE.exec(name);
    if (!m) continue;
    const seq = Number(m[1]);
    if (!seqs.has(seq)) seqs.set(seq, new Set());
    seqs.get(seq)!.add(m[2]!);
  }
  const out: Loaded = { segments: [], nextSeq: 1, truncatedBytes: 0 };
  for (const seq of [...seqs.keys()].sort((a, b) => a - b)) {
    out.nextSeq = seq + 1;
    const kinds = seqs.get(seq)!;
    const logPath = join(dir, fileName(seq, 'log'));
    if (kinds.has('seg')) {
      const segPath = join(dir, fileName(seq, 'seg'));
      const seg = await SealedSegment.load(seq, segPath).catch(() => null);
      if (seg) {
        out.segments.push(keep(seg));
        // Sealing finished but the crash came before the log was removed.
        if (kinds.has('log')) await rm(logPath, { force: true });
        continue;
      }
      log.warn({ file: segPath }, 'history: sealed segment is damaged; removed');
      await damage.setAside(segPath, 'history sealed segment damaged: its samples are not served');
      await rm(segPath, { force: true });
      if (!kinds.has('log')) continue;
    }
    const { seg, truncated } = await recoverLog(seq, logPath, log, damage);
    out.segments.push(seg);
    out.truncatedBytes += truncated;
  }
  return out;
}

/** Rebuilds a log's block index and cuts a torn or garbage tail back to the last whole block. */
async function recoverLog(seq: number, path: string, log: Logger, damage: DamageSink): Promise<{ seg: LogSegment; truncated: number }> {
  const seg = new LogSegment(seq, path);
  const fh = await open(path, 'r+');
  try {
    const size = (await fh.stat()).size;
    const good = await scanBlocks(fh, 0, size, (buf, off, meta, at) => {
      seg.add({ kind: meta.kind, series: meta.series, offset: 0, len: HEADER_BYTES + meta.payloadLen,
        count: meta.count, minTs: meta.baseTs, maxTs: blockMaxTs(buf, off, meta) }, at);
    });
    if (good < size && (await readAt(fh, good, SEAL_MAGIC.length)).equals(SEAL_MAGIC)) {
      // A seal cut short before its rename (compact.ts): the log's blocks are whole; the tail goes, the log is
      // sealed again. Nothing was damaged, so nothing is set aside.
      await fh.truncate(good);
      await fh.sync();
      log.info({ file: path, bytes: size - good }, 'history: an interrupted seal\'s tail removed; the log is sealed again');
      seg.bytes = good;
      return { seg, truncated: 0 };
    }
    if (good < size) {
      // The original first: a garbage log would otherwise be cut to nothing with no trace of what it held.
      await damage.repaired(path, `history log: ${size - good} bytes after the last whole record cut${good === 0 ? ' (nothing readable: the log is empty now)' : ''}`, good === 0);
      await fh.truncate(good);
      await fh.sync();
      log.warn({ file: path, bytes: size - good }, 'history: torn tail truncated to the last whole record');
    }
    seg.bytes = good;
    return { seg, truncated: size - good };
  } finally {
    await fh.close();
  }
}
