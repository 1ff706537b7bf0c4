/**
 * The rig plays the line and the slaves: on a real site those are copper and devices with CPUs of their own, and
 * only the gateway shares its machine with others. Here they are processes beside the gateway (this one, socat hops,
 * pymodbus slaves), and beside a busy job they waited for a CPU like the gateway: beside three busy loops and
 * another job's tests the relay's latency p99 read up to 778 ms a trial, a second master's requests went unanswered
 * for want of a relay, and a healthy unit's rate then measured the rig (raised, beside three busy loops: 2.7–4.5 ms). So the rig's threads run at a higher priority than anything else on the
 * machine (nice RIG_NICE), the gateway at its own: its wait for a CPU is the machine's load, measured and allowed
 * for (trials.ts), the rig's is not a variable any more. Raising a priority needs root (CAP_SYS_NICE); elsewhere
 * the rig runs as it is and says so once.
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';

export const RIG_NICE = -10;

/** Every thread of `pid` now (Linux: a priority is a thread's; threads started later inherit their creator's). */
function threads(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [pid];
  }
}

/** Why the rig cannot run raised here (said once), or null once it does. */
let refused: string | null = null;

/**
 * Raises every thread of `pid` to RIG_NICE (threads it starts later inherit it); returns what its main thread was,
 * to lower them back (restore), or null where the system refused (not root).
 */
export function raise(pid: number): number | null {
  let was: number | null = null;
  for (const tid of threads(pid)) {
    try {
      const before = os.getPriority(tid);
      os.setPriority(tid, RIG_NICE);
      if (tid === pid) was = before;
    } catch (err) {
      refused ??= (err as Error).message;
    }
  }
  return was;
}

/** Every thread of `pid`, those started since included, back to `was` (lowering is always allowed). */
export function restore(pid: number, was: number | null): void {
  if (was === null) return;
  for (const tid of threads(pid)) {
    try {
      os.setPriority(tid, was);
    } catch {
      // gone
    }
  }
}

/** In words, for the campaign's log. */
export function rigPriority(): string {
  return refused ? `the rig at its normal priority (raising it was refused: ${refused})` : `the rig (relay, socat hops, slaves) at nice ${RIG_NICE}, the gateway at its own`;
}
