/**
 * Degradation of a dead slave, so it never stalls the rest of the bus (peers.md (c) 3): after
 * `failuresToDegrade` consecutive failed requests the device is skipped; one probe request is let
 * through after a backoff that doubles up to `maxBackoffMs`; the first answer restores it. While a
 * device is suspect (its last request failed) retries are not spent on it either.
 */
export interface HealthOptions {
  failuresToDegrade: number;
  minBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_HEALTH: HealthOptions = { failuresToDegrade: 3, minBackoffMs: 2_000, maxBackoffMs: 60_000 };

export class DeviceHealth {
  consecutiveFailures = 0;
  degraded = false;
  /** When the next probe may run (ms, injected clock). */
  probeAt = 0;
  private backoff: number;
  degradations = 0;

  constructor(private readonly options: HealthOptions) {
    this.backoff = options.minBackoffMs;
  }

  /** Whether a poll of this device may go on the bus now; a degraded device gets one probe per backoff. */
  mayPoll(now: number): boolean {
    return !this.degraded || now >= this.probeAt;
  }

  /** A request timed out or failed at the link level (a Modbus exception is an answer, not a death). */
  failed(now: number): void {
    this.consecutiveFailures++;
    if (this.degraded) {
      this.backoff = Math.min(this.backoff * 2, this.options.maxBackoffMs);
      this.probeAt = now + this.backoff;
    } else if (this.consecutiveFailures >= this.options.failuresToDegrade) {
      this.degraded = true;
      this.degradations++;
      this.backoff = this.options.minBackoffMs;
      this.probeAt = now + this.backoff;
    }
  }

  answered(): void {
    this.consecutiveFailures = 0;
    this.degraded = false;
    this.backoff = this.options.minBackoffMs;
  }

  /** Retries only for a device that answered its last request: retrying a dead one doubles the stall. */
  get suspect(): boolean {
    return this.consecutiveFailures > 0;
  }
}
