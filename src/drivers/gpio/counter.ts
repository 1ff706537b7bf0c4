/**
 * A pulse counter (an energy meter's S0 output, a water meter's reed contact), pure: whole pulses are
 * counted (a total kept as a float sum would drift), the total is pulses / pulses_per_unit, and the rate
 * comes from the interval between the last two pulses. Times are monotonic ms handed in by the caller.
 */

const MS_PER: Record<RatePer, number> = { h: 3_600_000, min: 60_000, s: 1000 };

export type RatePer = 'h' | 'min' | 's';

export interface CounterOptions {
  pulsesPerUnit: number;
  ratePer: RatePer;
  rateTimeoutMs: number;
  /** Monotonic ms when counting started (the rate is known to be 0 only after a whole timeout of it). */
  startMono: number;
  /** The total to continue from (units, as persisted); 0 for a new counter. */
  startTotal?: number;
}

export class PulseCounter {
  private pulses: number;
  private lastAt: number | undefined;
  private intervalMs: number | undefined;

  constructor(private readonly opts: CounterOptions) {
    // The persisted total is pulses / pulses_per_unit: round back to whole pulses so the float of the
    // shadow never shifts the count (0.1 kWh at 1000 imp/kWh is 100 pulses, not 99.99999).
    this.pulses = Math.max(0, Math.round((opts.startTotal ?? 0) * opts.pulsesPerUnit));
  }

  /** A new total (a write: the meter's display), in whole pulses; the rate's intervals go on. */
  set(total: number): void {
    this.pulses = Math.max(0, Math.round(total * this.opts.pulsesPerUnit));
  }

  /** One counted pulse at `mono`. */
  pulse(mono: number): void {
    this.pulses++;
    if (this.lastAt !== undefined) this.intervalMs = mono - this.lastAt;
    this.lastAt = mono;
  }

  get count(): number {
    return this.pulses;
  }

  /** Units so far. */
  total(): number {
    return this.pulses / this.opts.pulsesPerUnit;
  }

  /**
   * Units per `rate_per` at `mono`; undefined while it cannot be known (fewer than two pulses since the
   * start and no whole timeout without one). A late pulse bounds the rate: once the time since the last
   * pulse exceeds the last interval, the rate can be at most one pulse in that time, so it falls as the
   * load does instead of holding the last interval's value; after `rate_timeout` without a pulse it is 0.
   */
  rate(mono: number): number | undefined {
    const { rateTimeoutMs, startMono } = this.opts;
    const since = mono - (this.lastAt ?? startMono);
    if (since >= rateTimeoutMs) return 0;
    if (this.intervalMs === undefined || this.lastAt === undefined) return undefined;
    const interval = Math.max(this.intervalMs, since);
    // A zero interval cannot come through the debounce; guard the division anyway.
    if (!(interval > 0)) return undefined;
    return MS_PER[this.opts.ratePer] / (this.opts.pulsesPerUnit * interval);
  }
}
