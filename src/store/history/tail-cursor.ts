/**
 * One region of a seal's tail, written front to back through a small staging buffer: a seal writes its block
 * lists, its rollups and its directory as it builds them, each region through its own cursor, so no part of the
 * tail is held whole in memory (a fleet's directory alone is ~2 MB). Use: `if (!c.fits(n)) await c.flush();`
 * then write n bytes at `c.take(n)` in `c.buf`.
 */
import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { writeAt } from './scan.js';

/** Staging per region: large enough that a fleet's seal makes a few hundred writes, small enough to keep. */
export const STAGE_BYTES = 64 * 1024;

export class TailCursor {
  /** CRC-32 of every byte flushed so far (the directory's checksum goes in the trailer). */
  crc = 0;
  private used = 0;
  /** The kept stage, put aside while an oversized piece is staged. */
  private big: Buffer | undefined;

  /** `at`: where the region starts in the file; `buf`: a kept buffer to stage through (STAGE_BYTES). */
  constructor(private readonly fh: FileHandle, private at: number, public buf: Buffer) {}

  /** The file position the next byte taken will land at. */
  get pos(): number {
    return this.at + this.used;
  }

  fits(n: number): boolean {
    return this.used + n <= this.buf.length;
  }

  /**
   * The offset in `buf` of the next `n` bytes, which the caller fills before the next flush. Call only after
   * fits(n) or a flush; a piece larger than the stage gets a buffer of its own until the next flush.
   */
  take(n: number): number {
    if (this.used + n > this.buf.length) {
      if (this.used) throw new Error('tail cursor: take() past the stage without a flush');
      this.big ??= this.buf;
      this.buf = Buffer.allocUnsafe(n);
    }
    const off = this.used;
    this.used += n;
    return off;
  }

  async flush(): Promise<void> {
    if (!this.used) return;
    const bytes = this.buf.subarray(0, this.used);
    await writeAt(this.fh, bytes, this.at);
    this.crc = crc32(bytes, this.crc);
    this.at += this.used;
    this.used = 0;
    if (this.big) {
      this.buf = this.big;
      this.big = undefined;
    }
  }
}
