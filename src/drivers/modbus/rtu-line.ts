/**
 * The RTU line: the gateway's master on a serial line (rtu-transport.ts), listening before it talks. What it
 * reads, stamps and cuts into answers is rtu-reader.ts; here, what another master says between our
 * transactions is heard (line-listener.ts), when the line is free is decided from the last byte heard, and a
 * request that finds the line not free after all is held until it is.
 */
import { MAX_FRAME } from '../../protocol/modbus/frame.js';
import { LineListener } from './line-listener.js';
import { RtuReader } from './rtu-reader.js';
import type { LineBinding } from './serial-bytes.js';
import type { RtuOptions } from './transport.js';

export { UV_READABLE, type BoundPort, type LineBinding } from './serial-bytes.js';

/**
 * A line where another master was heard this recently is shared: the gateway leaves it a turn after each
 * frame, and checks that an answer did not come faster than it can have (rtu-transport.ts). Alone on a line
 * (nothing heard outside our own transactions for this long) neither applies.
 */
export const SHARED_LINE_MS = 60_000;

export class RtuLine extends RtuReader {
  /** Another master's traffic heard between our transactions. */
  readonly listener: LineListener;
  /** How long a slave may take to answer (our timeout): how long another master's request holds the line. */
  answerWaitMs = 300;
  /** A request held back because the line was not free when it was sent. */
  private heldTimer: NodeJS.Timeout | undefined;
  /** When our last request went out, and how many bytes of a copy of it were heard after its transaction. */
  private sentAt = -Infinity;
  private copied = 0;

  constructor(options: RtuOptions, binding?: LineBinding) {
    super(options, binding);
    this.listener = new LineListener(this.t35, this.frameGapMs);
  }

  /**
   * A request, `frame[0, length)` (unit, PDU, CRC; the caller keeps the bytes until the transaction ends):
   * the transaction begins, what was heard before it is not its answer. Listen before talk, at the last
   * moment: the bus owner waited until the line was free, but bytes may have come since its last look (a
   * GC pause or the scheduler between that look and this call), so what waits in the kernel is read and
   * stamped here, right before the write — unless a read found the kernel empty a fraction of a character
   * ago (the bus owner's own look, a few microtasks back): a byte that lands in between was begun by a
   * master that started together with this one, which no read can hear in time. A line that is not free
   * after all holds the request until it is (rare; the request's timeout runs meanwhile) — on a line that
   * never falls silent, at most two longest frames, as the bus owner does.
   */
  send(frame: Uint8Array, length: number, heldSince = performance.now()): void {
    if (!this.hasFd() || length < 4) return;
    if (!this.fresh(this.bytes.drainedAt)) this.readNow();
    const now = performance.now();
    const wait = this.freeAt() - now;
    if (wait > 0 && now - heldSince < 2 * MAX_FRAME * this.charMs) {
      clearTimeout(this.heldTimer);
      this.heldTimer = setTimeout(() => this.send(frame, length, heldSince), Math.max(1, Math.ceil(wait)));
      return;
    }
    this.listener.reset();
    this.sentAt = performance.now();
    this.copied = 0;
    this.begin(frame, length);
  }

  /**
   * When the line is free, from what it heard: t3.5 after the last byte, and not before another master's
   * request heard has been answered (or its answer window passed), nor while a frame heard is not whole.
   * On a shared line, t3.5 more: another master that waits t3.5 after a frame, as the standard says, would
   * start together with the gateway after every frame (after the gateway's own answers above all); the
   * gateway leaves it that moment and hears its first bytes before deciding, also through an adapter or a
   * relay that hands bytes over a little late.
   */
  freeAt(): number {
    return Math.max(this.bytes.lastByte + this.t35, this.heldUntil());
  }

  /** Until when the line is not free for another reason than the t3.5 after its last byte (0: none now). */
  heldUntil(): number {
    const until = Math.max(this.listener.answerPendingUntil(), this.listener.busyUntil(), this.shared() ? this.bytes.lastByte + 2 * this.t35 : 0);
    return until > performance.now() ? until : 0;
  }

  /** Whether another master was heard on the line within SHARED_LINE_MS. */
  shared(): boolean {
    return performance.now() - this.listener.lastHeardAt() < SHARED_LINE_MS;
  }

  protected override heard(bytes: Uint8Array, at: number): void {
    if (this.ownCopy(bytes, at)) return;
    this.listener.heard(bytes, at, this.answerWaitMs);
  }

  /**
   * Whether `bytes`, heard after our transaction, are (so far) a copy of our request, once, within its answer
   * window: the adapter's echo that came late, or an FC 5/6 slave's answer after an echo taken for it (echo
   * off). Ours, not another master's request — which would mark the line shared and hold it. A copy that
   * turns out to be something else after all is heard whole, its first bytes included.
   */
  private ownCopy(bytes: Uint8Array, at: number): boolean {
    const { sent: copy, sentLength: sent, echo, copiesSeen } = this.finder;
    if (this.copied >= sent || at - this.sentAt > this.answerWaitMs) return false;
    // Only where a copy can come: from an adapter seen (or set) to echo, or as the answer of a write (FC 5/6/8,
    // answered with a copy of the request). Otherwise the same first bytes are another master asking the same
    // unit and function — hidden from the listener, the line looked free inside its frame and we talked into it.
    const fc = copy[1];
    if (!echo && !copiesSeen && fc !== 5 && fc !== 6 && fc !== 8) return false;
    const fits = this.copied + bytes.length <= sent && bytes.every((b, k) => b === copy[this.copied + k]);
    if (fits) {
      this.copied += bytes.length;
      if (this.copied === sent) this.copied = Infinity; // once per request
      return true;
    }
    if (this.copied > 0) {
      const head = Buffer.from(copy.subarray(0, this.copied));
      this.copied = Infinity;
      this.listener.heard(Buffer.concat([head, bytes]), at, this.answerWaitMs);
      return true;
    }
    this.copied = Infinity;
    return false;
  }

  protected override ownLate(bytes: Uint8Array, at: number): boolean {
    return this.listener.takeLate(bytes, at);
  }

  protected override stopTimers(): void {
    super.stopTimers();
    clearTimeout(this.heldTimer);
    this.heldTimer = undefined;
  }
}
