/**
 * Event-loop delay measured on the loop's own turns, with no timer of its own: what a sampling timer every
 * `resolutionMs` would have recorded (perf_hooks.monitorEventLoopDelay), worked out when a turn ends. A turn
 * begins with its first callback (an async hook's `before`) and ends in the check phase of that iteration (an
 * immediate queued at its start); a sampling tick due while the loop slept would have fired on time (delay
 * 0), one due during a turn would have fired when the turn ended and the next would have been due a sampling
 * interval after that, as a late timer does. A loop that sleeps is not woken: monitorEventLoopDelay at 20 ms
 * woke the gateway 50 times a second, about a fifth of its main thread's CPU on a 4-device bus
 * (scripts/bench/modbus-bus.ts). A callback an addon makes outside an async context (serialport's poller)
 * starts no turn of its own: its turn is seen from the first promise reaction or hooked callback in it.
 */
import { createHook, type AsyncHook } from 'node:async_hooks';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

export interface TurnDelays {
  start(): void;
  stop(): void;
  /** Accounts the loop's time up to now (a turn in progress counts up to here), then returns the histogram (µs). */
  histogram(): RecordableHistogram;
}

export function turnDelays(resolutionMs: number): TurnDelays {
  const h = createHistogram();
  let hook: AsyncHook | undefined;
  /** When the current turn began (-1: the loop is not in a turn we saw begin). */
  let turnStart = -1;
  /** The next virtual sampling tick. */
  let tick = 0;
  // The histogram takes integers ≥ 1: delays in µs, 0 recorded as 1.
  const record = (delayMs: number): void => h.record(Math.max(1, Math.round(delayMs * 1000)));
  /** Ticks due before `until` found the loop free. */
  const freeUntil = (until: number): void => {
    for (; tick < until; tick += resolutionMs) record(0);
  };
  const endTurn = (): void => {
    const end = performance.now();
    freeUntil(turnStart);
    if (tick < end) {
      record(end - tick);
      tick = end + resolutionMs;
    }
    turnStart = -1;
  };
  return {
    start() {
      tick = performance.now() + resolutionMs;
      hook = createHook({
        before() {
          if (turnStart >= 0) return;
          turnStart = performance.now();
          setImmediate(endTurn);
        },
      });
      hook.enable();
    },
    stop() {
      hook?.disable();
      hook = undefined;
    },
    histogram() {
      freeUntil(turnStart >= 0 ? turnStart : performance.now());
      return h;
    },
  };
}
