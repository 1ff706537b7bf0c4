/**
 * Modbus TCP framing (Modbus Messaging on TCP/IP Implementation Guide v1.0b §3.1.3): a 7-byte MBAP header
 * (transaction id, protocol id 0, length of unit id + PDU, unit id) in front of each PDU. TCP is a byte
 * stream, so a frame may arrive in pieces or several in one chunk; the parser keeps at most one frame's
 * bytes. A header that cannot be Modbus (protocol id not 0, a length outside 2..254) means the stream is
 * out of step for good: the parser says so and the caller closes that connection.
 */

export const MBAP_HEADER_BYTES = 7;
/** Largest PDU (Modbus Application Protocol v1.1b3 §4.1): 253 bytes; an ADU is at most 260. */
export const MAX_PDU_BYTES = 253;

export interface MbapFrame {
  tid: number;
  unit: number;
  pdu: Uint8Array;
}

export type MbapResult = { frames: MbapFrame[]; error?: string };

export class MbapParser {
  private pending = new Uint8Array(0);

  /** Bytes not yet part of a whole frame (bounded by one ADU). */
  get buffered(): number {
    return this.pending.length;
  }

  /** Takes a chunk from the stream; returns the whole frames in it, or an error once the stream is out of step. */
  push(chunk: Uint8Array): MbapResult {
    const data = this.pending.length === 0 ? chunk : concat(this.pending, chunk);
    const frames: MbapFrame[] = [];
    let at = 0;
    while (data.length - at >= MBAP_HEADER_BYTES) {
      const protocol = (data[at + 2]! << 8) | data[at + 3]!;
      const length = (data[at + 4]! << 8) | data[at + 5]!;
      if (protocol !== 0) return this.fail(frames, `protocol id ${protocol} is not Modbus (0)`);
      if (length < 2 || length > MAX_PDU_BYTES + 1) return this.fail(frames, `MBAP length ${length} is outside 2..${MAX_PDU_BYTES + 1}`);
      const end = at + 6 + length;
      if (data.length < end) break;
      frames.push({ tid: (data[at]! << 8) | data[at + 1]!, unit: data[at + 6]!, pdu: data.slice(at + 7, end) });
      at = end;
    }
    this.pending = data.slice(at);
    return { frames };
  }

  private fail(frames: MbapFrame[], error: string): MbapResult {
    this.pending = new Uint8Array(0);
    return { frames, error };
  }
}

/** One ADU: the MBAP header around `pdu`. */
export function encodeMbap(tid: number, unit: number, pdu: Uint8Array): Uint8Array {
  const out = new Uint8Array(MBAP_HEADER_BYTES + pdu.length);
  out[0] = (tid >> 8) & 0xff;
  out[1] = tid & 0xff;
  const length = pdu.length + 1;
  out[4] = (length >> 8) & 0xff;
  out[5] = length & 0xff;
  out[6] = unit & 0xff;
  out.set(pdu, MBAP_HEADER_BYTES);
  return out;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
