/**
 * A second master on the same line (a PLC or a service laptop someone plugged in): it reads registers
 * 10..19 of the slaves' units at random times, ten registers like the gateway's polls, so an answer meant
 * for it has exactly the length the gateway waits for (the gateway must never take it for its own). It
 * listens before it talks: it starts only after t3.5 of silence, and not while a request it heard may still
 * be answered (until the answer or 100 ms), then waits 0–20 ms more at random.
 */
import { readRequest } from './faults.js';
import type { Wire } from './wire.js';

/** How long after a request it heard the second master leaves the line to the answer. */
const ANSWER_WAIT_MS = 100;

export class SecondMaster {
  frames = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly wire: Wire, private readonly units: readonly number[], private readonly meanGapMs: number) {}

  start(): void {
    this.running = true;
    this.later(this.gap());
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
  }

  private gap(): number {
    return -Math.log(1 - Math.random()) * this.meanGapMs;
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    if (this.running) this.timer = setTimeout(() => this.attempt(), Math.max(0, ms));
  }

  private attempt(): void {
    const now = performance.now();
    const { quietSince, from } = this.wire.lastFrame(now);
    const free = quietSince === Infinity ? now + this.wire.charMs : quietSince + (from === 'slave' || from === null ? this.wire.t35 : ANSWER_WAIT_MS);
    if (now < free) {
      this.later(free - now + Math.random() * 20);
      return;
    }
    const unit = this.units[Math.floor(Math.random() * this.units.length)]!;
    this.wire.transmit(readRequest(unit, 10, 10));
    this.frames++;
    // Its own answer takes ~40 ms at 9600 baud; it waits for it before its next request.
    this.later(60 + this.gap());
  }
}
