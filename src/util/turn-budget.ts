/**
 * Long synchronous work cut into slices of a few milliseconds, with the event loop free between them. The
 * gateway's loop also answers REST, MQTT and the driver polls: one 100 ms stretch of history sealing delays
 * every one of them by 100 ms (the soak's event-loop p99), while the same work in 8 ms slices costs them
 * at most 8 ms. setImmediate, not a resolved promise: it runs after the poll phase, so pending I/O is served
 * before the next slice (a microtask would run before any of it).
 */
export class TurnBudget {
  private sliceStart = performance.now();

  constructor(private readonly sliceMs = 8) {}

  /** True once the current slice has used its time. */
  spent(): boolean {
    return performance.now() - this.sliceStart >= this.sliceMs;
  }

  /** Resolves on a later turn of the event loop; the next slice starts then. */
  async next(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
  }

  /** `next()` when the slice is spent, else nothing (no turn is given up). */
  async maybeYield(): Promise<void> {
    if (this.spent()) await this.next();
  }
}
