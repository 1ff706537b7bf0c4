/**
 * The client's side of the PDUs in pdu.ts (Modbus Application Protocol v1.1b3 §6): the request a client
 * sends for FC 1, 2, 3, 4, 5, 6, 15, 16, and the checks an answer must pass to be taken as that request's —
 * its function (or the function with the exception bit), byte count and length, and for a write the echo
 * of what was written. Anything else is not this request's answer.
 */
import { encodeWriteAnswer, type ServerRequest } from './pdu.js';

export type ClientAnswer =
  | { ok: true; data: number[] | boolean[] | undefined }
  | { ok: false; exception: number }
  | { ok: false; malformed: string };

const hi = (n: number): number => (n >> 8) & 0xff;
const lo = (n: number): number => n & 0xff;

export function encodeRequest(req: ServerRequest): Uint8Array {
  switch (req.fc) {
    case 1: case 2: case 3: case 4:
      return Uint8Array.of(req.fc, hi(req.address), lo(req.address), hi(req.count), lo(req.count));
    case 5: case 6:
      return encodeWriteAnswer(req); // FC5/6 answers echo the request byte for byte
    case 15: {
      const bytes = Math.ceil(req.values.length / 8);
      const out = new Uint8Array(6 + bytes);
      out.set([15, hi(req.address), lo(req.address), hi(req.values.length), lo(req.values.length), bytes]);
      req.values.forEach((bit, i) => { if (bit) out[6 + (i >> 3)]! |= 1 << (i & 7); });
      return out;
    }
    case 16: {
      const out = new Uint8Array(6 + req.values.length * 2);
      out.set([16, hi(req.address), lo(req.address), hi(req.values.length), lo(req.values.length), req.values.length * 2]);
      req.values.forEach((word, i) => out.set([hi(word), lo(word)], 6 + i * 2));
      return out;
    }
  }
}

/** Reads: the registers (FC3/4) or `count` bits (FC1/2); writes: undefined once the echo matches. */
export function decodeAnswer(req: ServerRequest, pdu: Uint8Array): ClientAnswer {
  const fc = pdu[0] ?? 0;
  if (fc === (req.fc | 0x80)) {
    return pdu.length === 2 ? { ok: false, exception: pdu[1]! } : { ok: false, malformed: `an exception answer of ${pdu.length} bytes, not 2` };
  }
  if (fc !== req.fc) return { ok: false, malformed: `function ${fc} answers a request for function ${req.fc}` };
  if ('count' in req) {
    const bytes = req.fc <= 2 ? Math.ceil(req.count / 8) : req.count * 2;
    if (pdu[1] !== bytes || pdu.length !== 2 + bytes) {
      return { ok: false, malformed: `${pdu.length - 2} data bytes (byte count ${pdu[1] ?? '-'}) where ${req.count} ${req.fc <= 2 ? 'bits' : 'registers'} take ${bytes}` };
    }
    if (req.fc <= 2) return { ok: true, data: Array.from({ length: req.count }, (_, i) => ((pdu[2 + (i >> 3)]! >> (i & 7)) & 1) === 1) };
    return { ok: true, data: Array.from({ length: req.count }, (_, i) => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!) };
  }
  const echo = encodeWriteAnswer(req);
  if (pdu.length !== echo.length || echo.some((b, i) => pdu[i] !== b)) return { ok: false, malformed: 'the write answer does not echo the request' };
  return { ok: true, data: undefined };
}
