/** The broker's bounded outbox for in-process publishes (broker.ts). */
import type { Aedes } from 'aedes';

// Aedes' emitter recurses when many in-process publishes are queued at once (a burst of 100k changes
// overflowed the stack in a bench), so the gateway keeps at most MAX_INFLIGHT publishes inside aedes and
// queues the rest here, in order, bounded: past MAX_PENDING the oldest waiting message is dropped and counted.
const MAX_INFLIGHT = 32;
const MAX_PENDING = 100_000;

type Done = (err: Error | undefined, topic: string) => void;

interface OutMsg {
  topic: string;
  payload: Buffer;
  qos: 0 | 1;
  done: Done;
}

export class Outbox {
  private inflight = 0;
  private queue: (OutMsg | undefined)[] = [];
  private head = 0;
  private draining = false;

  constructor(private readonly aedes: Aedes, private readonly counters: { outboxDropped: number }) {}

  get pending(): number {
    return this.queue.length - this.head;
  }

  push(topic: string, payload: Buffer, qos: 0 | 1, done: Done): void {
    this.queue.push({ topic, payload, qos, done });
    if (this.pending > MAX_PENDING) {
      const old = this.queue[this.head];
      this.queue[this.head++] = undefined;
      this.counters.outboxDropped++;
      old?.done(undefined, old.topic);
    }
    this.drain();
  }

  // A loop, not recursion: aedes may call back synchronously.
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.inflight < MAX_INFLIGHT && this.pending > 0) {
        const m = this.queue[this.head]!;
        this.queue[this.head++] = undefined;
        if (this.head > 4096 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        this.inflight++;
        this.aedes.publish({ cmd: 'publish', topic: m.topic, payload: m.payload, qos: m.qos, retain: false, dup: false }, (err) => {
          this.inflight--;
          m.done(err ?? undefined, m.topic);
          this.drain();
        });
      }
    } finally {
      this.draining = false;
    }
  }
}
