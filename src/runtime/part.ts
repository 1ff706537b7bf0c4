/** Started parts, stopped in reverse order; a part that fails to stop is logged and the rest still stop. */
import type { Part } from '../core/lifecycle.js';
import type { Logger } from '../util/logger.js';

export type { Part } from '../core/lifecycle.js';

export class PartList {
  private readonly started: Part<never>[] = [];

  constructor(private readonly log: Logger) {}

  /** Starts the part and keeps it for stopAll; a part that throws is not kept (it stopped itself). */
  async start<P extends Part<never>>(part: P): Promise<P> {
    await part.start();
    this.started.push(part);
    return part;
  }

  /** A part with nothing to start (a timer already running) that must still stop in order. */
  adopt(part: Part<never>): void {
    this.started.push(part);
  }

  /** Every part has started: each part's background start-up work begins (Part.ready). */
  ready(): void {
    for (const part of this.started) {
      try {
        part.ready?.();
      } catch (err) {
        this.log.error({ err, part: part.name }, 'ready failed');
      }
    }
  }

  async stopAll(): Promise<void> {
    for (const part of this.started.splice(0).reverse()) {
      try {
        await part.stop();
      } catch (err) {
        this.log.error({ err, part: part.name }, 'stop failed');
      }
    }
  }
}
