/**
 * The event loop's delay (perf_hooks.monitorEventLoopDelay), as a part whose stats reach /metrics and
 * /api/v1/system: a stall here is a late poll, a late MQTT message and a late watchdog ping (issue 16
 * measures it with everything running). `window*` figures cover the last completed 10 s window, the others
 * the whole run.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Part } from '../core/lifecycle.js';

const WINDOW_MS = 10_000;
const ms = (ns: number): number => Math.round(ns / 1e4) / 100;

export type EventLoopStats = { windowP99Ms: number; windowMaxMs: number; p99Ms: number; maxMs: number };

export function createEventLoopPart(): Part<never> & { stats(): EventLoopStats } {
  // 5 ms resolution: finer sampling costs a timer wake-up per sample on a Pi; 20 ms stalls are what matters.
  let window: IntervalHistogram | undefined;
  let whole: IntervalHistogram | undefined;
  let timer: NodeJS.Timeout | undefined;
  let last = { p99: 0, max: 0 };
  return {
    name: 'event-loop',
    async start() {
      window = monitorEventLoopDelay({ resolution: 5 });
      whole = monitorEventLoopDelay({ resolution: 5 });
      window.enable();
      whole.enable();
      timer = setInterval(() => {
        last = { p99: window!.percentile(99), max: window!.max };
        window!.reset();
      }, WINDOW_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      window?.disable();
      whole?.disable();
    },
    stats() {
      return { windowP99Ms: ms(last.p99), windowMaxMs: ms(last.max), p99Ms: ms(whole?.percentile(99) ?? 0), maxMs: ms(whole?.max ?? 0) };
    },
  };
}
