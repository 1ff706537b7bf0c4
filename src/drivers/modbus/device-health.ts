/**
 * Degradation of a dead slave, so it never stalls the rest of the bus (peers.md (c) 3): after
 * `failuresToDegrade` consecutive failed requests the device is skipped; one probe request is let through
 * per probe period (the caller's: the poller paces probes by the device's poll interval and the bus's line
 * budget, drivers/modbus/poller.ts), clamped to [minBackoffMs, maxBackoffMs]; the first answer restores it.
 * While a device is suspect (its last request failed) retries are not spent on it either.
 */
export interface HealthOptions {
  failuresToDegrade: number;
  minBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_HEALTH: HealthOptions = { failuresToDegrade: 3, minBackoffMs: 1_000, maxBackoffMs: 60_000 };

export class DeviceHealth {
  consecutiveFailures = 0;
  degraded = false;
  /** When the next probe may run (ms, injected clock). */
  probeAt = 0;
  degradations = 0;

  constructor(private readonly options: HealthOptions) {}

  /** Whether a poll of this device may go on the bus now; a degraded device gets one probe per period. */
  mayPoll(now: number): boolean {
    return !this.degraded || now >= this.probeAt;
  }

  /**
   * A request to a degraded unit goes on the line: it is this period's probe, and it claims the period now, so
   * requests that arrive while it waits for its answer fail fast rather than share its timeout (identical reads
   * in flight share one request: 20 client reads/s sharing a client's probe timed out 6 at once). The first
   * answer clears the claim with the degradation.
   */
  claim(now: number, probeEveryMs = this.options.minBackoffMs): void {
    if (this.degraded) this.probeAt = Math.max(this.probeAt, now + this.wait(probeEveryMs));
  }

  private wait(probeEveryMs: number): number {
    return Math.min(Math.max(probeEveryMs, this.options.minBackoffMs), this.options.maxBackoffMs);
  }

  /**
   * A request timed out or failed at the link level (a Modbus exception is an answer, not a death).
   * `probeEveryMs`: when a degraded device may be probed next, counted from `sentAt`, when the failed request
   * went on the line (default: now). Counted from the probe's start, as a poll's interval is, a unit that
   * comes back is seen within one period; counted from its timeout, the period grew by the timeout (1 s polls
   * probed every 1.3 s, and a revival took up to 2.7 cycles). A probe never moves the next one earlier than
   * another request's failure already put it: the gate is shared with on-demand reads.
   */
  failed(now: number, probeEveryMs = this.options.minBackoffMs, sentAt = now): void {
    this.consecutiveFailures++;
    const wait = this.wait(probeEveryMs);
    if (this.degraded) {
      this.probeAt = Math.max(this.probeAt, Math.min(sentAt, now) + wait);
    } else if (this.consecutiveFailures >= this.options.failuresToDegrade) {
      this.degraded = true;
      this.degradations++;
      this.probeAt = Math.min(sentAt, now) + wait;
    }
  }

  answered(): void {
    this.consecutiveFailures = 0;
    this.degraded = false;
  }

  /** Retries only for a device that answered its last request: retrying a dead one doubles the stall. */
  get suspect(): boolean {
    return this.consecutiveFailures > 0;
  }
}
