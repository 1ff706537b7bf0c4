/**
 * The history part: the shadow's events into the flat-file store, and its REST routes (composition-root
 * glue: api/ and store/ may not import each other). A store that cannot open (I/O, permissions) is logged and
 * the gateway runs without history; damaged history data never stops a start (the store repairs it).
 */
import path from 'node:path';
import type { ApiApp, RouteKit } from '../api/index.js';
import type { GatewayConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { GatewayError } from '../core/errors.js';
import type { Shadow } from '../core/shadow.js';
import { attachHistory, historyAggregate, historyQuery, openHistory, type HistoryStore, type KnownPoint } from '../store/history.js';
import type { Logger } from '../util/logger.js';

import type { Part } from '../core/lifecycle.js';

export interface HistoryPart extends Part {
  routes(app: ApiApp, kit: RouteKit): void;
  stats(): Record<string, unknown>;
}

export function createHistoryPart(config: GatewayConfig, dataDir: string, shadow: Shadow, clock: Clock, log: Logger): HistoryPart {
  let store: HistoryStore | undefined;
  let detach = (): void => {};
  let openError: string | undefined;
  const start = async (): Promise<void> => {
    if (!config.history.enable) return;
    try {
      store = await openHistory({
        dir: path.join(dataDir, 'history'), retention: config.history.retention, maxDisk: config.history.max_disk, clock, log,
      });
      detach = attachHistory(shadow.bus, store);
    } catch (err) {
      openError = err instanceof Error ? err.message : String(err);
      log.error({ err }, 'history store could not open; running without history');
    }
  };
  const knownPoint: KnownPoint = (device, point) => {
    if (!shadow.HasDevice(device)) return 'unknown device';
    return shadow.HasPoint(device, point) ? 'ok' : 'unknown point';
  };
  const ready = (): HistoryStore => {
    if (store) return store;
    throw new GatewayError('BAD_REQUEST', openError ? `history is unavailable: ${openError}` : 'history is disabled (history.enable is false)');
  };
  return {
    name: 'history',
    start,
    routes(_app, kit) {
      kit.route('GET', '/history', 'read', (req) => historyQuery(ready(), knownPoint, req.query, clock.now()));
      kit.route('GET', '/history/aggregate', 'read', (req) => historyAggregate(ready(), knownPoint, req.query, clock.now()));
    },
    stats: () => (store ? { ...store.stats() } : { enabled: false, ...(openError ? { error: openError } : {}) }),
    async stop() {
      detach();
      await store?.close();
      store = undefined;
    },
  };
}
