/**
 * export.shadow `http` target: POST each export as JSON. One request in flight, a timeout on each, retry
 * with exponential backoff, and a bounded queue (oldest export dropped first, counted): a slow or dead
 * endpoint never stalls the gateway nor grows its memory.
 */
import type { Logger } from '../util/logger.js';

export interface HttpTargetOptions {
  url: string;
  /** ms per request */
  timeout: number;
  /** exports kept while the endpoint is slow or away */
  queueMax: number;
  log: Logger;
  /** first retry delay, doubled per failure up to maxBackoff (ms) */
  backoff?: number;
  maxBackoff?: number;
}

export class HttpTarget {
  private readonly queue: string[] = [];
  private running = false;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private readonly abort = new AbortController();
  private readonly counters = { sent: 0, failures: 0, dropped: 0 };

  constructor(private readonly opts: HttpTargetOptions) {}

  push(body: string): void {
    if (this.stopped) return;
    this.queue.push(body);
    while (this.queue.length > this.opts.queueMax) {
      this.queue.shift();
      this.counters.dropped++;
    }
    if (!this.running) void this.run();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    while (!this.stopped && this.queue.length > 0) {
      const body = this.queue[0]!;
      try {
        const res = await fetch(this.opts.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.opts.timeout)]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        // The head may have been dropped meanwhile by push(); only remove what was sent.
        if (this.queue[0] === body) this.queue.shift();
        this.counters.sent++;
        this.attempt = 0;
      } catch (err) {
        if (this.stopped) break;
        this.counters.failures++;
        const delay = Math.min((this.opts.backoff ?? 1000) * 2 ** this.attempt, this.opts.maxBackoff ?? 60_000);
        this.attempt++;
        this.opts.log.warn({ url: this.opts.url, err: (err as Error).message, retryIn: delay }, 'shadow export POST failed');
        await this.sleep(delay);
      }
    }
    this.running = false;
  }

  stats(): Record<string, unknown> {
    return { ...this.counters, queued: this.queue.length };
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
  }
}
