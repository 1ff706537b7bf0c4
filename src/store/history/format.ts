/**
 * On-disk block format shared by the append log and the sealed segments.
 *
 * A block is a 28-byte header followed by a payload; the CRC covers both, so a torn or garbage tail
 * after a power cut is told apart from data (a length field alone is not enough: garbage can look
 * like a plausible length). All integers little-endian (every Pi runs little-endian).
 *
 * header: magic u8 | kind u8 | reserved u16 | series u32 | count u32 | payloadLen u32 | baseTs f64 | crc u32
 */
import { crc32 } from 'node:zlib';

export const BLOCK_MAGIC = 0xb7;
export const HEADER_BYTES = 28;
/** Numeric samples: u32 ms offset from baseTs + f64 value = 12 bytes per sample. */
export const KIND_NUM = 1;
/** Text samples: u32 ms offset + u16 byte length + UTF-8 bytes. */
export const KIND_STR = 2;
/** Per-minute rollups of numeric samples (one record per minute with data). */
export const KIND_MINUTE = 3;
/** Per-hour rollups. */
export const KIND_HOUR = 4;
/**
 * Numeric samples of a block spanning at most 65,535 ms (every flush of a 10 s interval): u16 ms offset + f64
 * value = 10 bytes per sample. Most points write a few samples per flush, so the 2 bytes matter: at 7 samples a
 * block, 98 bytes instead of 112.
 */
export const KIND_NUM16 = 5;

export const NUM_RECORD = 12;
export const NUM16_RECORD = 10;
/** Largest time span (ms) of a KIND_NUM16 block. */
export const MAX_DELTA16 = 0xffff;
/** bucketStart, count, min, max, sum, first, last, firstTs, lastTs — all f64. */
export const ROLLUP_FIELDS = 9;
export const ROLLUP_RECORD = ROLLUP_FIELDS * 8;
/** Offsets are u32 milliseconds: one block spans at most ~49 days. */
export const MAX_DELTA = 0xffffffff;
/** Longest text sample kept (bytes); longer strings are cut, a history is not a blob store. */
export const MAX_STR_BYTES = 1024;
/** Sanity bound for a payload length read from disk; anything larger is garbage. */
export const MAX_PAYLOAD = 256 * 1024 * 1024;

export const MINUTE = 60_000;
export const HOUR = 3_600_000;

export interface BlockMeta {
  kind: number;
  series: number;
  count: number;
  payloadLen: number;
  baseTs: number;
}

/** Reads a header; null when the bytes cannot be one (wrong magic or kind, absurd sizes). */
export function parseHeader(buf: Buffer, off: number): BlockMeta | null {
  if (off + HEADER_BYTES > buf.length) return null;
  if (buf[off] !== BLOCK_MAGIC) return null;
  const kind = buf[off + 1]!;
  if (kind < KIND_NUM || kind > KIND_NUM16 || buf.readUInt16LE(off + 2) !== 0) return null;
  const meta: BlockMeta = {
    kind,
    series: buf.readUInt32LE(off + 4),
    count: buf.readUInt32LE(off + 8),
    payloadLen: buf.readUInt32LE(off + 12),
    baseTs: buf.readDoubleLE(off + 16),
  };
  if (meta.payloadLen > MAX_PAYLOAD || !Number.isFinite(meta.baseTs)) return null;
  if (kind === KIND_NUM && meta.payloadLen !== meta.count * NUM_RECORD) return null;
  if (kind === KIND_NUM16 && meta.payloadLen !== meta.count * NUM16_RECORD) return null;
  if ((kind === KIND_MINUTE || kind === KIND_HOUR) && meta.payloadLen !== meta.count * ROLLUP_RECORD) return null;
  return meta;
}

/** True when the block at `off` (header + payload, fully inside buf) has a matching CRC. */
export function checkBlock(buf: Buffer, off: number, meta: BlockMeta): boolean {
  const end = off + HEADER_BYTES + meta.payloadLen;
  if (end > buf.length) return false;
  let crc = crc32(buf.subarray(off, off + 24));
  crc = crc32(buf.subarray(off + HEADER_BYTES, end), crc);
  return crc === buf.readUInt32LE(off + 24);
}

/** Writes the header for a payload already placed at `off + HEADER_BYTES`. */
export function sealHeader(buf: Buffer, off: number, kind: number, series: number, count: number, payloadLen: number,
  baseTs: number): void {
  buf[off] = BLOCK_MAGIC;
  buf[off + 1] = kind;
  buf.writeUInt16LE(0, off + 2);
  buf.writeUInt32LE(series, off + 4);
  buf.writeUInt32LE(count, off + 8);
  buf.writeUInt32LE(payloadLen, off + 12);
  buf.writeDoubleLE(baseTs, off + 16);
  let crc = crc32(buf.subarray(off, off + 24));
  crc = crc32(buf.subarray(off + HEADER_BYTES, off + HEADER_BYTES + payloadLen), crc);
  buf.writeUInt32LE(crc, off + 24);
}

/** Samples as parallel arrays (cheaper than one object per sample on hot paths). */
export interface Samples {
  ts: number[];
  val: (number | string)[];
}

export const emptySamples = (): Samples => ({ ts: [], val: [] });

/** Blocks of samples (not rollups): numeric (KIND_NUM, KIND_NUM16) or text. */
export const isSampleKind = (kind: number): boolean => kind === KIND_NUM || kind === KIND_NUM16 || kind === KIND_STR;

/** Numeric blocks of either record width are one kind to a sealed segment's directory (KIND_NUM) and to queries. */
export const sampleKind = (kind: number): number => (kind === KIND_NUM16 ? KIND_NUM : kind);

/** Appends the samples of a sample block (isSampleKind) whose time lies in [start, endEx). */
export function decodeSamples(buf: Buffer, off: number, meta: BlockMeta, start: number, endEx: number, out: Samples): void {
  let p = off + HEADER_BYTES;
  if (meta.kind === KIND_NUM || meta.kind === KIND_NUM16) {
    const wide = meta.kind === KIND_NUM;
    const rec = wide ? NUM_RECORD : NUM16_RECORD;
    for (let i = 0; i < meta.count; i++, p += rec) {
      const ts = meta.baseTs + (wide ? buf.readUInt32LE(p) : buf.readUInt16LE(p));
      if (ts >= start && ts < endEx) {
        out.ts.push(ts);
        out.val.push(buf.readDoubleLE(p + rec - 8)); // the value follows the time offset
      }
    }
    return;
  }
  if (meta.kind !== KIND_STR) return;
  for (let i = 0; i < meta.count; i++) {
    const ts = meta.baseTs + buf.readUInt32LE(p);
    const len = buf.readUInt16LE(p + 4);
    if (ts >= start && ts < endEx) {
      out.ts.push(ts);
      out.val.push(buf.toString('utf8', p + 6, p + 6 + len));
    }
    p += 6 + len;
  }
}

/** Bytes a STR block payload needs for these strings. */
export function strPayloadBytes(values: readonly string[]): number {
  let n = 0;
  for (const s of values) n += 6 + Buffer.byteLength(s);
  return n;
}

/** Cuts a string to MAX_STR_BYTES of UTF-8 without splitting a character. */
export function clampText(text: string): string {
  if (text.length * 3 <= MAX_STR_BYTES || Buffer.byteLength(text) <= MAX_STR_BYTES) return text;
  let s = text.slice(0, MAX_STR_BYTES);
  while (Buffer.byteLength(s) > MAX_STR_BYTES) s = s.slice(0, -1);
  return s;
}

/** Latest sample time in a sample block (blocks are not necessarily time-ordered). */
export function blockMaxTs(buf: Buffer, off: number, meta: BlockMeta): number {
  let max = meta.baseTs;
  let p = off + HEADER_BYTES;
  if (meta.kind === KIND_NUM16) {
    for (let i = 0; i < meta.count; i++, p += NUM16_RECORD) max = Math.max(max, meta.baseTs + buf.readUInt16LE(p));
    return max;
  }
  if (meta.kind !== KIND_NUM && meta.kind !== KIND_STR) return max;
  for (let i = 0; i < meta.count; i++) {
    const t = meta.baseTs + buf.readUInt32LE(p);
    if (t > max) max = t;
    p += meta.kind === KIND_NUM ? NUM_RECORD : 6 + buf.readUInt16LE(p + 4);
  }
  return max;
}
