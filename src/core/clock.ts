/** Time comes from here so the shadow's TTL and offline rules are tested with a fake clock, not sleeps. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
