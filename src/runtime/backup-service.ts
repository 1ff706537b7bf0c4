/**
 * Backup, restore and factory reset for the REST API and the console (docs/deploy.md "Backup, restore and
 * factory reset"). A backup is streamed as it is made (backup-write.ts). A restore is read and checked whole
 * and staged beside the data (backup-read.ts); a reset leaves a marker; either is carried out at the next
 * start (lifecycle.ts), which follows at once the way the restart button does it (main.ts under systemd).
 */
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import type { LifecycleService } from '../api/context.js';
import type { GatewayConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { badRequest } from '../core/errors.js';
import type { Logger } from '../util/logger.js';
import { RestoreError, stageRestore } from './backup-read.js';
import { tokensOf } from './backup-format.js';
import { writeBackup } from './backup-write.js';
import type { ConfigStore } from './config-store.js';
import { requestReset, type LifecycleStatus } from './lifecycle.js';

export interface LifecycleOptions {
  dataDir: string;
  store: ConfigStore;
  /** The running config as written, and as validated. */
  raw: () => unknown;
  running: () => GatewayConfig;
  /** Validates a config on this gateway; throws ConfigError. */
  validate: (raw: unknown) => void;
  /** sha256 of the config file the gateway started from. */
  baseSha: string;
  version: string;
  clock: Clock;
  log: Logger;
  /** Restarts the process (main.ts under systemd); absent: the change waits for the next start. */
  restart?: () => void;
  /** Writes history's buffered samples to disk (before a backup with history). */
  flushHistory?: () => Promise<void>;
  /** The last restore or reset (lifecycle.ts), and whether this start carried it out, for /health/shadow. */
  status?: LifecycleStatus & { this_start: boolean };
}

/** Time for the answer to leave before the stop closes the HTTP server (as the restart button). */
const RESTART_DELAY_MS = 200;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const stamp = (d: Date): string => d.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');

export function createLifecycle(opts: LifecycleOptions): LifecycleService {
  const { log } = opts;
  let busy = false;
  const after = (what: string): { restarting: boolean; message: string } => {
    if (!opts.restart) return { restarting: false, message: `${what} when the gateway is started again (it is not run by its systemd unit: restart it the way it was started)` };
    log.info({ in: RESTART_DELAY_MS }, `${what}: restarting`);
    setTimeout(opts.restart, RESTART_DELAY_MS);
    return { restarting: true, message: `${what} now: the gateway restarts` };
  };
  return {
    info: () => ({ gateway_id: opts.running().gateway.id, restart_available: opts.restart !== undefined, last: opts.status ?? null }),
    async backup(res: ServerResponse, { history }) {
      const running = opts.running();
      const now = new Date(opts.clock.now());
      const id = running.gateway.id.replace(/[^A-Za-z0-9_.-]/g, '_');
      const name = `shadowgate-backup-${id}-${stamp(now)}${history ? '-history' : ''}.tar.gz`;
      const versions = await opts.store.all();
      const withHistory = history && running.history.enable;
      // The last seconds of samples are still in memory: on disk first, or the file misses them.
      if (withHistory) await opts.flushHistory?.().catch((err: unknown) => log.warn({ err }, 'history not flushed before the backup'));
      // A bad request body seen meanwhile was already answered (400 and close): nothing to send.
      if (res.headersSent || res.writableEnded) return;
      res.writeHead(200, {
        'Content-Type': 'application/gzip',
        'Content-Disposition': `attachment; filename="${name}"`,
        // It holds secrets: no cache of any kind keeps a copy.
        'Cache-Control': 'no-store',
      });
      const started = performance.now();
      await writeBackup({
        raw: opts.raw(), versions, gatewayId: running.gateway.id, gatewayVersion: opts.version, now,
        ...(withHistory ? { historyDir: path.join(opts.dataDir, 'history') } : {}),
      }, res);
      log.info({ history, ms: Math.round(performance.now() - started) }, 'backup downloaded');
    },
    async restore(body) {
      if (busy) throw badRequest('a restore or reset is already under way');
      busy = true;
      try {
        const raw = opts.raw();
        const gateway = isObj(raw) && isObj(raw.gateway) ? raw.gateway : {};
        const summary = await stageRestore(body, {
          dataDir: opts.dataDir, baseSha: opts.baseSha, validate: opts.validate, now: opts.clock.now(), source: 'console',
          keepTokens: tokensOf(raw), dataDirValue: gateway.data_dir,
        }).catch((err: unknown) => {
          throw err instanceof RestoreError ? badRequest(`restore refused, nothing changed: ${err.message}`) : err;
        });
        log.info({ summary }, 'restore checked and staged');
        const next = after('the backup is restored');
        // Without a restart a newer upload may replace the staged one; with one, nothing more is taken.
        busy = next.restarting;
        return { ...summary, ...next };
      } catch (err) {
        busy = false;
        throw err;
      }
    },
    async reset(confirm) {
      const id = opts.running().gateway.id;
      if (confirm !== id) throw badRequest(`to reset, send {"confirm": "<this gateway's id>"}: the id is ${id}`);
      if (busy) throw badRequest('a restore or reset is already under way');
      busy = true;
      try {
        await requestReset(opts.dataDir, 'console', new Date(opts.clock.now()));
      } finally {
        busy = false;
      }
      log.warn('factory reset asked for');
      const next = after('the gateway is reset');
      busy = next.restarting;
      return next;
    },
  };
}
