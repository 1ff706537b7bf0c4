/**
 * The history store: buffered ingest, one append per flush to the current log, sealing of rolled logs,
 * retention and the disk cap. Everything that touches files runs on one serial queue, so flushes,
 * sealing and deletions never interleave; queries read a snapshot and run beside it.
 */
import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { AggFunction, TimedValue } from './buckets.js';
import { sealLog, type SealScratch } from './compact.js';
import { FlushBlocks } from './flush-blocks.js';
import { clampText, emptySamples } from './format.js';
import { type Snapshot, aggregate, readRaw } from './reader.js';
import { SeriesRegistry } from './registry.js';
import { SampleBuffer } from './sample-buffer.js';
import { fileName, loadSegments } from './recover.js';
import { writeAt } from './scan.js';
import { LazySealedSegment, SealedIndexCache } from './sealed-lazy.js';
import { LogSegment, MAX_LOG_BLOCKS, SealedSegment, type Segment } from './segment.js';
import type { HistoryOptions, HistoryStats, HistoryStore } from './types.js';
import { makeDir } from '../../util/make-dir.js';

const DAY = 86_400_000;
/** A seal that failed for want of space is tried again once space is back, or after this long. */
const NO_SPACE_RETRY = 60_000;
const noSpace = (err: unknown): boolean => ['ENOSPC', 'EDQUOT'].includes((err as NodeJS.ErrnoException)?.code ?? '');

export async function openHistory(opts: HistoryOptions): Promise<HistoryStore> {
  await makeDir(opts.dir);
  const registry = await SeriesRegistry.open(opts.dir, opts.maxSeries ?? 65_536, opts.log, opts.damage);
  const store = new FileHistoryStore(opts, registry);
  await store.load();
  return store;
}

class FileHistoryStore implements HistoryStore {
  private readonly log: HistoryOptions['log'];
  private readonly segmentBytes: number;
  private readonly span: number;
  /** Every segment but the active log, oldest first. */
  private sealed: Segment[] = [];
  private active: LogSegment | null = null;
  private activeFh: FileHandle | null = null;
  private nextSeq = 1;
  private cur: SampleBuffer;
  private spare: SampleBuffer;
  private pending: SampleBuffer | null = null;
  /** The flush's encoder, reused (flushes run one at a time on the queue). */
  private readonly blocks = new FlushBlocks();
  /** The buffer seals read their log into, kept (compact.ts); seals too run one at a time on the queue. */
  private readonly sealScratch: SealScratch = { buf: null };
  /** The few sealed segments' indexes kept in memory (sealed-lazy.ts). */
  private readonly indexes = new SealedIndexCache();
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private earlyFlush = false;
  private readonly failedSeals = new Set<number>();
  private lastDropWarn = -Infinity;
  /** Why the last flush failed (null after one succeeds): /health/shadow shows it. */
  private lastError: string | null = null;
  /** Clock time before which seals that failed with a full disk are not retried (0: retry now). */
  private sealRetryAt = 0;
  private counts = { dropped: 0, recorded: 0, flushes: 0, compactions: 0, truncated: 0, written: 0 };

  constructor(private readonly opts: HistoryOptions, private readonly registry: SeriesRegistry) {
    this.log = opts.log;
    const cap = opts.bufferSamples ?? 65_536;
    this.cur = new SampleBuffer(cap);
    this.spare = new SampleBuffer(cap);
    this.segmentBytes = opts.segmentBytes ?? Math.min(8 << 20, Math.max(64 << 10, Math.floor(opts.maxDisk / 32)));
    this.span = opts.segmentSpan ?? DAY;
  }

  /** Reads the directory back (recover.ts), resumes the newest log, starts the flush timer. */
  async load(): Promise<void> {
    const found = await loadSegments(this.opts.dir, this.log, this.opts.damage, (seg) => new LazySealedSegment(seg, this.indexes));
    this.sealed = found.segments;
    this.nextSeq = found.nextSeq;
    this.counts.truncated = found.truncatedBytes;
    const last = this.sealed[this.sealed.length - 1];
    if (last?.type === 'log') {
      this.sealed.pop();
      this.active = last;
      this.activeFh = await open(last.path, 'r+');
    }
    // Logs left from a crash mid-seal are sealed in the background.
    if (this.sealed.some((s) => s.type === 'log')) void this.enqueue(() => this.maintain());
    const every = this.opts.flushInterval ?? 10_000;
    if (every > 0) {
      this.timer = setInterval(() => void this.flush(), every);
      this.timer.unref();
    }
  }

  record(deviceId: string, point: string, time: number, value: number | string): void {
    try {
      if (this.closed || typeof deviceId !== 'string' || typeof point !== 'string' || !Number.isFinite(time)) {
        return this.drop();
      }
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) return this.drop();
      } else if (typeof value === 'string') {
        value = clampText(value);
      } else {
        return this.drop();
      }
      const id = this.registry.idFor(deviceId, point);
      if (id === undefined || !this.cur.push(id, Math.round(time), value)) return this.drop();
      this.counts.recorded++;
      // Three quarters full, not full: the last quarter takes what arrives while the flush waits its turn on the
      // queue (it swaps in the spare buffer as it starts). Not half: every flush writes a 28-byte block header per
      // series, which at a sample per second a point is 28 bytes per 5 samples at 5 s flushes, per 7.5 at 7.5 s.
      if (this.cur.length * 4 >= this.cur.capacity * 3 && !this.earlyFlush) {
        this.earlyFlush = true;
        void this.flush().finally(() => (this.earlyFlush = false));
      }
    } catch (err) {
      this.log.warn({ err }, 'history: sample not recorded');
    }
  }

  flush(): Promise<void> {
    if (this.closed) return this.queue;
    return this.enqueue(() => this.doFlush());
  }

  async close(): Promise<void> {
    if (this.closed) return this.queue;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
    this.closed = true;
    await this.enqueue(async () => {
      await this.activeFh?.close();
      this.activeFh = null;
    });
  }

  async deleteDevice(id: string): Promise<void> {
    if (!this.registry.deleteDevice(id).length) return;
    await this.enqueue(async () => {
      try {
        await this.registry.persist();
      } catch (err) {
        this.log.error({ err, device: id }, 'history: could not record a device deletion');
      }
    });
  }

  stats(): HistoryStats {
    const segs = this.allSegments();
    let oldest: number | null = null;
    for (const s of segs) if (s.minTs !== Infinity && (oldest === null || s.minTs < oldest)) oldest = s.minTs;
    return {
      bytesOnDisk: this.diskBytes(),
      segments: segs.length,
      bufferedSamples: this.cur.length + (this.pending?.length ?? 0),
      droppedSamples: this.counts.dropped,
      recordedSamples: this.counts.recorded,
      series: this.registry.size,
      flushes: this.counts.flushes,
      compactions: this.counts.compactions,
      truncatedBytes: this.counts.truncated,
      writtenBytes: this.counts.written,
      oldestTs: oldest,
      lastError: this.lastError,
    };
  }

  async readRaw(device: string, point: string, start: number, endEx: number, limit: number): Promise<TimedValue[]> {
    const series = this.registry.lookup(device, point);
    const from = Math.max(start, this.opts.clock.now() - this.opts.retention);
    if (series === undefined || from >= endEx) return [];
    return this.withSnapshot(series, from, endEx, (snap) => readRaw(snap, series, from, endEx, limit));
  }

  async aggregate(device: string, point: string, fn: AggFunction, interval: number, start: number,
    endEx: number): Promise<TimedValue[]> {
    const series = this.registry.lookup(device, point);
    const from = Math.max(start, this.opts.clock.now() - this.opts.retention);
    if (series === undefined || from >= endEx) return [];
    return this.withSnapshot(series, from, endEx, (snap) => aggregate(snap, series, fn, interval, from, endEx));
  }

  /** Freezes what a query may see (synchronously) and pins those files until it is done. */
  private async withSnapshot<T>(series: number, start: number, endEx: number, run: (s: Snapshot) => Promise<T>): Promise<T> {
    const segs = this.allSegments().filter((s) => s.overlaps(start, endEx))
      .map((seg) => ({ seg, upTo: seg.type === 'log' ? seg.blocks : 0 }));
    const mem = emptySamples();
    this.pending?.collect(series, start, endEx, mem);
    this.cur.collect(series, start, endEx, mem);
    for (const { seg } of segs) seg.refs++;
    try {
      return await run({ segs, mem });
    } finally {
      for (const { seg } of segs) this.release(seg);
    }
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const p = this.queue.then(fn);
    this.queue = p.catch((err: unknown) => this.log.error({ err }, 'history: background task failed'));
    return this.queue;
  }

  private async doFlush(): Promise<void> {
    const buf = this.cur;
    const n = buf.length;
    if (n) {
      // The next timed flush is a whole interval after this one: a timer tick just after an early flush would
      // write a second set of block headers for a few samples each.
      this.timer?.refresh();
      this.cur = this.spare;
      this.pending = buf;
    }
    try {
      await this.registry.persist(); // ids must be on disk before blocks that name them
      await this.maybeRoll(this.opts.clock.now()); // a new day starts a new segment before its first write
      if (n) await this.append(buf);
      if (this.lastError) this.log.info({ dropped: this.counts.dropped }, 'history: writing again');
      this.lastError = null;
    } catch (err) {
      this.counts.dropped += n;
      const message = err instanceof Error ? err.message : String(err);
      // Once per distinct failure: a full disk fails every flush.
      if (message !== this.lastError) this.log.error({ err, samples: n }, 'history: flush failed; samples dropped (counted) until it succeeds');
      this.lastError = message;
    } finally {
      if (n) {
        buf.clear();
        this.spare = buf;
        this.pending = null;
      }
    }
    try {
      await this.maintain();
    } catch (err) {
      this.log.error({ err }, 'history: retention/sealing failed');
    }
  }

  private async append(buf: SampleBuffer): Promise<void> {
    // In slices across turns (flush-blocks.ts): `buf` stays the pending buffer meanwhile, so queries see it.
    // The blocks reach the log in pieces as they are built; none is indexed before all are synced.
    const blocks = this.blocks;
    // The log is opened by the first write: a flush of series that all went writes nothing.
    const out: { to?: { seg: LogSegment; fh: FileHandle }; pos: number; written: number } = { pos: 0, written: 0 };
    const write = async (bytes: Buffer): Promise<void> => {
      if (!out.to) {
        // A flush that would take the log past its block limit starts the next log: the index's columns then
        // stop at the limit instead of doubling past it for one flush's blocks (a block per series, about).
        if (this.active && this.active.blocks > 0 && this.active.blocks + blocks.groups > MAX_LOG_BLOCKS) await this.roll();
        out.to = await this.ensureActive();
        out.pos = out.to.seg.bytes;
      }
      await writeAt(out.to.fh, bytes, out.pos + out.written);
      out.written += bytes.length;
    };
    try {
      await blocks.build(buf, (id) => this.registry.isLive(id), undefined, write);
      if (blocks.data.length) await write(blocks.data);
      if (!out.to) return;
      await out.to.fh.datasync();
    } catch (err) {
      await out.to?.fh.truncate(out.pos).catch(() => {});
      throw err;
    }
    const { seg } = out.to;
    const { pos, written } = out;
    // Index the blocks and release the pending buffer in one synchronous step: a query snapshot
    // must see each sample exactly once, either in memory or in the log.
    for (let i = 0; i < blocks.count; i++) {
      seg.addBlock(blocks.series[i]!, pos + blocks.offset[i]!, blocks.len[i]!, blocks.minTs[i]!, blocks.maxTsAt(i));
    }
    seg.bytes = pos + written;
    this.counts.written += written;
    this.pending = null;
    this.counts.flushes++;
    this.sealRetryAt = 0; // space is there again
  }

  private async ensureActive(): Promise<{ seg: LogSegment; fh: FileHandle }> {
    if (!this.active || !this.activeFh) {
      const seq = this.nextSeq++;
      const path = join(this.opts.dir, fileName(seq, 'log'));
      this.activeFh = await open(path, 'w+');
      this.active = new LogSegment(seq, path);
    }
    return { seg: this.active, fh: this.activeFh };
  }

  /** Roll, retention, cap, then sealing: in that order so no work is spent on data about to go. */
  private async maintain(): Promise<void> {
    const now = this.opts.clock.now();
    const horizon = now - this.opts.retention;
    await this.maybeRoll(now);
    for (const seg of [...this.sealed]) if (seg.maxTs < horizon) await this.retire(seg);
    // Keep one segment of room free: a seal appends its tail (lists, rollups, directory) before the next check.
    const budget = this.opts.maxDisk - this.segmentBytes;
    while (this.diskBytes() > budget && this.sealed.length) {
      const oldest = this.sealed[0]!;
      this.log.info({ file: oldest.path, bytes: oldest.bytes }, 'history: disk cap reached; oldest segment removed');
      await this.retire(oldest);
    }
    for (const seg of [...this.sealed]) {
      if (this.opts.clock.now() < this.sealRetryAt) break;
      if (seg.type === 'log' && !seg.retired && !this.failedSeals.has(seg.seq)) await this.seal(seg);
    }
  }

  /** Seals the log when full, from an earlier span (day) than now, or wholly expired. */
  private async maybeRoll(now: number): Promise<void> {
    const a = this.active;
    if (a && a.blocks > 0 && (a.bytes >= this.segmentBytes || a.blocks >= MAX_LOG_BLOCKS
      || Math.floor(a.minTs / this.span) < Math.floor(now / this.span) || a.maxTs < now - this.opts.retention)) {
      await this.roll();
    }
  }

  private async roll(): Promise<void> {
    const old = this.active;
    await this.activeFh?.close();
    this.activeFh = null;
    this.active = null;
    if (old) this.sealed.push(old);
  }

  private async seal(seg: LogSegment): Promise<void> {
    const out = join(this.opts.dir, fileName(seg.seq, 'seg'));
    try {
      const wrote = await sealLog(seg.path, seg.bytes, out, (id) => this.registry.isLive(id), this.sealScratch);
      this.counts.written += wrote;
      const sealed = wrote ? await SealedSegment.load(seg.seq, out) : null;
      if (wrote && !sealed) throw new Error('sealed segment failed verification');
      const i = this.sealed.indexOf(seg);
      // The newest data is the likeliest to be asked for: its index stays loaded until others push it out.
      if (sealed && i >= 0) this.sealed.splice(i, 0, new LazySealedSegment(sealed, this.indexes, true));
      await this.retire(seg);
      this.counts.compactions++;
    } catch (err) {
      // The log stays and is still queried raw. A full disk is retried when space is back; any other
      // failure not until restart.
      if (noSpace(err)) this.sealRetryAt = this.opts.clock.now() + NO_SPACE_RETRY;
      else this.failedSeals.add(seg.seq);
      this.log.error({ err, file: seg.path }, noSpace(err) ? 'history: sealing failed, disk full; retried when space is back' : 'history: sealing failed');
    }
  }

  private async retire(seg: Segment): Promise<void> {
    const i = this.sealed.indexOf(seg);
    if (i >= 0) this.sealed.splice(i, 1);
    seg.retired = true;
    if (seg instanceof LazySealedSegment) seg.forget();
    if (seg.refs === 0) await rm(seg.path, { force: true });
  }

  private release(seg: Segment): void {
    seg.refs--;
    if (seg.retired && seg.refs === 0) {
      rm(seg.path, { force: true }).catch((err: unknown) => this.log.warn({ err }, 'history: could not remove segment'));
    }
  }

  private allSegments(): Segment[] {
    return this.active ? [...this.sealed, this.active] : [...this.sealed];
  }

  private diskBytes(): number {
    let n = this.registry.bytes + (this.active?.bytes ?? 0);
    for (const s of this.sealed) n += s.bytes;
    return n;
  }

  private drop(): void {
    this.counts.dropped++;
    const now = this.opts.clock.now();
    if (now - this.lastDropWarn > 60_000) {
      this.lastDropWarn = now;
      this.log.warn({ dropped: this.counts.dropped }, 'history: samples dropped (buffer full, too many series or bad input)');
    }
  }
}
