/**
 * export.shadow `file` target. `snapshot`: one JSON document, replaced atomically (a reader never sees half
 * a file). `append`: one JSON line per export; when the next line would pass `max_size` the file is
 * renamed to `<path>.1` (replacing the previous one) and a new file begins, so disk use stays ≤ 2 × max_size.
 */
import { appendFile, rename, stat } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../util/logger.js';
import { atomicWriteFile } from '../util/atomic-file.js';

export interface FileTargetOptions {
  path: string;
  mode: 'snapshot' | 'append';
  /** bytes, append mode */
  maxSize: number;
  log: Logger;
}

export class FileTarget {
  private size = -1;
  private writing: Promise<void> | null = null;
  private next: string | null = null;
  private readonly counters = { written: 0, rotations: 0, errors: 0, skipped: 0 };

  constructor(private readonly opts: FileTargetOptions) {}

  /** Writes in the background; while a write is in flight only the newest export waits (older ones are skipped). */
  push(body: string): void {
    if (this.writing) {
      if (this.next !== null) this.counters.skipped++;
      this.next = body;
      return;
    }
    this.writing = this.write(body).finally(() => {
      this.writing = null;
      const n = this.next;
      this.next = null;
      if (n !== null) this.push(n);
    });
  }

  private async write(body: string): Promise<void> {
    try {
      if (this.opts.mode === 'snapshot') {
        await atomicWriteFile(this.opts.path, body);
      } else {
        const line = `${body}\n`;
        const bytes = Buffer.byteLength(line);
        if (this.size < 0) {
          await mkdir(dirname(this.opts.path), { recursive: true });
          this.size = await stat(this.opts.path).then((s) => s.size, () => 0);
        }
        if (this.size > 0 && this.size + bytes > this.opts.maxSize) {
          await rename(this.opts.path, `${this.opts.path}.1`);
          this.size = 0;
          this.counters.rotations++;
        }
        await appendFile(this.opts.path, line);
        this.size += bytes;
      }
      this.counters.written++;
    } catch (err) {
      this.counters.errors++;
      this.size = -1;
      this.opts.log.error({ err, path: this.opts.path }, 'shadow export file write failed');
    }
  }

  /** Waits for the write in flight (and the one queued behind it). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  stats(): Record<string, unknown> {
    return { ...this.counters };
  }
}
