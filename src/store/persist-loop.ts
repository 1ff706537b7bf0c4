/**
 * The periodic saver. Its promise is the loss bound users are given: what is on disk never lags the shadow
 * by more than `persist_interval` (a kill or power cut loses at most one interval of changes). A save takes
 * time to reach the disk (encode, hash, write, fsync, rename), so the next snapshot is taken
 * `interval − margin` after the previous one, the margin being twice the longest recent save (at most half the
 * interval); a save still running when the next is due is followed at once by the next, never skipped to a
 * later tick. Saves happen only when `changeSeq` moved, never two at once. `flush()` is for SIGTERM and for
 * DeleteDevice (a deleted device's data is destroyed on disk at once, rule 8). Errors never escape: they are
 * logged, kept in stats (health turns degraded) and retried at the next due time.
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

/** Recent save durations kept to size the margin. */
const RECENT = 8;

export function startPersisting(shadow: Shadow, store: ShadowStore, intervalMs: number, clock: Clock, log: Logger): Persister {
  // -1, not the current changeSeq: the first tick always saves, so devices dropped on restore (no longer
  // configured) lose their data at once even if nothing else changes.
  let savedChangeSeq = -1;
  let running: Promise<void> | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  /** Monotonic time of the newest snapshot (or of the last check that found nothing to save). */
  let snapAt = performance.now();
  const recent: number[] = [];
  const stats: PersistStats = { lastSaveAt: 0, lastSaveMs: 0, lastStallMs: 0, lastError: null, saves: 0, seq: store.seq };

  // Synchronous up to store.save's first await, so lastStallMs is exactly the event-loop stall.
  const saveNow = (): Promise<void> => {
    const changeSeq = shadow.changeSeq;
    const t0 = performance.now();
    snapAt = t0;
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
      recent.push(stats.lastSaveMs);
      if (recent.length > RECENT) recent.shift();
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

  const schedule = (): void => {
    if (stopped) return;
    // Before any save is measured, half the interval: the first snapshot too must reach the disk in time.
    const margin = recent.length ? Math.min(intervalMs / 2, 2 * Math.max(...recent) + 10) : intervalMs / 2;
    timer = setTimeout(() => void tick(), Math.max(0, snapAt + intervalMs - margin - performance.now()));
    // The gateway's servers keep the process alive; this timer must not keep a test or a stop waiting.
    timer.unref();
  };

  async function tick(): Promise<void> {
    timer = null;
    while (running) await running;
    if (stopped) return;
    // Nothing changed: the disk is current as of now, so the next change is due one interval from here.
    if (shadow.changeSeq !== savedChangeSeq) await saveNow();
    else snapAt = performance.now();
    schedule();
  }
  schedule();

  async function flush(): Promise<void> {
    while (running) await running;
    if (shadow.changeSeq !== savedChangeSeq) await saveNow();
  }

  return {
    flush,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await flush();
    },
    stats: () => ({ ...stats }),
  };
}
