/**
 * Modbus RTU framing, pure: the CRC and the length of every request and response by function code, so a
 * line knows when a frame is whole (and wakes once per frame), and a splitter that turns the bytes and
 * their arrival times heard on a line into whole frames — for a master's line and for a slave alike.
 *
 * RTU has no length field and no delimiter: a frame ends where its function code says it does (Modbus over
 * serial line §2.5.1), and silence (t3.5) separates frames. Both are used here: the length to cut a frame
 * as soon as its last byte is in, the silence to drop what a lost byte or noise left half-assembled.
 */

/** Not enough bytes yet to know the length (or to hold the frame). */
export const NEED_MORE = -1;
/** Not a frame this parser can size: an unknown function code, or a length no RTU frame can have. */
export const UNKNOWN = -2;
/** The longest RTU frame: address + PDU of at most 253 bytes + CRC. */
export const MAX_FRAME = 256;
/** The shortest: address, function code, CRC. */
export const MIN_FRAME = 4;

const CRC_TABLE = ((): Uint16Array => {
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** Modbus CRC-16 (poly 0xA001 reflected, init 0xFFFF) of `buf[start, end)`; sent low byte first. */
export function crc16(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ buf[i]!) & 0xff]!;
  return crc;
}

/**
 * Ends the RTU frame in `frame[0, end)` (unit, PDU) with its CRC, low byte first, at `frame[end]`; returns the
 * frame's length. The one RTU frame writer: the master, the servers and the bus doctor all frame through it.
 */
export function sealRtu(frame: Uint8Array, end: number): number {
  const crc = crc16(frame, 0, end);
  frame[end] = crc & 0xff;
  frame[end + 1] = crc >> 8;
  return end + 2;
}

/** A new RTU frame: `unit`, `pdu`, CRC. */
export function rtuFrame(unit: number, pdu: Uint8Array): Uint8Array {
  const frame = new Uint8Array(pdu.length + 3);
  frame[0] = unit;
  frame.set(pdu, 1);
  sealRtu(frame, pdu.length + 1);
  return frame;
}

/** Whether `buf[start, end)` ends with the CRC of what precedes it. */
export function crcOk(buf: Uint8Array, start: number, end: number): boolean {
  return end - start >= MIN_FRAME && (buf[end - 2]! | (buf[end - 1]! << 8)) === crc16(buf, start, end - 2);
}

/** A length counted from a byte-count field: NEED_MORE until that field is in, UNKNOWN past MAX_FRAME. */
function counted(buf: Uint8Array, offset: number, end: number, countAt: number, fixed: number): number {
  if (end - offset <= countAt) return NEED_MORE;
  const length = fixed + buf[offset + countAt]!;
  return length > MAX_FRAME ? UNKNOWN : length;
}

/**
 * The length of the request frame starting at `buf[offset]` (address, function code, …, CRC), from what
 * is in `buf[offset, end)`: NEED_MORE while a field it depends on is still to come, UNKNOWN for a function
 * code outside FC 1–8, 11, 12, 15–17, 22, 23 and 43/14. FC 8 is sized for one data word (every
 * sub-function but an echo of a longer query).
 */
export function expectedRequestLength(buf: Uint8Array, offset = 0, end = buf.length): number {
  if (end - offset < 2) return NEED_MORE;
  switch (buf[offset + 1]) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 8: return 8;
    case 7: case 11: case 12: case 17: return 4;
    case 15: case 16: return counted(buf, offset, end, 6, 9); // address, count, byte count, values
    case 22: return 10; // address, AND mask, OR mask
    case 23: return counted(buf, offset, end, 10, 13); // read address+count, write address+count, byte count, values
    case 43:
      if (end - offset < 3) return NEED_MORE;
      return buf[offset + 2] === 14 ? 7 : UNKNOWN; // MEI 14: read device id code, object id
    default: return UNKNOWN;
  }
}

/** FC 43/14's answer: an 8-byte header (… number of objects), then id, length, value per object. */
function deviceIdLength(buf: Uint8Array, offset: number, end: number): number {
  if (end - offset < 3) return NEED_MORE;
  if (buf[offset + 2] !== 14) return UNKNOWN;
  if (end - offset < 8) return NEED_MORE;
  let at = 8;
  for (let k = buf[offset + 7]!; k > 0; k--) {
    if (end - offset < at + 2) return NEED_MORE;
    at += 2 + buf[offset + at + 1]!;
    if (at + 2 > MAX_FRAME) return UNKNOWN;
  }
  return at + 2;
}

/**
 * The length of the response frame starting at `buf[offset]`, from what is in `buf[offset, end)`. An
 * exception (function code | 0x80) is 5 bytes. With `requestFc`, a frame whose function code is neither it
 * nor its exception is not an answer to that request: UNKNOWN.
 */
export function expectedResponseLength(buf: Uint8Array, offset = 0, end = buf.length, requestFc?: number): number {
  if (end - offset < 2) return NEED_MORE;
  const fc = buf[offset + 1]!;
  if (requestFc !== undefined && fc !== requestFc && fc !== (requestFc | 0x80)) return UNKNOWN;
  if (fc & 0x80) return fc === 0x80 ? UNKNOWN : 5; // address, fc | 0x80, exception code, CRC
  switch (fc) {
    case 1: case 2: case 3: case 4: case 12: case 17: case 23: return counted(buf, offset, end, 2, 5);
    case 5: case 6: case 8: case 11: case 15: case 16: return 8;
    case 7: return 5;
    case 22: return 10;
    case 43: return deviceIdLength(buf, offset, end);
    default: return UNKNOWN;
  }
}

export type FrameRole = 'request' | 'response';
/** `ok`, or what is wrong: too few bytes, more than the function code allows, an unsized FC, a bad CRC. */
export type FrameCheck = 'ok' | 'short' | 'long' | 'unknown' | 'crc';

/** Whether `buf[start, end)` is exactly one whole `role` frame with a good CRC. */
export function checkFrame(buf: Uint8Array, start: number, end: number, role: FrameRole, requestFc?: number): FrameCheck {
  const length = role === 'request' ? expectedRequestLength(buf, start, end) : expectedResponseLength(buf, start, end, requestFc);
  if (length === UNKNOWN) return 'unknown';
  if (length === NEED_MORE || end - start < length) return 'short';
  if (end - start > length) return 'long';
  return crcOk(buf, start, end) ? 'ok' : 'crc';
}

/** What a splitter hands on. Every callback gets the bytes as a view valid only during the call. */
export interface SplitterHandlers {
  /** A whole request with a good CRC. */
  request(buf: Uint8Array, start: number, end: number, at: number): void;
  /** A whole response with a good CRC (another unit answering): a slave has nothing to do with it. */
  response?(buf: Uint8Array, start: number, end: number, at: number): void;
  /** Bytes that were no frame: noise, a frame cut short by silence, a bad CRC. */
  discard?(count: number): void;
}

export interface SplitterOptions {
  /**
   * Silence that ends a frame, ms: what was assembled before it and is not whole is dropped. t3.5 by the
   * standard; t1.5 for a line that keeps characters back to back (USB adapters hand bytes over in bursts).
   */
  gapMs: number;
  /**
   * After a request, how long a frame that parses as its answer is taken for one (FC 5/6 answers are
   * copies of their requests): the masters' response timeout. A frame after it is a request again.
   */
  answerWindowMs: number;
}

/** Where the whole request frame (any function code this file can size, good CRC) that ends `bytes` starts; -1: none. */
export function requestEndingAt(bytes: Uint8Array): number {
  for (let s = Math.max(0, bytes.length - MAX_FRAME); s <= bytes.length - MIN_FRAME; s++) {
    const unit = bytes[s]!;
    if (unit >= 1 && unit <= 247 && s + expectedRequestLength(bytes, s) === bytes.length && crcOk(bytes, s, bytes.length)) return s;
  }
  return -1;
}

/** Whether `bytes` ends with a whole request frame. */
export const endsWithRequest = (bytes: Uint8Array): boolean => requestEndingAt(bytes) >= 0;

/**
 * Where a whole frame (a request or a response, good CRC) that ends at `end` starts, looking from `from` on;
 * -1: none. What the master's answer finder, the line listener and the splitter each ask of bytes heard.
 */
export function frameEndingAt(buf: Uint8Array, from: number, end: number): number {
  for (let s = Math.max(from, end - MAX_FRAME); s <= end - MIN_FRAME; s++) {
    if ((s + expectedRequestLength(buf, s, end) === end || s + expectedResponseLength(buf, s, end) === end) && crcOk(buf, s, end)) return s;
  }
  return -1;
}

/** Whether `bytes` ends with a whole frame (a request or a response) with a good CRC. */
export const endsWithFrame = (bytes: Uint8Array): boolean => frameEndingAt(bytes, 0, bytes.length) >= 0;

/**
 * Turns bytes heard on a line, with when each chunk came, into whole frames: each one cut at the length
 * its function code gives, checked by its CRC, told apart as a request or a response (after a request
 * its answer is expected). Garbage is skipped a byte at a time until a good frame starts; a frame left
 * half-assembled by a lost byte is dropped at the next silence of `gapMs`. No allocation per byte or frame.
 */
export class FrameSplitter {
  private readonly buf = new Uint8Array(2 * MAX_FRAME);
  private start = 0;
  private end = 0;
  private lastAt = -Infinity;
  /** The function code of the last request heard while its answer may come (0: none), and when. */
  private awaitingFc = 0;
  private requestAt = -Infinity;

  constructor(private readonly options: SplitterOptions, private readonly on: SplitterHandlers) {}

  /** Bytes `chunk[from, to)` heard at `at` (ms, monotonic). */
  push(chunk: Uint8Array, at: number, from = 0, to = chunk.length): void {
    if (at - this.lastAt > this.options.gapMs) this.drop(this.end - this.start);
    this.lastAt = at;
    while (from < to) {
      if (this.end === this.buf.length) {
        this.buf.copyWithin(0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      }
      const n = Math.min(to - from, this.buf.length - this.end);
      this.buf.set(chunk.subarray(from, from + n), this.end);
      this.end += n;
      from += n;
      this.split(at);
    }
  }

  /** Bytes held that are not a whole frame yet. */
  pending(): number {
    return this.end - this.start;
  }

  private drop(count: number): void {
    if (count > 0) this.on.discard?.(count);
    this.start += count;
    if (this.start >= this.end) this.start = this.end = 0;
  }

  private split(at: number): void {
    while (this.end - this.start >= MIN_FRAME) {
      const s = this.start;
      const awaiting = this.awaitingFc !== 0 && at - this.requestAt <= this.options.answerWindowMs;
      const req = this.whole(expectedRequestLength(this.buf, s, this.end));
      const res = this.whole(expectedResponseLength(this.buf, s, this.end, awaiting ? this.awaitingFc : undefined));
      // After a request its answer is expected first (an FC 5/6 answer also parses as a request).
      if (awaiting && res > 0) this.emit('response', res, at);
      else if (req > 0) this.emit('request', req, at);
      else if (res > 0) this.emit('response', res, at);
      else if (req === NEED_MORE || res === NEED_MORE) {
        // Still to come, unless it only looks like a long frame's start: a good frame that ends with the
        // last byte heard says the bytes before it were noise.
        const resync = this.frameEndingNow();
        if (resync < 0) return;
        this.drop(resync - s);
      } else {
        this.drop(1);
      }
    }
  }

  /** The length if a whole frame with a good CRC is at `start`; NEED_MORE if it may still become one; else 0. */
  private whole(length: number): number {
    if (length === UNKNOWN) return 0;
    if (length === NEED_MORE || length > this.end - this.start) return NEED_MORE;
    return crcOk(this.buf, this.start, this.start + length) ? length : 0;
  }

  /** Where a whole good frame that ends at the last byte heard starts, after the first byte (-1: none). */
  private frameEndingNow(): number {
    return frameEndingAt(this.buf, this.start + 1, this.end);
  }

  private emit(role: FrameRole, length: number, at: number): void {
    const s = this.start;
    this.start += length;
    if (role === 'request') {
      this.awaitingFc = this.buf[s + 1]!;
      this.requestAt = at;
      this.on.request(this.buf, s, s + length, at);
    } else {
      this.awaitingFc = 0;
      this.on.response?.(this.buf, s, s + length, at);
    }
    if (this.start >= this.end) this.start = this.end = 0;
  }
}
