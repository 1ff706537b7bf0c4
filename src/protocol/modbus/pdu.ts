/**
 * Request PDUs a Modbus server takes (FC 1, 2, 3, 4, 5, 6, 15, 16) and the responses it sends, on bytes
 * (Modbus Application Protocol v1.1b3 §6). Decoding checks what the spec asks a server to check, in its
 * order: an unknown function is exception 1, a bad quantity or byte count exception 3, a range past the
 * end of the address space exception 2.
 */

export type ReadFc = 1 | 2 | 3 | 4;
export type WriteFc = 5 | 6 | 15 | 16;

export type ServerRequest =
  | { fc: ReadFc; address: number; count: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; values: boolean[] }
  | { fc: 16; address: number; values: number[] };

export type Decoded = { ok: true; req: ServerRequest } | { ok: false; fc: number; exception: number };

export const EXCEPTION = {
  illegalFunction: 0x01,
  illegalAddress: 0x02,
  illegalValue: 0x03,
  deviceFailure: 0x04,
  busy: 0x06,
  pathUnavailable: 0x0a,
  targetFailed: 0x0b,
} as const;

/** Spec quantity limits per request. */
export const LIMITS = { bits: 2000, registers: 125, writeBits: 1968, writeRegisters: 123 } as const;

export const isRead = (req: ServerRequest): req is Extract<ServerRequest, { count: number }> => req.fc <= 4;

/** Registers (or bits) a request touches, as [address, count]. */
export function span(req: ServerRequest): [number, number] {
  if ('count' in req) return [req.address, req.count];
  if ('values' in req) return [req.address, req.values.length];
  return [req.address, 1];
}

const u16 = (pdu: Uint8Array, at: number): number => (pdu[at]! << 8) | pdu[at + 1]!;
const fail = (fc: number, exception: number): Decoded => ({ ok: false, fc, exception });

export function decodeRequest(pdu: Uint8Array): Decoded {
  const fc = pdu[0] ?? 0;
  switch (fc) {
    case 1: case 2: case 3: case 4: {
      if (pdu.length !== 5) return fail(fc, EXCEPTION.illegalValue);
      const address = u16(pdu, 1);
      const count = u16(pdu, 3);
      const max = fc <= 2 ? LIMITS.bits : LIMITS.registers;
      if (count < 1 || count > max) return fail(fc, EXCEPTION.illegalValue);
      if (address + count > 0x10000) return fail(fc, EXCEPTION.illegalAddress);
      return { ok: true, req: { fc, address, count } };
    }
    case 5: {
      if (pdu.length !== 5) return fail(fc, EXCEPTION.illegalValue);
      const value = u16(pdu, 3);
      if (value !== 0xff00 && value !== 0x0000) return fail(fc, EXCEPTION.illegalValue);
      return { ok: true, req: { fc, address: u16(pdu, 1), value: value === 0xff00 } };
    }
    case 6:
      if (pdu.length !== 5) return fail(fc, EXCEPTION.illegalValue);
      return { ok: true, req: { fc, address: u16(pdu, 1), value: u16(pdu, 3) } };
    case 15: {
      if (pdu.length < 6) return fail(fc, EXCEPTION.illegalValue);
      const address = u16(pdu, 1);
      const count = u16(pdu, 3);
      const bytes = pdu[5]!;
      if (count < 1 || count > LIMITS.writeBits || bytes !== Math.ceil(count / 8) || pdu.length !== 6 + bytes) return fail(fc, EXCEPTION.illegalValue);
      if (address + count > 0x10000) return fail(fc, EXCEPTION.illegalAddress);
      const values = Array.from({ length: count }, (_, i) => ((pdu[6 + (i >> 3)]! >> (i & 7)) & 1) === 1);
      return { ok: true, req: { fc, address, values } };
    }
    case 16: {
      if (pdu.length < 6) return fail(fc, EXCEPTION.illegalValue);
      const address = u16(pdu, 1);
      const count = u16(pdu, 3);
      const bytes = pdu[5]!;
      if (count < 1 || count > LIMITS.writeRegisters || bytes !== count * 2 || pdu.length !== 6 + bytes) return fail(fc, EXCEPTION.illegalValue);
      if (address + count > 0x10000) return fail(fc, EXCEPTION.illegalAddress);
      const values = Array.from({ length: count }, (_, i) => u16(pdu, 6 + i * 2));
      return { ok: true, req: { fc, address, values } };
    }
    default:
      return fail(fc, EXCEPTION.illegalFunction);
  }
}

/** FC1/FC2 answer: bits packed LSB first, the unused high bits of the last byte zero. */
export function encodeBits(fc: 1 | 2, bits: ArrayLike<boolean | number>): Uint8Array {
  const bytes = Math.ceil(bits.length / 8);
  const out = new Uint8Array(2 + bytes);
  out[0] = fc;
  out[1] = bytes;
  for (let i = 0; i < bits.length; i++) if (bits[i]) out[2 + (i >> 3)]! |= 1 << (i & 7);
  return out;
}

/** FC3/FC4 answer: registers big-endian, as the device sent them. */
export function encodeRegisters(fc: 3 | 4, words: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(2 + words.length * 2);
  out[0] = fc;
  out[1] = words.length * 2;
  for (let i = 0; i < words.length; i++) {
    out[2 + i * 2] = (words[i]! >> 8) & 0xff;
    out[3 + i * 2] = words[i]! & 0xff;
  }
  return out;
}

/** A write's normal answer: FC5/6 echo the request, FC15/16 echo address and quantity. */
export function encodeWriteAnswer(req: Exclude<ServerRequest, { count: number }>): Uint8Array {
  const second = req.fc === 5 ? (req.value ? 0xff00 : 0) : req.fc === 6 ? req.value : req.values.length;
  return Uint8Array.of(req.fc, (req.address >> 8) & 0xff, req.address & 0xff, (second >> 8) & 0xff, second & 0xff);
}

export function encodeException(fc: number, code: number): Uint8Array {
  return Uint8Array.of((fc | 0x80) & 0xff, code & 0xff);
}
