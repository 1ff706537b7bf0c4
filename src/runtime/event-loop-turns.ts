/**
 * Event-loop delay as a timer sampling every `resolutionMs` would record it (perf_hooks.monitorEventLoopDelay),
 * without waking a loop that sleeps and without an async hook. An async hook with `before` turns on V8's
 * promise hooks, so every promise reaction calls into JS (about 4% of the gateway's main thread on a 4-device
 * bus, scripts/bench/modbus-bus.ts), and a sampling timer at 20 ms woke the gateway 50 times a second.
 *
 * Two ways of seeing the loop, from libuv's own account of the time it slept (performance.nodeTiming.idleTime):
 * - a look (`look()`, called by callbacks the gateway runs often — the bus owner's requests — and by a slow
 *   timer when a second passed without one while the loop shows activity): the busy time since the previous
 *   look is taken as one stretch that ends now, and a sampling tick due in it would have fired late by up to
 *   its length. A stall is never missed, though a look made inside it splits it in two (the bus owner looks
 *   before a request, where a turn has done little yet); busy time of several short turns between two looks
 *   reads as one longer one (at most the busy time of a second on a loop under START_SHARE).
 * - a busy loop (a stretch of `resolutionMs` or more that is START_SHARE of the time since the previous look)
 *   gets a real sampling timer, which records its own lateness as monitorEventLoopDelay does and stops once a
 *   span of it was less than STOP_SHARE busy. It costs wake-ups only while the loop is busy anyway; a single
 *   stall on a quiet loop (a save, a flush) is seen whole by the next look and starts no sampler.
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

/** How long the loop goes without a look before the slow timer looks (the gateway's own looks put it off). */
const LOOK_MS = 1000;
/** Busy time since the previous look under which the loop counts as asleep (the look itself costs ~0.01 ms). */
const ASLEEP_MS = 0.05;
/**
 * The busy share since the previous look that starts the sampler; the span after which the sampler asks whether
 * the loop is still busy, and the share that stops it.
 */
const START_SHARE = 0.05;
const SPAN_MS = 500;
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
    const since = now - lastAt;
    const busy = Math.max(0, since - (idle - lastIdle));
    lastAt = now;
    lastIdle = idle;
    freeUntil(now - busy);
    if (tick < now) {
      record(now - tick);
      tick = now + resolutionMs;
    }
    if (busy >= resolutionMs && busy >= START_SHARE * since) startSampling(now, idle);
    return busy;
  };

  const look = (): void => {
    if (!running || sampling) return;
    account();
    if (!sampling) armSlowLook();
  };

  const armSlowLook = (): void => {
    if (slowLook) slowLook.refresh();
    else slowLook = setTimeout(onSlowLook, LOOK_MS).unref();
  };

  /** No look for a second: one now, and again in a second unless the loop slept (the next look starts it again). */
  const onSlowLook = (): void => {
    if (!running || sampling) return;
    const busy = account();
    if (!sampling && busy >= ASLEEP_MS) armSlowLook();
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
