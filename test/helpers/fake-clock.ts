import type { Clock } from '../../src/core/clock.js';

/**
 * A clock the test moves by hand: the shadow's TTL and offline rules are tested without sleeps.
 * `advance` moves both clocks (time passes); `stepWall` moves the wall clock alone, as NTP does when it
 * corrects a Pi that booted without an RTC.
 */
export class FakeClock implements Clock {
  private monoT = 1_000_000;
  constructor(public t = Date.UTC(2026, 0, 1, 12, 0, 0)) {}
  now(): number {
    return this.t;
  }
  mono(): number {
    return this.monoT;
  }
  advance(ms: number): void {
    this.t += ms;
    this.monoT += ms;
  }
  stepWall(ms: number): void {
    this.t += ms;
  }
}
