import type { Clock } from '../../src/core/clock.js';

/** A clock the test moves by hand: the shadow's TTL and offline rules are tested without sleeps. */
export class FakeClock implements Clock {
  constructor(public t = Date.UTC(2026, 0, 1, 12, 0, 0)) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
