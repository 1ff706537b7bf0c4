/**
 * The event loop's delay (perf_hooks.monitorEventLoopDelay), as a part whose stats reach /metrics and
 * /api/v1/system: a stall here is a late poll, a late MQTT message and a late watchdog ping (issue 16
 * measures it with everything running). `window*` figures cover the last completed 10 s window, the others
 * the whole run.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Part } from '../core/lifecycle.js';

const WINDOW_MS = 10_000;
/**
 * One sampling timer at 20 ms: a stall longer than that still shows in full (the timer fires that late), and
 * the loop wakes 50 times a second for it. Two histograms at 5 ms woke it 400 times a second: 0.4–0.8 % of a
 * core on a 4-device bus that otherwise needs ~1 % (measured by scripts/bench/modbus-bus.ts).
 */
const RESOLUTION_MS = 20;
/** The histogram holds whole sampling intervals (≥ the resolution): the delay is what exceeds it. */
const ms = (ns: number): number => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);

export type EventLoopStats = { windowP99Ms: number; windowMaxMs: number; p99Ms: number; maxMs: number };

export function createEventLoopPart(): Part<never> & { stats(): EventLoopStats } {
  let h: IntervalHistogram | undefined;
  let timer: NodeJS.Timeout | undefined;
  let last = { p99: 0, max: 0 };
  /** The whole run: the worst window p99 and the worst delay seen. */
  const whole = { p99: 0, max: 0 };
  return {
    name: 'event-loop',
    async start() {
      h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
      h.enable();
      timer = setInterval(() => {
        last = { p99: h!.percentile(99), max: h!.max };
        whole.p99 = Math.max(whole.p99, last.p99);
        whole.max = Math.max(whole.max, last.max);
        h!.reset();
      }, WINDOW_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      h?.disable();
    },
    stats() {
      return { windowP99Ms: ms(last.p99), windowMaxMs: ms(last.max), p99Ms: ms(whole.p99), maxMs: ms(whole.max) };
    },
  };
}

