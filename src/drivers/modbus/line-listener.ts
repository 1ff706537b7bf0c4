/**
 * What a master hears on an RTU line between its own transactions: another master's traffic (a second
 * gateway, a service laptop). t3.5 of silence is not enough to go ahead after another master's request:
 * its slave is still to answer (a meter may take tens of ms), and a request sent meanwhile gets that answer
 * — same unit, function and length, so it would pass every check — for its own. So a request heard on the
 * line holds the line until its answer begins or the response timeout has passed.
 */

/** Modbus RTU CRC-16 (poly 0xA001, init 0xFFFF). */
export function crc16(buf: Uint8Array): number {
  let crc = 0xffff;
  for (const b of buf) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

const crcOk = (frame: Buffer): boolean => frame.length >= 4 && frame.readUInt16LE(frame.length - 2) === crc16(frame.subarray(0, -2));

/** Whether `bytes` ends with a whole request frame (FC 1–6: 8 bytes; FC 15/16: 9 + byte count). */
export function endsWithRequest(bytes: Buffer): boolean {
  if (bytes.length >= 8) {
    const tail = bytes.subarray(bytes.length - 8);
    if (tail[0]! >= 1 && tail[0]! <= 247 && tail[1]! >= 1 && tail[1]! <= 6 && crcOk(tail)) return true;
  }
  for (let len = 11; len <= Math.min(bytes.length, 256); len++) {
    const tail = bytes.subarray(bytes.length - len);
    if ((tail[1] === 15 || tail[1] === 16) && tail.length === 9 + tail[6]! && tail[0]! >= 1 && tail[0]! <= 247 && crcOk(tail)) return true;
  }
  return false;
}

export class LineListener {
  private frame = Buffer.alloc(0);
  private lastAt = -Infinity;
  private answering = false;
  private pendingUntil = 0;

  /** `gapMs`: silence that ends a frame (t3.5). */
  constructor(private readonly gapMs: number) {}

  /** Bytes heard outside our own transactions; `answerWaitMs`: how long a slave may take to answer. */
  heard(chunk: Buffer, now: number, answerWaitMs: number): void {
    if (this.pendingUntil >= now) {
      // The first bytes after a request are its answer (an FC5/6 answer even looks like a request).
      this.pendingUntil = 0;
      this.answering = true;
      this.frame = Buffer.from(chunk);
    } else if (now - this.lastAt > this.gapMs) {
      this.pendingUntil = 0;
      this.answering = false;
      this.frame = Buffer.from(chunk);
    } else {
      this.frame = Buffer.concat([this.frame, chunk]).subarray(-256);
    }
    this.lastAt = now;
    if (!this.answering && endsWithRequest(this.frame)) this.pendingUntil = now + answerWaitMs;
  }

  /** Our own transaction takes the line: what came before it is no longer pending. */
  reset(): void {
    this.frame = Buffer.alloc(0);
    this.answering = false;
    this.pendingUntil = 0;
  }

  /** When bytes were last heard outside our own transactions (-Infinity: never). */
  lastHeardAt(): number {
    return this.lastAt;
  }

  /** Until when another master's request may still be answered (0: none pending). */
  answerPendingUntil(): number {
    return this.pendingUntil;
  }
}
