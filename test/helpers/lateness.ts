/**
 * What this machine took from a thread while a test timed it. A wall-clock bound in `make test` holds only on
 * a machine at rest: beside a CI job or a build, a thread ready to run waits for a CPU, tens of ms at a time,
 * and no code under test can undo that. The kernel counts that wait per thread (the run-queue delay in
 * /proc/…/schedstat, there with CONFIG_SCHED_INFO, as Debian builds it), so a bound widened by the wait measured
 * in the same window stays what the code decides.
 *
 * The wait is of the thread itself, not a timer's lateness on its event loop: a stall of the code under test
 * (a gateway started in this process, its turns taking longer) is not excused and still fails the test; a
 * turn that took longer only because the scheduler preempted it is. (An idle probe timer, in a worker or
 * another process, is woken promptly even on a busy machine and misses the preemption of busy turns: at a
 * load of 4 on 2 cores it saw 36 ms where a 5 ms turn took 87 ms, 74 ms of it waiting for a CPU.)
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * ms the thread has waited for a CPU since it started: this thread, or the main thread (the event loop) of
 * process `pid`. NaN where the kernel does not say (no /proc, no schedstat).
 */
export function cpuWaitMs(pid?: number): number {
  const file = pid === undefined ? '/proc/thread-self/schedstat' : `/proc/${pid}/task/${pid}/schedstat`;
  try {
    return Number(readFileSync(file, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

/**
 * ms every thread of this process has waited for a CPU so far, summed: for a span that also waits on other
 * threads (a save's writes and fsync in libuv's pool, V8's parallel GC that the loop blocks on), whose waits
 * the loop's own count does not see. NaN where the kernel does not say.
 */
export function processWaitMs(): number {
  try {
    let sum = 0;
    for (const task of readdirSync('/proc/self/task')) sum += Number(readFileSync(`/proc/self/task/${task}/schedstat`, 'utf8').split(' ')[1]);
    return sum / 1e6;
  } catch {
    return NaN;
  }
}

/** A moment: wall time (monotonic ms) and the thread's CPU wait so far. */
export interface Stamp {
  t: number;
  waited: number;
}

export const stamp = (pid?: number): Stamp => ({ t: performance.now(), waited: cpuWaitMs(pid) });

/** A moment with the CPU wait of all of this process's threads (processWaitMs). */
export const processStamp = (): Stamp => ({ t: performance.now(), waited: processWaitMs() });

/** ms the thread waited for a CPU between two stamps (0 where the kernel does not say). */
export const waitedBetween = (from: Stamp, to: Stamp): number => (Number.isNaN(to.waited - from.waited) ? 0 : to.waited - from.waited);

/** Wall ms between two stamps less the CPU wait in between: the time the code itself took. */
export const ownMs = (from: Stamp, to: Stamp): number => to.t - from.t - waitedBetween(from, to);

export interface Lateness {
  /** ms the thread waited for a CPU since the watch began. */
  readonly ms: number;
  /**
   * ms since the watch began less that wait: the time the thread could run. A rate (polls a second) is
   * counted over it: a poller kept from a CPU for a third of the window polls a third less, through no fault of its own.
   */
  readonly ownMs: number;
  /** `bound` plus that wait: a bound on anything timed inside the window. */
  widen(bound: number): number;
  /** For a failure message. */
  toString(): string;
}

/** Starts a window on this thread (or process `pid`'s main thread). */
export function watchLateness(pid?: number): Lateness {
  const from = stamp(pid);
  return {
    get ms() {
      return waitedBetween(from, stamp(pid));
    },
    get ownMs() {
      return ownMs(from, stamp(pid));
    },
    widen(bound) {
      return bound + this.ms;
    },
    toString() {
      return `${this.ms.toFixed(0)} ms waiting for a CPU over ${(performance.now() - from.t).toFixed(0)} ms`;
    },
  };
}
