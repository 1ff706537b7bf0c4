/**
 * The periodic saver: every `persist_interval` it snapshots and saves the shadow, but only when
 * `changeSeq` moved, and never two saves at once (a slow SD card just makes ticks skip). `flush()` is for
 * SIGTERM and for DeleteDevice (a deleted device's data is destroyed on disk at once, rule 8).
 * Errors never escape: they are logged, kept in stats (health turns degraded) and retried next tick.
 */
import type { Clock } from '../core/clock.js';
import type { Shadow } from '../core/shadow.js';
import type { Logger } from '../util/logger.js';
import type { ShadowStore } from './shadow-store.js';

export interface PersistStats {
  /** Clock ms of the last successful save; 0 before the first. */
  lastSaveAt: number;
  /** Wall time of the last successful save, ms (encode + hash + write + fsync). */
  lastSaveMs: number;
  /** Main-thread part of the last save (encode straight from the table), ms. */
  lastStallMs: number;
  lastError: string | null;
  saves: number;
  seq: number;
}

export interface Persister {
  /** Saves now if anything changed since the last save (waits for one in flight first); never rejects. */
  flush(): Promise<void>;
  /** Stops the timer and makes a final save (flush); never rejects. */
  stop(): Promise<void>;
  stats(): PersistStats;
}

export function startPersisting(shadow: Shadow, store: ShadowStore, intervalMs: number, clock: Clock, log: Logger): Persister {
  // -1, not the current changeSeq: the first tick always saves, so devices dropped on restore (no longer
  // configured) lose their data at once even if nothing else changes.
  let savedChangeSeq = -1;
  let running: Promise<void> | null = null;
  let stopped = false;
  const stats: PersistStats = { lastSaveAt: 0, lastSaveMs: 0, lastStallMs: 0, lastError: null, saves: 0, seq: store.seq };

  // Synchronous up to store.save's first await, so lastStallMs is exactly the event-loop stall.
  const saveNow = (): Promise<void> => {
    const changeSeq = shadow.changeSeq;
    const t0 = performance.now();
    let pending: Promise<void>;
    try {
      pending = store.saveShadow(shadow, clock.now());
    } catch (err) {
      pending = Promise.reject(err);
    }
    stats.lastStallMs = performance.now() - t0;
    running = pending.then(() => {
      savedChangeSeq = changeSeq;
      stats.saves++;
      stats.lastSaveAt = clock.now();
      stats.lastSaveMs = performance.now() - t0;
      stats.seq = store.seq;
      if (stats.lastError) log.info({ seq: stats.seq }, 'shadow persistence recovered');
      stats.lastError = null;
    }, (err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      // Logged once per distinct failure: a full disk would otherwise log every interval.
      if (message !== stats.lastError) log.error({ err }, 'shadow save failed; retrying next interval');
      stats.lastError = message;
    }).finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    if (!stopped && running === null && shadow.changeSeq !== savedChangeSeq) void saveNow();
  }, intervalMs);
  // The gateway's servers keep the process alive; this timer must not keep a test or a stop waiting.
  timer.unref();

  async function flush(): Promise<void> {
    while (running) await running;
    if (shadow.changeSeq !== savedChangeSeq) await saveNow();
  }

  return {
    flush,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await flush();
    },
    stats: () => ({ ...stats }),
  };
}
