/**
 * Which poll cycle gets the line next when a bus has more due than it can serve. A user expects a
 * saturated line to slow every device down by the same factor — each device's cycle period stretched
 * evenly, whatever its number of requests. Taking poll requests first come, first served does not: a
 * device whose cycle is three requests re-queues behind everyone after each of them, so its cycle took
 * three rounds of the line while one-request devices cycled three times as often (measured: the meter
 * 1.83× the replay floor of the plan, the sensors 0.62×).
 *
 * Start-time fair queuing, by cycle rather than by byte: every cycle of a group gets a start tag, and
 * polls go in order of their cycle's tag (ties: the cycle begun first). A group's next cycle starts
 * where its last one's tag plus its poll period ends, so over a saturated stretch every group advances
 * its tags by its own period per cycle and all move together: a group polled every second cycles five
 * times for one of a group polled every five, each stretched by the same factor. All of a cycle's
 * requests share its tag, so a cycle runs whole (on-demand jobs still cut in between its requests: that
 * is the bus owner's business). The virtual time is the tag of the cycle last given the line; a group
 * starting from idle begins at it, so time spent idle earns no credit to burst with later. A line that
 * keeps up runs every cycle when due whatever the order: unsaturated periods do not change.
 * Pure: no clock, no I/O; the bus owner asks it, the poller tags its cycles.
 */

/** A cycle's place in the order: lower `start` first, then lower `seq` (the cycle begun first). */
export interface CycleTag {
  readonly start: number;
  readonly seq: number;
}

export const tagBefore = (a: CycleTag, b: CycleTag): boolean => a.start < b.start || (a.start === b.start && a.seq < b.seq);

export class CycleOrder {
  /** The start tag of the cycle last given the line (ms of nominal poll time). */
  private virtual = 0;
  private seq = 0;
  /** Where each group's next cycle starts, by group (whatever object the caller keys groups by). */
  private readonly finish = new WeakMap<object, number>();

  /** A cycle of `group`, polled every `periodMs`, begins: its tag. */
  begin(group: object, periodMs: number): CycleTag {
    const start = Math.max(this.finish.get(group) ?? this.virtual, this.virtual);
    this.finish.set(group, start + Math.max(1, periodMs));
    return { start, seq: ++this.seq };
  }

  /** A poll outside any group's cycle (a one-off walk): it goes at the current virtual time. */
  now(): CycleTag {
    return { start: this.virtual, seq: ++this.seq };
  }

  /** A request of the cycle with this tag got the line. */
  served(tag: CycleTag): void {
    if (tag.start > this.virtual) this.virtual = tag.start;
  }

  /** The index of the entry whose tag goes first (-1 when there is none). */
  static first(entries: readonly { readonly tag: CycleTag }[]): number {
    let best = -1;
    for (let i = 0; i < entries.length; i++) {
      if (best < 0 || tagBefore(entries[i]!.tag, entries[best]!.tag)) best = i;
    }
    return best;
  }
}
