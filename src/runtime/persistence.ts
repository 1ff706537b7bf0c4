/**
 * The persistence part: opens the shadow store, restores the newest good generation into the shadow
 * (which must already hold the configured devices), saves every `persist_interval` and on stop, and runs
 * the TTL sweep. Rule 8: a deleted device's persisted data is destroyed at once, not at the next tick.
 */
import path from 'node:path';
import type { GatewayConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Part } from '../core/lifecycle.js';
import type { Shadow } from '../core/shadow.js';
import { restoreSnapshot } from '../core/snapshot.js';
import { startPersisting, type PersistStats, type Persister } from '../store/persist-loop.js';
import { openShadowStore } from '../store/shadow-store.js';
import { ignoreDamage, type DamageSink } from '../store/damage.js';
import type { Logger } from '../util/logger.js';
import { clockSynchronized } from './clock-sync.js';

export interface PersistencePart extends Part {
  /** Saves now if anything changed (also done periodically and on stop). */
  flush(): Promise<void>;
  stats(): PersistStats & Record<string, unknown>;
}

export function createPersistencePart(
  config: GatewayConfig, dataDir: string, shadow: Shadow, clock: Clock, log: Logger, damage: DamageSink = ignoreDamage,
): PersistencePart {
  let persister: Persister | undefined;
  let store: Awaited<ReturnType<typeof openShadowStore>> | undefined;
  let ttlTimer: NodeJS.Timeout | undefined;
  const owner = {};
  const empty: PersistStats = { lastSaveAt: 0, lastSaveMs: 0, lastStallMs: 0, lastError: null, saves: 0, seq: 0 };
  return {
    name: 'persistence',
    async start() {
      const opened = await openShadowStore({ dir: path.join(dataDir, 'shadow'), log: log.child({ part: 'store' }), damage });
      store = opened;
      const loaded = await opened.load();
      for (const problem of loaded.problems) log.error({ problem }, 'persisted shadow problem');
      if (loaded.snapshot) {
        // Rule 11: saved times are ages only on a synchronized clock (a Pi without RTC boots behind).
        const synchronized = await clockSynchronized();
        const report = restoreSnapshot(shadow, loaded.snapshot, clock.now(), { trusted: synchronized !== false });
        log.info({ seq: loaded.seq, source: loaded.source, clockSynchronized: synchronized, ...report }, 'shadow restored');
      }
      const p = startPersisting(shadow, opened, config.shadow.persist_interval, clock, log.child({ part: 'persist' }));
      persister = p;
      shadow.bus.on(owner, 'deviceDeleted', () => void p.flush().catch(() => {}));
      ttlTimer = setInterval(() => shadow.CheckTTL(), config.shadow.check_interval);
    },
    async stop() {
      clearInterval(ttlTimer);
      shadow.bus.off(owner);
      await persister?.stop();
      // The journal's file handle: left open, a gateway stopped and started again in one process (tests, a
      // live restart of the part) leaks a descriptor each time, closed only by the GC with a warning.
      await store?.close();
    },
    flush: async () => persister?.flush(),
    stats: () => ({
      ...(persister?.stats() ?? empty),
      // Flash: most saves are journal deltas, a full generation only now and then (store/shadow-delta.ts).
      deltaSaves: store?.deltaSaves ?? 0, fullSaves: store?.fullSaves ?? 0, journalBytes: store?.journalBytes ?? 0,
    }),
  };
}
