/**
 * The event loop's delay, as a part whose stats reach /metrics and /api/v1/system: a stall here is a late
 * poll, a late MQTT message and a late watchdog ping (issue 16 measures it with everything running).
 * `window*` figures cover the last completed 10 s window, the others the whole run. Measured on the loop's
 * own time (event-loop-turns.ts): what a timer sampling every 20 ms would record, without waking a loop that sleeps.
 */
import type { Part } from '../core/lifecycle.js';
import { setLoopLook } from '../util/loop-look.js';
import { turnDelays } from './event-loop-turns.js';

const WINDOW_MS = 10_000;
/** A stall longer than this shows in full; one tick per interval, as monitorEventLoopDelay samples. */
const RESOLUTION_MS = 20;
const ms = (us: number): number => Math.round(us / 10) / 100;

export type EventLoopStats = { windowP99Ms: number; windowMaxMs: number; p99Ms: number; maxMs: number };

export function createEventLoopPart(): Part<never> & { stats(): EventLoopStats } {
  const delays = turnDelays(RESOLUTION_MS);
  let timer: NodeJS.Timeout | undefined;
  let last = { p99: 0, max: 0 };
  /** The whole run: the worst window p99 and the worst delay seen. */
  const whole = { p99: 0, max: 0 };
  return {
    name: 'event-loop',
    async start() {
      delays.start();
      setLoopLook(delays.look);
      timer = setInterval(() => {
        const h = delays.histogram();
        last = { p99: h.percentile(99), max: h.max };
        whole.p99 = Math.max(whole.p99, last.p99);
        whole.max = Math.max(whole.max, last.max);
        h.reset();
      }, WINDOW_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      setLoopLook(null);
      delays.stop();
    },
    stats() {
      return { windowP99Ms: ms(last.p99), windowMaxMs: ms(last.max), p99Ms: ms(whole.p99), maxMs: ms(whole.max) };
    },
  };
}
