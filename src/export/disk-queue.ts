/**
 * A bounded FIFO of messages on disk (the bridge's queue while the upstream is away).
 * Segment files `seg-<n>.jsonl`, one JSON record per line; appends are buffered and written every
 * `flushMs` (and before a read). When the bytes on disk pass `maxBytes` the oldest segment is dropped
 * and its messages counted: a segment is at most 1/16 of the bound, so a drop loses the oldest ~6 %.
 * A segment is deleted only after the consumer acknowledged all of it: at-least-once across a crash.
 *
 * No file call blocks the event loop: the accounting (bytes, counts, which segment a line goes to) is
 * done at once in memory, and the file operations it implies run in order on one promise chain. A
 * segment read back is parsed in slices with a yield between them, so draining a 4 MiB segment after a
 * long outage never stalls polling or REST for the whole parse.
 */
import { appendFile, mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface QueuedMessage {
  t: string;
  p: string;
  r: boolean;
  /** The topic is the upstream one as is (Home Assistant discovery), not a local one to put under the prefix. */
  a?: 1;
}

interface Segment {
  n: number;
  path: string;
  bytes: number;
  count: number;
}

/** Lines parsed between two yields to the event loop (~1 ms of JSON.parse on a Pi-class CPU for short messages). */
const PARSE_SLICE = 500;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class DiskQueue {
  private readonly segments: Segment[] = [];
  private pending: string[] = [];
  private pendingBytes = 0;
  private nextN = 1;
  private timer: NodeJS.Timeout | null = null;
  readonly segmentMax: number;
  private droppedCount = 0;
  /** File operations in the order the accounting decided them. */
  private io: Promise<void> = Promise.resolve();
  private ioError: Error | null = null;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly flushMs = 100,
  ) {
    this.segmentMax = Math.max(256, Math.min(4 * 1024 * 1024, Math.floor(maxBytes / 16)));
  }

  /** Finds segments left by a previous run (a crash or a stop while the upstream was away). */
  async load(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const names = (await readdir(this.dir)).filter((f) => /^seg-\d+\.jsonl$/.test(f));
    const found = names.map((f) => Number(f.slice(4, -6))).sort((a, b) => a - b);
    for (const n of found) {
      const path = this.segPath(n);
      const bytes = (await stat(path)).size;
      const text = await readFile(path, 'utf8');
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

  /** The last file error (a full disk): shown in the bridge's stats; the queue keeps counting in memory. */
  get lastError(): string | null {
    return this.ioError?.message ?? null;
  }

  push(msg: QueuedMessage): void {
    const line = `${JSON.stringify(msg)}\n`;
    this.pending.push(line);
    this.pendingBytes += Buffer.byteLength(line);
    if (this.pendingBytes >= this.segmentMax) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
    this.enforceBound();
  }

  private file(op: () => Promise<void>): void {
    this.io = this.io.then(op).then(() => {
      this.ioError = null;
    }, (err: unknown) => {
      this.ioError = err instanceof Error ? err : new Error(String(err));
    });
  }

  /** Moves buffered lines into the tail segment(s); their appends are queued on the file chain. */
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
      const path = tail.path;
      const text = chunk;
      this.file(() => appendFile(path, text));
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

  private remove(path: string): void {
    this.file(() => unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    }));
  }

  private enforceBound(): void {
    while (this.bytes > this.maxBytes) {
      if (this.segments.length === 0 || (this.segments.length === 1 && this.pending.length > 0)) this.flush();
      // Keep the newest segment: dropping the very data just written would defeat the queue.
      if (this.segments.length <= 1) return;
      const old = this.segments.shift()!;
      this.droppedCount += old.count;
      this.remove(old.path);
    }
  }

  /**
   * Takes the oldest segment out of the bound accounting and returns its messages and an `ack` that deletes
   * its file. Buffered lines are flushed first so nothing jumps the queue.
   */
  async take(): Promise<{ messages: QueuedMessage[]; ack(): void } | null> {
    this.flush();
    const seg = this.segments.shift();
    if (!seg) return null;
    await this.io;
    let lines: string[] = [];
    try {
      lines = (await readFile(seg.path, 'utf8')).split('\n');
    } catch {
      lines = [];
    }
    const messages: QueuedMessage[] = [];
    for (let i = 0; i < lines.length; i++) {
      if (i > 0 && i % PARSE_SLICE === 0) await yieldToLoop();
      const line = lines[i]!;
      if (line.length === 0) continue;
      try {
        messages.push(JSON.parse(line) as QueuedMessage);
      } catch {
        // a line torn by a power cut
      }
    }
    return { messages, ack: () => this.remove(seg.path) };
  }

  /** Writes what is buffered and waits for every file operation to finish. */
  async close(): Promise<void> {
    this.flush();
    await this.io;
  }
}
