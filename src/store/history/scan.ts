/** Walks the blocks of a file in large reads; stops at the first block that is torn or fails its CRC. */
import type { FileHandle } from 'node:fs/promises';
import { type BlockMeta, HEADER_BYTES, checkBlock, parseHeader } from './format.js';

const CHUNK = 1024 * 1024;

/**
 * Calls `onBlock` for every whole block in [start, end) and returns the offset just past the last
 * good one: everything after it is a torn tail (a write cut by a power loss) or garbage.
 */
export async function scanBlocks(fh: FileHandle, start: number, end: number,
  onBlock: (buf: Buffer, off: number, meta: BlockMeta, fileOffset: number) => void): Promise<number> {
  let pos = start;
  let buf: Buffer = Buffer.alloc(0);
  let bufStart = start;
  while (pos + HEADER_BYTES <= end) {
    let rel = pos - bufStart;
    if (rel + HEADER_BYTES > buf.length) {
      buf = await readAt(fh, pos, Math.min(CHUNK, end - pos));
      bufStart = pos;
      rel = 0;
    }
    const meta = parseHeader(buf, rel);
    if (!meta) break;
    const total = HEADER_BYTES + meta.payloadLen;
    if (pos + total > end) break;
    if (rel + total > buf.length) {
      buf = await readAt(fh, pos, Math.min(Math.max(CHUNK, total), end - pos));
      bufStart = pos;
      rel = 0;
    }
    if (!checkBlock(buf, rel, meta)) break;
    onBlock(buf, rel, meta, pos);
    pos += total;
  }
  return pos;
}

/** Reads exactly `len` bytes at `pos` (short only at end of file). */
export async function readAt(fh: FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === len ? buf : buf.subarray(0, got);
}

/** Writes all of `buf` at `pos` (fs writes may be short). */
export async function writeAt(fh: FileHandle, buf: Buffer, pos: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, pos + done);
    done += bytesWritten;
  }
}
