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

/**
 * Writes the request PDU for `req` into `out` from `at` (a master's frame buffer, reused for every request);
 * returns where it ends. `out` must have room for the longest PDU (253 bytes).
 */
export function encodeRequestInto(req: ServerRequest, out: Uint8Array, at: number): number {
  out[at] = req.fc;
  out[at + 1] = hi(req.address);
  out[at + 2] = lo(req.address);
  switch (req.fc) {
    case 1: case 2: case 3: case 4:
      out[at + 3] = hi(req.count);
      out[at + 4] = lo(req.count);
      return at + 5;
    case 5: case 6:
      out.set(encodeWriteAnswer(req), at); // FC5/6 answers echo the request byte for byte
      return at + 5;
    case 15: {
      const bytes = Math.ceil(req.values.length / 8);
      out[at + 3] = hi(req.values.length);
      out[at + 4] = lo(req.values.length);
      out[at + 5] = bytes;
      out.fill(0, at + 6, at + 6 + bytes);
      req.values.forEach((bit, i) => { if (bit) out[at + 6 + (i >> 3)]! |= 1 << (i & 7); });
      return at + 6 + bytes;
    }
    case 16:
      out[at + 3] = hi(req.values.length);
      out[at + 4] = lo(req.values.length);
      out[at + 5] = req.values.length * 2;
      req.values.forEach((word, i) => {
        out[at + 6 + i * 2] = hi(word);
        out[at + 7 + i * 2] = lo(word);
      });
      return at + 6 + req.values.length * 2;
  }
}

const scratch = new Uint8Array(253);

export function encodeRequest(req: ServerRequest): Uint8Array {
  return scratch.slice(0, encodeRequestInto(req, scratch, 0));
}

/**
 * Reads: the registers (FC3/4) or `count` bits (FC1/2); writes: undefined once the echo matches. The PDU is
 * `pdu[start, end)` (an RTU master checks it where its line holds the frame).
 */
export function decodeAnswer(req: ServerRequest, pdu: Uint8Array, start = 0, end = pdu.length): ClientAnswer {
  const length = end - start;
  const fc = length > 0 ? pdu[start]! : 0;
  if (fc === (req.fc | 0x80)) {
    return length === 2 ? { ok: false, exception: pdu[start + 1]! } : { ok: false, malformed: `an exception answer of ${length} bytes, not 2` };
  }
  if (fc !== req.fc) return { ok: false, malformed: `function ${fc} answers a request for function ${req.fc}` };
  if ('count' in req) {
    const bytes = req.fc <= 2 ? Math.ceil(req.count / 8) : req.count * 2;
    if (length < 2 || pdu[start + 1] !== bytes || length !== 2 + bytes) {
      return { ok: false, malformed: `${length - 2} data bytes (byte count ${length > 1 ? pdu[start + 1] : '-'}) where ${req.count} ${req.fc <= 2 ? 'bits' : 'registers'} take ${bytes}` };
    }
    const at = start + 2;
    if (req.fc <= 2) {
      const bits = new Array<boolean>(req.count);
      for (let i = 0; i < req.count; i++) bits[i] = ((pdu[at + (i >> 3)]! >> (i & 7)) & 1) === 1;
      return { ok: true, data: bits };
    }
    const words = new Array<number>(req.count);
    for (let i = 0; i < req.count; i++) words[i] = (pdu[at + i * 2]! << 8) | pdu[at + 1 + i * 2]!;
    return { ok: true, data: words };
  }
  const echo = encodeWriteAnswer(req);
  if (length !== echo.length || echo.some((b, i) => pdu[start + i] !== b)) return { ok: false, malformed: 'the write answer does not echo the request' };
  return { ok: true, data: undefined };
}
