/**
 * What the fault relay does to a frame. Faults hit a fixed share of frames (every `every`-th frame on the
 * line, both directions), so a short run sees the same number of faults as the plan says, not a lucky few.
 */
import { crc16 } from '../../../src/protocol/modbus/frame.js';

export function withCrc(body: Uint8Array): Buffer {
  const out = Buffer.alloc(body.length + 2);
  out.set(body);
  out.writeUInt16LE(crc16(body), body.length);
  return out;
}

export type Direction = 'request' | 'reply';

/** Returns the frame as it goes on (a new buffer), or null to leave it alone. */
export type FrameFault = (frame: Buffer, dir: Direction) => Buffer | null;

const rnd = (n: number): number => Math.floor(Math.random() * n);

/** Bit errors: 1–3 bits flipped in one or two bytes (a noise burst); the CRC no longer matches. */
export const noise: FrameFault = (frame) => {
  const out = Buffer.from(frame);
  for (let k = 0; k < 1 + rnd(2); k++) {
    const i = rnd(out.length);
    for (let b = 0; b < 1 + rnd(3); b++) out[i] = out[i]! ^ (1 << rnd(8));
  }
  return out;
};

/** A lost character (a UART overrun, a framing error the receiver drops). */
export const drop: FrameFault = (frame) => {
  const i = rnd(frame.length);
  return Buffer.concat([frame.subarray(0, i), frame.subarray(i + 1)]);
};

/** 1–3 spurious characters (line ringing, a glitch taken for a start bit) before, inside or after the frame. */
export const extra: FrameFault = (frame) => {
  const junk = Buffer.from(Array.from({ length: 1 + rnd(3) }, () => rnd(256)));
  const i = [0, rnd(frame.length), frame.length][rnd(3)]!;
  return Buffer.concat([frame.subarray(0, i), junk, frame.subarray(i)]);
};

/**
 * A reply from the wrong unit: the request reaches another unit (its address byte rewritten, CRC valid), so
 * the answer on the line is that unit's, with its own address and its own values.
 */
export function wrongUnit(units: readonly number[]): FrameFault {
  return (frame, dir) => {
    if (dir !== 'request' || frame.length < 4) return null;
    const others = units.filter((u) => u !== frame[0]);
    if (others.length === 0) return null;
    const body = Buffer.from(frame.subarray(0, -2));
    body[0] = others[rnd(others.length)]!;
    return withCrc(body);
  };
}

/** A read of `count` holding registers at `address` from `unit` (what the second master sends). */
export const readRequest = (unit: number, address: number, count: number): Buffer =>
  withCrc(Buffer.from([unit, 3, address >> 8, address & 0xff, count >> 8, count & 0xff]));
