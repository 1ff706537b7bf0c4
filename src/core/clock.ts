/**
 * Time comes from here so the shadow's TTL and offline rules are tested with a fake clock, not sleeps.
 * Two clocks (DESIGN §3 rule 11): a Pi has no RTC and boots with a wrong wall time that NTP later steps,
 * possibly by months. Every duration — TTL, the 60 s rule, poll due times, backoff — is measured on the
 * monotonic clock, which no step moves; wall time only stamps what users see (updated_at, history).
 */
export interface Clock {
  /** Wall time, ms since the epoch: timestamps shown to users and stored in history. */
  now(): number;
  /** Monotonic ms from an arbitrary origin: every duration. Never steps. */
  mono(): number;
}

export const systemClock: Clock = { now: () => Date.now(), mono: () => performance.now() };
