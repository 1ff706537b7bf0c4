/**
 * A bounded FIFO of messages on disk (the bridge's queue while the upstream is away).
 * Segment files `seg-<n>.jsonl`, one JSON record per line; appends are buffered and written every
 * `flushMs` (and before a read). When the bytes on disk pass `maxBytes` the oldest segment is dropped
 * and its messages counted: a segment is at most 1/16 of the bound, so a drop loses the oldest ~6 %.
 * A segment is deleted only after the consumer acknowledged all of it: at-least-once across a crash.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

export interface QueuedMessage {
  t: string;
  p: string;
  r: boolean;
}

interface Segment {
  n: number;
  path: string;
  bytes: number;
  count: number;
}

export class DiskQueue {
  private readonly segments: Segment[] = [];
  private pending: string[] = [];
  private pendingBytes = 0;
  private nextN = 1;
  private timer: NodeJS.Timeout | null = null;
  readonly segmentMax: number;
  private droppedCount = 0;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly flushMs = 100,
  ) {
    this.segmentMax = Math.max(256, Math.min(4 * 1024 * 1024, Math.floor(maxBytes / 16)));
  }

  /** Finds segments left by a previous run (a crash or a stop while the upstream was away). */
  load(): void {
    mkdirSync(this.dir, { recursive: true });
    const names = readdirSync(this.dir).filter((f) => /^seg-\d+\.jsonl$/.test(f));
    const found = names.map((f) => Number(f.slice(4, -6))).sort((a, b) => a - b);
    for (const n of found) {
      const path = this.segPath(n);
      const bytes = statSync(path).size;
      const text = readFileSync(path, 'utf8');
      let count = 0;
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) count++;
      this.segments.push({ n, path, bytes, count });
      this.nextN = n + 1;
    }
  }

  private segPath(n: number): string {
    return join(this.dir, `seg-${String(n).padStart(8, '0')}.jsonl`);
  }

  get bytes(): number {
    return this.segments.reduce((s, g) => s + g.bytes, 0) + this.pendingBytes;
  }

  get length(): number {
    return this.segments.reduce((s, g) => s + g.count, 0) + this.pending.length;
  }

  get dropped(): number {
    return this.droppedCount;
  }

  push(msg: QueuedMessage): void {
    const line = `${JSON.stringify(msg)}\n`;
    this.pending.push(line);
    this.pendingBytes += Buffer.byteLength(line);
    if (this.pendingBytes >= this.segmentMax) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
    this.enforceBound();
  }

  /** Writes buffered lines into the tail segment(s). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return;
    let tail = this.segments.at(-1);
    let chunk = '';
    let chunkBytes = 0;
    let chunkCount = 0;
    const write = (): void => {
      if (!tail || chunkCount === 0) return;
      appendFileSync(tail.path, chunk);
      tail.bytes += chunkBytes;
      tail.count += chunkCount;
      chunk = '';
      chunkBytes = 0;
      chunkCount = 0;
    };
    for (const line of this.pending) {
      const b = Buffer.byteLength(line);
      if (!tail || (tail.bytes + chunkBytes > 0 && tail.bytes + chunkBytes + b > this.segmentMax)) {
        write();
        const n = this.nextN++;
        tail = { n, path: this.segPath(n), bytes: 0, count: 0 };
        this.segments.push(tail);
      }
      chunk += line;
      chunkBytes += b;
      chunkCount++;
    }
    write();
    this.pending = [];
    this.pendingBytes = 0;
  }

  private enforceBound(): void {
    while (this.bytes > this.maxBytes) {
      if (this.segments.length === 0 || (this.segments.length === 1 && this.pending.length > 0)) this.flush();
      // Keep the newest segment: dropping the very data just written would defeat the queue.
      if (this.segments.length <= 1) return;
      const old = this.segments.shift()!;
      this.droppedCount += old.count;
      try {
        unlinkSync(old.path);
      } catch {
        /* already gone */
      }
    }
  }

  /**
   * Takes the oldest segment out of the bound accounting and returns its messages and an `ack` that deletes
   * its file. Buffered lines are flushed first so nothing jumps the queue.
   */
  take(): { messages: QueuedMessage[]; ack(): void } | null {
    this.flush();
    const seg = this.segments.shift();
    if (!seg) return null;
    let messages: QueuedMessage[] = [];
    try {
      messages = readFileSync(seg.path, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0)
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as QueuedMessage];
          } catch {
            return []; // a line torn by a power cut
          }
        });
    } catch {
      messages = [];
    }
    return {
      messages,
      ack: () => {
        try {
          unlinkSync(seg.path);
        } catch {
          /* already gone */
        }
      },
    };
  }

  close(): void {
    this.flush();
  }
}
