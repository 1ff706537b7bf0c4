/**
 * A seal's reads of its log: the log is walked front to back through one window buffer of fixed size instead
 * of being read whole (an 8 MiB log held 8 MiB, kept from seal to seal so RSS would not step). A block that
 * straddles the window's end is read again from its start; one larger than the window grows it.
 */
import type { FileHandle } from 'node:fs/promises';
import { type BlockMeta, HEADER_BYTES, parseHeader } from './format.js';

/** The window: a 1 MiB read is ~13k fleet blocks, and a few ms of a thread-pool thread. */
export const WINDOW_BYTES = 1 << 20;

export class LogWindow {
  /** The bytes of [start, start + view.length) of the file. */
  view: Buffer = Buffer.alloc(0);
  private start = 0;

  constructor(private readonly fh: FileHandle, private readonly size: number, private buf: Buffer) {}

  /** The buffer, for the caller to keep: grown when a block did not fit. */
  get buffer(): Buffer {
    return this.buf;
  }

  /**
   * The header of the block at file offset `pos` with its whole block in `view`; its offset in `view` is
   * `pos - base()`. Null at the end of the data or where no whole block starts.
   */
  async block(pos: number): Promise<BlockMeta | null> {
    const held = this.held(pos);
    if (held !== undefined) return held;
    if (pos + HEADER_BYTES > this.size) return null;
    if (pos < this.start || pos + HEADER_BYTES > this.start + this.view.length) await this.fill(pos, HEADER_BYTES);
    const meta = parseHeader(this.view, pos - this.start);
    if (!meta) return null;
    const total = HEADER_BYTES + meta.payloadLen;
    if (pos + total > this.size) return null;
    if (pos + total > this.start + this.view.length) await this.fill(pos, total);
    return meta;
  }

  /**
   * block(pos) without a read: undefined when the window does not hold the whole block (nearly every block of a
   * window is found here, so the seal's loops await a read once a window, not once a block).
   */
  held(pos: number): BlockMeta | null | undefined {
    const rel = pos - this.start;
    if (rel < 0 || rel + HEADER_BYTES > this.view.length) return undefined;
    const meta = parseHeader(this.view, rel);
    if (!meta) return null;
    const end = pos + HEADER_BYTES + meta.payloadLen;
    if (end > this.size) return null;
    return end <= this.start + this.view.length ? meta : undefined;
  }

  /** File offset of `view[0]`. */
  base(): number {
    return this.start;
  }

  private async fill(pos: number, need: number): Promise<void> {
    if (need > this.buf.length) this.buf = Buffer.allocUnsafe(need);
    const len = Math.min(this.buf.length, this.size - pos);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await this.fh.read(this.buf, got, len - got, pos + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    this.start = pos;
    this.view = this.buf.subarray(0, got);
  }
}
