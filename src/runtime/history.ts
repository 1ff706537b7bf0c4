/**
 * The history part: the shadow's events into the flat-file store, and its REST routes (composition-root
 * glue: api/ and store/ may not import each other). A store that cannot open (I/O, permissions) is logged and
 * the gateway runs without history; damaged history data never stops a start (the store repairs it).
 * The store opens once the gateway is ready (Part.ready): reading fleet F's series registry and newest log was
 * ~0.3 s of the start's CPU on the development machine. What the shadow records meanwhile waits in order
 * (history-early.ts), and everything that shows the history (its routes, /health/shadow, /metrics, a backup's
 * flush) waits for `opened()` first.
 */
import path from 'node:path';
import type { ApiApp, RouteKit } from '../api/index.js';
import type { GatewayConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { GatewayError } from '../core/errors.js';
import type { Shadow } from '../core/shadow.js';
import { attachHistory, historyAggregate, historyQuery, openHistory, type HistoryRow, type HistoryStore, type KnownPoint } from '../store/history.js';
import { UnsyncedRanges } from '../store/history/unsynced.js';
import { EarlyHistory } from './history-early.js';
import { parseDuration } from '../core/duration.js';
import type { DamageSink } from '../store/damage.js';
import type { Logger } from '../util/logger.js';

import type { Part } from '../core/lifecycle.js';

export interface HistoryPart extends Part {
  routes(app: ApiApp, kit: RouteKit): void;
  stats(): Record<string, unknown>;
  /** Writes the buffered samples now (a backup then holds them). */
  flush(): Promise<void>;
  /** Resolves once the store has opened (or failed to): its stats and the damage it repaired are then final. */
  opened(): Promise<void>;
}

export function createHistoryPart(
  config: GatewayConfig, dataDir: string, shadow: Shadow, clock: Clock, log: Logger, clockSynchronized: () => boolean | null = () => null,
  damage?: DamageSink,
): HistoryPart {
  let store: HistoryStore | undefined;
  let detach = (): void => {};
  let openError: string | undefined;
  const dir = path.join(dataDir, 'history');
  const unsynced = new UnsyncedRanges(UnsyncedRanges.fileIn(dir), (err) => log.error({ err }, 'unsynced ranges not saved'), damage);
  const owner = {};
  // One series per shadow point can exist: a fixed 65,536 dropped every sample of the last third of a
  // 1,000 × 100 fleet (issue 16's fleet F) without a word beyond a counter.
  const capacity = Math.max(65_536, config.shadow.max_points);
  const early = new EarlyHistory(capacity);
  let opening: Promise<void> | undefined;
  let attached = false;
  const open = (): Promise<void> => (opening ??= (async () => {
    try {
      store = await openHistory({ dir, retention: config.history.retention, maxDisk: config.history.max_disk, maxSeries: capacity,
        // Room for what arrives while a flush waits behind a seal (a seal of a big fleet's log takes seconds on a Pi).
        bufferSamples: capacity, clock, log, ...(damage ? { damage } : {}) });
      early.drainInto(store);
    } catch (err) {
      early.clear();
      detach();
      shadow.bus.off(owner);
      openError = err instanceof Error ? err.message : String(err);
      log.error({ err }, 'history store could not open; running without history');
    }
  })());
  const start = async (): Promise<void> => {
    if (!config.history.enable) return;
    try {
      await unsynced.load();
    } catch (err) {
      openError = err instanceof Error ? err.message : String(err);
      log.error({ err }, 'history store could not open; running without history');
      return;
    }
    attached = true;
    detach = attachHistory(shadow.bus, {
      record: (device, point, time, value) => {
        if (store) store.record(device, point, time, value);
        else if (!openError) early.record(device, point, time, value);
      },
      deleteDevice: (id) => (store ?? early).deleteDevice(id),
    });
    // Samples written on a clock not yet synchronized are flagged, not dropped (rule 11).
    shadow.bus.on(owner, 'dataChange', ({ time }) => unsynced.note(time, clockSynchronized()));
  };
  const opened = async (): Promise<void> => {
    if (config.history.enable && !openError) await open();
  };
  const knownPoint: KnownPoint = (device, point) => {
    if (!shadow.HasDevice(device)) return 'unknown device';
    return shadow.HasPoint(device, point) ? 'ok' : 'unknown point';
  };
  /** Rows (or buckets of `span` ms) that touch a range written on an unsynchronized clock say so. */
  const flag = (rows: HistoryRow[], span: () => number): (HistoryRow & { unsynced?: true })[] => {
    if (unsynced.list.length === 0) return rows;
    const width = Math.max(0, span() - 1);
    return rows.map((r) => (unsynced.flagged(r.ts, r.ts + width) ? { ...r, unsynced: true as const } : r));
  };
  const bucketSpan = (q: Record<string, string | undefined>): number => {
    try {
      return parseDuration(q['interval'] ?? '0s');
    } catch {
      return 0;
    }
  };
  const ready = async (): Promise<HistoryStore> => {
    await opened();
    if (store) return store;
    throw new GatewayError('BAD_REQUEST', openError ? `history is unavailable: ${openError}` : 'history is disabled (history.enable is false)');
  };
  return {
    name: 'history',
    start,
    ready: () => void opened(),
    opened,
    routes(_app, kit) {
      kit.route('GET', '/history', 'read', async (req) =>
        flag(await historyQuery(await ready(), knownPoint, req.query, clock.now()), () => 0));
      kit.route('GET', '/history/aggregate', 'read', async (req) =>
        flag(await historyAggregate(await ready(), knownPoint, req.query, clock.now()), () => bucketSpan(req.query)));
    },
    async flush() {
      await opened();
      await store?.flush();
      await unsynced.flush();
    },
    stats: () => {
      if (store) {
        const stats = store.stats();
        return { ...stats, droppedSamples: stats.droppedSamples + early.dropped, unsyncedRanges: unsynced.list.length };
      }
      if (attached && !openError) return { enabled: true, opening: true, bufferedSamples: early.length, droppedSamples: early.dropped };
      return { enabled: false, ...(openError ? { error: openError } : {}) };
    },
    async stop() {
      detach();
      shadow.bus.off(owner);
      // A start cut short before ready still writes what was recorded, as an open store would have on close.
      if (early.waiting) await opened();
      else await opening;
      attached = false;
      unsynced.close();
      await unsynced.flush();
      await store?.close();
      store = undefined;
    },
  };
}
