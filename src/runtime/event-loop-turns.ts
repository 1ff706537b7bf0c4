/**
 * Event-loop delay as a timer sampling every `resolutionMs` would record it (perf_hooks.monitorEventLoopDelay),
 * without waking a loop that sleeps and without an async hook. An async hook with `before` turns on V8's
 * promise hooks, so every promise reaction calls into JS (about 4% of the gateway's main thread on a 4-device
 * bus, scripts/bench/modbus-bus.ts), and a sampling timer at 20 ms woke the gateway 50 times a second.
 *
 * Two ways of seeing the loop, from libuv's own account of the time it slept (performance.nodeTiming.idleTime):
 * - a look (`look()`, called by callbacks the gateway runs often — the bus owner's requests — and by a slow
 *   timer while the loop shows activity): the busy time since the previous look is taken as one stretch that
 *   ends now, and a sampling tick due in it would have fired late by up to its length. A stall is never
 *   missed; busy time of several short turns between two looks reads as one longer one (overstated, never
 *   understated), so looks come often on a loop that works and the slow timer backs off on one that sleeps.
 * - a busy loop (a stretch of `resolutionMs` or more between two looks) gets a real sampling timer, which
 *   records its own lateness as monitorEventLoopDelay does and stops once a second of it was less than
 *   STOP_SHARE busy. It costs wake-ups only while the loop is busy anyway.
 */
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';

export interface TurnDelays {
  start(): void;
  stop(): void;
  /** Accounts the loop's busy time since the last look (cheap: two clock reads, no allocation). */
  look(): void;
  /** Accounts the loop's time up to now, then returns the histogram (µs). */
  histogram(): RecordableHistogram;
}

/** The slow look's interval bounds: it starts at the lower and doubles while the loop stays quiet. */
const LOOK_MIN_MS = 100;
const LOOK_MAX_MS = 1000;
/** Busy time between two slow looks under which the loop counts as quiet (the look itself costs ~0.01 ms). */
const QUIET_MS = 0.5;
/** How long the sampler runs before it asks whether the loop is still busy, and the busy share that stops it. */
const SPAN_MS = 1000;
const STOP_SHARE = 0.02;

export function turnDelays(resolutionMs: number): TurnDelays {
  const h = createHistogram();
  let running = false;
  /** The next sampling tick: the sampler's while it runs, a virtual one otherwise. */
  let tick = 0;
  /** The previous look: when, and libuv's idle time then (ms). */
  let lastAt = 0;
  let lastIdle = 0;
  let sampler: NodeJS.Timeout | undefined;
  let sampling = false;
  /** The sampler's current span: its start and the idle time then. */
  let spanAt = 0;
  let spanIdle = 0;
  let slowLook: NodeJS.Timeout | undefined;
  /** The slow look's next interval, and the one its timer was made with (refresh() keeps that one). */
  let lookMs = LOOK_MIN_MS;
  let armedMs = 0;

  // The histogram takes integers ≥ 1: delays in µs, 0 recorded as 1.
  const record = (delayMs: number): void => h.record(Math.max(1, Math.round(delayMs * 1000)));
  const idleNow = (): number => performance.nodeTiming.idleTime;
  /** Ticks due before `until` found the loop free. */
  const freeUntil = (until: number): void => {
    for (; tick < until; tick += resolutionMs) record(0);
  };

  /** Busy time since the previous look, accounted as a stretch ending now; returns it (ms). */
  const account = (): number => {
    const now = performance.now();
    const idle = idleNow();
    const busy = Math.max(0, now - lastAt - (idle - lastIdle));
    lastAt = now;
    lastIdle = idle;
    freeUntil(now - busy);
    if (tick < now) {
      record(now - tick);
      tick = now + resolutionMs;
    }
    if (busy >= resolutionMs) startSampling(now, idle);
    return busy;
  };

  const look = (): void => {
    if (!running || sampling) return;
    account();
    if (!sampling) {
      lookMs = LOOK_MIN_MS;
      armSlowLook();
    }
  };

  const armSlowLook = (): void => {
    if (slowLook && armedMs === lookMs) slowLook.refresh();
    else {
      clearTimeout(slowLook);
      slowLook = setTimeout(onSlowLook, (armedMs = lookMs)).unref();
    }
  };

  /** No look for a while: one now; again soon while the loop works, later while it is quiet, never once it sleeps. */
  const onSlowLook = (): void => {
    if (!running || sampling) return;
    const busy = account();
    if (sampling || busy < 0.05) return; // asleep: the next look (the window's at the latest) starts it again
    lookMs = busy < QUIET_MS ? Math.min(LOOK_MAX_MS, lookMs * 2) : LOOK_MIN_MS;
    armSlowLook();
  };

  const startSampling = (now: number, idle: number): void => {
    sampling = true;
    spanAt = now;
    spanIdle = idle;
    tick = now + resolutionMs;
    if (sampler) sampler.refresh();
    else sampler = setTimeout(onSample, resolutionMs).unref();
  };

  const onSample = (): void => {
    if (!running) return;
    const now = performance.now();
    record(Math.max(0, now - tick));
    tick = now + resolutionMs;
    if (now - spanAt >= SPAN_MS) {
      const idle = idleNow();
      if (now - spanAt - (idle - spanIdle) < STOP_SHARE * (now - spanAt)) {
        sampling = false;
        lastAt = now;
        lastIdle = idle;
        lookMs = LOOK_MIN_MS;
        armSlowLook();
        return;
      }
      spanAt = now;
      spanIdle = idle;
    }
    sampler!.refresh();
  };

  return {
    start() {
      running = true;
      sampling = false;
      lastAt = performance.now();
      lastIdle = idleNow();
      tick = lastAt + resolutionMs;
      lookMs = LOOK_MIN_MS;
      armSlowLook();
    },
    stop() {
      running = false;
      sampling = false;
      clearTimeout(sampler);
      clearTimeout(slowLook);
      sampler = slowLook = undefined;
    },
    look,
    histogram() {
      if (running && !sampling) look();
      return h;
    },
  };
}
