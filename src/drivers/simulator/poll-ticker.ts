/**
 * One ticker per simulator bus: it runs the polls that are due, earliest first, a few milliseconds of work
 * per turn of the event loop, and sleeps until the next one is due. One timer per device instead made Node
 * run every timer already due in one go: a loop late by 20 ms ran 20 ms' worth of devices (their shadow
 * updates, MQTT publishes, history) in one task, which made the next batch later still. A real RS-485 bus
 * hands the gateway its answers one by one; the simulator now hands over at most a slice's worth at a time.
 */
import { loopLook } from '../../util/loop-look.js';
import { TurnBudget } from '../../util/turn-budget.js';
import { DueQueue } from './due-queue.js';

/**
 * Main-thread time one turn of polls may take before the rest wait for the next turn (setImmediate: pending
 * REST, MQTT and disk I/O are served in between). Half the 8 ms of other background work's slices: the polls'
 * own sink work (shadow, MQTT, history) follows each poll within the turn.
 */
export const POLL_SLICE_MS = 4;

/**
 * The ticker wakes at most this often: a fleet of 1,000 devices at 1 s, spread 1 ms apart, is polled a few
 * devices per wake-up (200 wake-ups a second) instead of one per millisecond, each wake-up costing its own
 * loop turn and socket writes. A poll is at most this late for it.
 */
export const WAKE_GAP_MS = 5;

export interface PollHandle {
  /** No more runs; a run already due in this turn is skipped. */
  cancel(): void;
}

interface Entry {
  due: number;
  readonly every: number;
  readonly run: () => void;
  cancelled: boolean;
}

export class PollTicker {
  private readonly queue = new DueQueue<Entry>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private lastWake = -Infinity;
  private immediate: NodeJS.Immediate | undefined;

  /** `mono`: the monotonic clock the due times are on, ms. */
  constructor(private readonly mono: () => number, private readonly sliceMs = POLL_SLICE_MS) {}

  /** Runs `run` every `everyMs` (at least 1), the first time at `firstAt` on the monotonic clock. */
  add(everyMs: number, firstAt: number, run: () => void): PollHandle {
    const entry: Entry = { due: firstAt, every: Math.max(1, everyMs), run, cancelled: false };
    this.queue.push(entry);
    this.arm();
    return { cancel: () => void (entry.cancelled = true) };
  }

  /** Forgets every poll and holds no timer. */
  clear(): void {
    this.disarm();
    if (this.immediate) clearImmediate(this.immediate);
    this.immediate = undefined;
    this.queue.clear();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Sleeps until the earliest poll is due (a queued next turn re-arms itself). */
  private arm(): void {
    if (this.immediate) return;
    const next = this.queue.peek();
    if (!next) return;
    const at = Math.max(next.due, this.lastWake + WAKE_GAP_MS);
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.turn, Math.max(0, at - this.mono()));
  }

  private readonly turn = (): void => {
    // The event-loop monitor sees the loop's busy time in the turns it came in (as the Modbus bus owner's requests
    // let it), not as one stretch since its last look.
    loopLook();
    this.disarm();
    this.immediate = undefined;
    const budget = new TurnBudget(this.sliceMs);
    // Due as of the turn's start: a poll every 1 ms rescheduled in this turn waits for the next one.
    const now = this.mono();
    this.lastWake = now;
    let ran = 0;
    // A run that throws still leaves the ticker armed (the error goes on up, as from any timer).
    try {
      for (let entry = this.queue.peek(); entry && entry.due <= now; entry = this.queue.peek()) {
        if (ran > 0 && budget.spent()) {
          this.disarm(); // a timer armed by an add() from within a run: the next turn re-arms
          this.immediate = setImmediate(this.turn);
          return;
        }
        this.queue.pop();
        if (entry.cancelled) continue;
        // The next run stays on the poll's own grid (its phase among the fleet's); cycles missed while the
        // loop was busy are dropped, not made up in a burst.
        entry.due += entry.every;
        if (entry.due <= now) entry.due += Math.floor((now - entry.due) / entry.every + 1) * entry.every;
        this.queue.push(entry);
        ran++;
        entry.run();
      }
    } finally {
      this.arm();
    }
  };
}
