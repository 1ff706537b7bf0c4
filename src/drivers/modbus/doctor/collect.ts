/**
 * What the bytes that came back after one request amount to, as the doctor sees them. Pure, so the echo
 * and late-frame rules are tested on bytes. The bytes are everything heard since the request went out.
 *
 * - An adapter without echo suppression hands the request itself back first: those bytes are stripped and
 *   the echo noted (the bus option `echo` strips them in the gateway).
 * - A whole frame with a good CRC from another unit is a late answer to an earlier ask: noted and skipped.
 * - A whole frame with a good CRC from the unit asked, with the function asked (or its exception), is the
 *   answer. Anything else heard by the deadline is garbage: a wrong baud or parity, A/B swapped, a collision.
 */
import { crcOk, expectedResponseLength, NEED_MORE, UNKNOWN } from '../../../protocol/modbus/frame.js';
import type { Exchange } from '../../../protocol/modbus/doctor-types.js';

export interface Judged {
  /** null: nothing final yet (wait for more bytes, or for the deadline). */
  exchange: Exchange | null;
  echo: boolean;
  /** Units of whole good frames from units not asked. */
  late: number[];
  /** The bytes end in a frame not whole yet (an echo or an answer still coming): at the deadline, worth a little more wait. */
  incomplete?: boolean;
}

const startsWith = (buf: Uint8Array, end: number, prefix: Uint8Array): boolean => {
  const n = Math.min(end, prefix.length);
  for (let i = 0; i < n; i++) if (buf[i] !== prefix[i]) return false;
  return true;
};

/**
 * `request` is the whole RTU frame sent (address, PDU, CRC); `buf[0, end)` what came back since. `final`:
 * the deadline has passed, so what is there is all there is.
 */
export function judgeAnswer(request: Uint8Array, buf: Uint8Array, end: number, final: boolean): Judged {
  const unit = request[0]!;
  const fc = request[1]!;
  const late: number[] = [];
  let echo = false;
  let at = 0;
  if (end >= request.length && startsWith(buf, end, request)) {
    echo = true;
    at = request.length;
  }
  const pending = (incomplete: boolean): Judged => ({
    exchange: final ? (at === end ? { kind: 'silence' } : { kind: 'garbage', bytes: end - at }) : null, echo, late, ...(incomplete ? { incomplete } : {}),
  });
  if (!echo && end > 0 && startsWith(buf, end, request)) return pending(true); // maybe the echo, still coming
  while (at < end) {
    const length = expectedResponseLength(buf, at, end);
    if (length === NEED_MORE || (length !== UNKNOWN && at + length > end)) return pending(true);
    if (length === UNKNOWN || !crcOk(buf, at, at + length)) return pending(false);
    const from = buf[at]!;
    const answerFc = buf[at + 1]!;
    if (from === unit && (answerFc === fc || answerFc === (fc | 0x80))) {
      const exchange: Exchange = answerFc & 0x80
        ? { kind: 'exception', code: buf[at + 2]! }
        : { kind: 'answer', pdu: buf.slice(at + 1, at + length - 2) };
      return { exchange, echo, late };
    }
    if (from !== unit) late.push(from);
    at += length;
  }
  return pending(false);
}
