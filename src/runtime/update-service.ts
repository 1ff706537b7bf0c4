/**
 * A/B system updates for the REST API, the console and /health/shadow: the hand-over of update-handoff.ts and
 * the status of update-status.ts, with the version running now. The last request made here is remembered so
 * that, until the root side writes a newer status, the answer is `checking` and not the update before.
 */
import type { UpdateService } from '../api/context.js';
import { HttpError } from '../api/envelope.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../util/logger.js';
import { UpdateError, handOff, type UpdateErrorKind } from '../store/update-handoff.js';
import { currentStatus, updateAvailable } from '../store/update-status.js';

export interface UpdateOptions {
  dataDir: string;
  /** RAUC's system.conf (update-status.ts RAUC_SYSTEM_CONF; another path in tests). */
  systemConf: string;
  version: string;
  clock: Clock;
  log: Logger;
}

/** A refused upload's own HTTP status (docs/rest.md "System update"). */
const HTTP_STATUS: Record<UpdateErrorKind, number> = {
  unavailable: 501, busy: 409, not_bundle: 400, too_large: 413, incomplete: 400, storage: 507,
};

export function createUpdates(opts: UpdateOptions): UpdateService {
  let since: number | undefined;
  const status = async (): Promise<Record<string, unknown>> => {
    const [available, current] = await Promise.all([updateAvailable(opts.systemConf), currentStatus(opts.dataDir, since)]);
    return { available, running_version: opts.version, ...current };
  };
  return {
    status,
    async install(body, expectedSize) {
      const now = opts.clock.now();
      const request = await handOff(body, {
        dataDir: opts.dataDir, systemConf: opts.systemConf, by: 'rest', now, since, ...(expectedSize !== undefined ? { expectedSize } : {}),
      }).catch((err: unknown) => {
        throw err instanceof UpdateError ? new HttpError(HTTP_STATUS[err.kind], err.message) : err;
      });
      since = now;
      opts.log.info({ size: request.size, sha256: request.sha256 }, 'update bundle handed over to the system\'s update service');
      return { ...(await status()), request };
    },
    async check() {
      const current = await currentStatus(opts.dataDir, since);
      // No update yet, and none possible or asked for: nothing to report.
      if (current.state === 'idle' && current.updated_at === null) return undefined;
      const ok = current.state !== 'failed' && current.state !== 'refused' && current.state !== 'unknown';
      return { ok, state: current.state, message: current.message, to_version: current.to_version, updated_at: current.updated_at };
    },
  };
}
