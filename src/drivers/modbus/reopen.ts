/**
 * One reopen policy for every port a Modbus part owns (a bus's link, bus-owner.ts; an RTU server's serial port,
 * runtime/persona/rtu-slave.ts): an open that fails is tried again after a backoff that doubles from `minMs` to
 * `maxMs`, and a lost port is tried again at once. A serial port that had vanished is reopened as soon as its
 * path is back (checked every PRESENCE_POLL_MS, a stat): a re-plugged adapter should not wait out a backoff
 * grown while it was away. The backoff still paces opens that fail on a port that is there.
 */

/** How often a vanished port's path is looked for while a reopen waits. */
export const PRESENCE_POLL_MS = 100;

/** The defaults: an unplugged adapter is looked for within half a second, a broken one tried every 30 s at most. */
export const REOPEN_MIN_MS = 500;
export const REOPEN_MAX_MS = 30_000;

export interface ReopenOptions {
  minMs: number;
  maxMs: number;
  /** Opens the port; a rejection is a failed attempt. */
  open(): Promise<void>;
  /** Whether the port's path exists now (undefined: cannot tell, e.g. TCP). */
  present?(): boolean | undefined;
  /** An attempt failed; the next comes after `retryMs`. */
  failed?(err: Error, retryMs: number): void;
}

export class Reopener {
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private opening: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: ReopenOptions) {
    this.delay = options.minMs;
  }

  /** The first open (or the first after `stop`): as `openNow`. */
  start(): Promise<boolean> {
    this.stopped = false;
    return this.attempt();
  }

  /**
   * Opens now (an attempt already under way is shared). Resolves true when it opened; a failure is reported to
   * `failed` and tried again after the backoff, and this resolves false.
   */
  openNow(): Promise<boolean> {
    return this.attempt();
  }

  /** The port went away: try again after `delayMs` (0: at once), or as soon as its vanished path is back. */
  schedule(delayMs: number): void {
    if (this.stopped || this.timer) return;
    const at = performance.now() + delayMs;
    let wasAbsent = false;
    const tick = (): void => {
      this.timer = undefined;
      if (this.stopped) return;
      const present = this.options.present?.();
      if (present === false) wasAbsent = true;
      if (performance.now() >= at - 1 || (wasAbsent && present === true)) {
        void this.attempt();
        return;
      }
      this.timer = setTimeout(tick, present === undefined ? at - performance.now() : Math.min(PRESENCE_POLL_MS, at - performance.now()));
    };
    this.timer = setTimeout(tick, Math.min(delayMs, PRESENCE_POLL_MS));
  }

  /** No more attempts; resolves once one under way has settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.opening?.catch(() => {});
  }

  private attempt(): Promise<boolean> {
    if (this.opening) return this.opening.then(() => true, () => false);
    const opening = this.options.open();
    this.opening = opening;
    return opening.then(() => {
      this.opening = null;
      this.delay = this.options.minMs;
      return true;
    }, (err: unknown) => {
      this.opening = null;
      const retryMs = this.delay;
      this.delay = Math.min(this.delay * 2, this.options.maxMs);
      this.options.failed?.(err instanceof Error ? err : new Error(String(err)), retryMs);
      this.schedule(retryMs);
      return false;
    });
  }
}
