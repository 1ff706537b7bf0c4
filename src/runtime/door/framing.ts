/**
 * How a Modbus server's TCP stream is cut into requests and how answers are wrapped: MBAP (Modbus TCP, the
 * default) or RTU over TCP (what serial-to-Ethernet converters in "transparent" mode and some SCADA send:
 * unit + PDU + CRC, no header). RTU has no length field: a request ends where its function code says
 * (frame.ts), its CRC is checked, and one with a bad CRC is dropped unanswered, as an RTU slave on a line
 * would; the splitter then finds the next good frame again.
 */
import { MbapParser, encodeMbap, type MbapFrame, type MbapResult } from '../../protocol/modbus/mbap.js';
import { FrameSplitter, rtuFrame } from '../../protocol/modbus/frame.js';

export type FramingName = 'mbap' | 'rtu';

export interface DoorFraming {
  /** Whole requests in a chunk of the stream; `error` once the stream cannot be framed any more (closed). */
  push(chunk: Uint8Array): MbapResult;
  /** One answer as it goes on the stream. `tid` is 0 and unused on RTU, which has no transaction id. */
  encode(tid: number, unit: number, pdu: Uint8Array): Uint8Array;
}

/**
 * A partial RTU frame left this long with nothing more is dropped: the silence that ends a frame on a line,
 * stretched for a network (a client sends a request in one write, so a gap inside one is a lost tail).
 */
export const RTU_GAP_MS = 1000;

export function mbapFraming(): DoorFraming {
  const parser = new MbapParser();
  return { push: (chunk) => parser.push(chunk), encode: encodeMbap };
}

/** `onDiscard`: bytes dropped as no request (a bad CRC, noise, a frame cut short), for the server's figures. */
export function rtuFraming(now: () => number, onDiscard: (bytes: number) => void): DoorFraming {
  let frames: MbapFrame[] = [];
  // Only requests come to a server: a frame is never taken for a reply (answerWindowMs -1), so pipelined
  // FC 5/6 requests (whose answers are copies of them) stay requests.
  const splitter = new FrameSplitter({ gapMs: RTU_GAP_MS, answerWindowMs: -1 }, {
    request: (buf, start, end) => frames.push({ tid: 0, unit: buf[start]!, pdu: buf.slice(start + 1, end - 2) }),
    response: (_buf, start, end) => onDiscard(end - start),
    discard: onDiscard,
  });
  return {
    push(chunk) {
      splitter.push(chunk, now());
      const out = frames;
      frames = [];
      return { frames: out };
    },
    encode: encodeRtu,
  };
}

/** unit + PDU + CRC (low byte first). */
export const encodeRtu = (_tid: number, unit: number, pdu: Uint8Array): Uint8Array => rtuFrame(unit, pdu);
