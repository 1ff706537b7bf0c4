/**
 * A Modbus TCP client's transaction ids (Messaging on TCP/IP Implementation Guide §3.1.3: 16 bits, chosen by
 * the client). Ids go 1..65535 and round again, skipping every id whose request timed out while its answer
 * may still come: a late answer then always carries an id no outstanding request has, however late it is.
 * An id is free again once its late answer came, or when the connection is new (no old answer comes on it).
 */
export class TransactionIds {
  private readonly unanswered = new Set<number>();

  /** `last`: the id before the first one handed out (tests start near the end to see the round). */
  constructor(private last = 0) {}

  /** Ids whose request timed out and whose answer has not come. */
  get pending(): number {
    return this.unanswered.size;
  }

  next(): number {
    if (this.unanswered.size >= 0xffff) throw new Error('every transaction id waits for a late answer');
    do this.last = this.last >= 0xffff ? 1 : this.last + 1;
    while (this.unanswered.has(this.last));
    return this.last;
  }

  /** The request with `tid` got no answer in time; its answer may still come. */
  timedOut(tid: number): void {
    this.unanswered.add(tid);
  }

  /** An answer with `tid` came for no outstanding request; true when it was a timed-out request's. */
  lateAnswer(tid: number): boolean {
    return this.unanswered.delete(tid);
  }

  /** A new connection: no answer sent on the old one can come. */
  renew(): void {
    this.unanswered.clear();
  }
}
