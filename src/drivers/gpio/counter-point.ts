/**
 * A pulse counter as the gpio driver serves it: continued from the total the shadow holds (restored from
 * data_dir at start), its total and rate points reported at each poll, read, and set by a write.
 */
import type { Clock } from '../../core/clock.js';
import { invalidValue, pointReadonly } from '../../core/errors.js';
import type { Value } from '../../core/types.js';
import type { PointConfig } from '../../config/types.js';
import type { RawValue } from '../types.js';
import { PulseCounter } from './counter.js';
import type { CounterSpec, LineSpec } from './plan.js';

export class CounterPoint {
  private readonly counter: PulseCounter;
  private readonly settings: CounterSpec;
  /** The raw total it went on from (undefined: a new counter). */
  readonly continuedFrom: number | undefined;

  constructor(private readonly spec: LineSpec, point: PointConfig | undefined, last: Value | null, private readonly clock: Clock) {
    this.settings = spec.counter!;
    // The shadow holds raw × scale + offset; the counter goes on from the raw total.
    const raw = typeof last === 'number' ? (last - (point?.offset ?? 0)) / (point?.scale ?? 1) : undefined;
    this.continuedFrom = raw !== undefined && Number.isFinite(raw) ? raw : undefined;
    const { pulsesPerUnit, ratePer, rateTimeoutMs } = this.settings;
    this.counter = new PulseCounter({ pulsesPerUnit, ratePer, rateTimeoutMs, startMono: clock.mono(), startTotal: this.continuedFrom ?? 0 });
  }

  /** A debounced edge of the counted kind. */
  pulse(): void {
    this.counter.pulse(this.clock.mono());
  }

  total(): number {
    return this.counter.total();
  }

  /** The total and every rate point (a rate not known yet is left out: never a made-up 0). */
  collect(values: Record<string, RawValue>): void {
    values[this.spec.point] = this.counter.total();
    const rate = this.counter.rate(this.clock.mono());
    if (rate === undefined) return;
    for (const name of this.settings.ratePoints) values[name] = rate;
  }

  /**
   * The total, or a rate; undefined for a rate not known yet (left out of the read: it is no device failure,
   * which would take the device towards offline).
   */
  read(point: string): RawValue | undefined {
    return point === this.spec.point ? this.counter.total() : this.counter.rate(this.clock.mono());
  }

  /** The raw total a write asks for; only the total of an RW counter takes one (its rate never does). */
  check(point: string, value: RawValue): number {
    if (point !== this.spec.point || this.spec.access === 'R') throw pointReadonly();
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw invalidValue(`value ${JSON.stringify(value)} is not a total for point ${point}: the count starts at 0`);
    }
    return value;
  }

  set(total: number): void {
    this.counter.set(total);
  }
}
