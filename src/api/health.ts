/** The /health/shadow report: healthy, degraded (some part is failing) or unhealthy (persistence or all buses down). */
import type { Shadow } from '../core/shadow.js';
import type { HealthReport } from './context.js';

export interface HealthInputs {
  shadow: Shadow;
  persist: { lastSaveAt: number; lastError: string | null; saves: number; seq: number };
  /** Every configured bus id, the running ones' driver figures, and why the others do not run. */
  buses: { configured: readonly string[]; stats: Record<string, unknown>; failed: ReadonlyMap<string, string> };
  /** Other parts' figures (MQTT, history, clock), shown as they are. */
  extra?: Record<string, unknown>;
  /** boot-config's status.json (src/config/boot-status.ts), shown as `boot_config`; `ok: false` degrades the report. */
  bootStatus?: Record<string, unknown>;
  /** Damaged files found in data_dir at start (store/damage.ts); `lost`: one was set aside, which degrades the report. */
  dataDir?: { damaged: readonly unknown[]; lost: boolean };
  /** An edited config file undid console changes at this start (runtime/config-manager.ts): shown, not degrading. */
  fileDrift?: { consoleVersion: number; entries: readonly { path: string; change: string }[]; fileVersion: number; lost: readonly unknown[] } | null;
  /** The last restore or reset (runtime/lifecycle.ts), shown as `lifecycle`; one that failed at this start degrades the report. */
  lifecycle?: { ok: boolean; this_start: boolean; [key: string]: unknown };
  /** Modbus servers not serving now (a persona's serial port missing or closed, a port in use): each degrades the report. */
  serversDown?: readonly { server: string; transport: string; port: string | number; reason: string }[];
  /**
   * The last A/B system update (runtime/update-service.ts), shown as `update`: `ok: false` when it failed or was
   * refused. It does not degrade the report: the gateway that answers runs fine, on the version it had.
   */
  update?: Record<string, unknown>;
}

export function buildHealth({ shadow, persist, buses, extra = {}, bootStatus, dataDir, fileDrift, lifecycle, serversDown = [], update }: HealthInputs): HealthReport {
  const stats = shadow.stats();
  const running = Object.keys(buses.stats);
  const missingBuses = buses.configured.filter((id) => !Object.hasOwn(buses.stats, id));
  let status: HealthReport['status'] = 'healthy';
  // History that cannot write (a full disk) drops samples: the gateway serves on, but someone must look.
  const historyError = (extra['history'] as { lastError?: unknown } | undefined)?.lastError;
  if (persist.lastError || historyError || missingBuses.length > 0 || stats.onlineDevices < stats.totalDevices) status = 'degraded';
  // The gateway runs, but not on the config the user last wrote: they need to hear that.
  if (bootStatus?.ok === false) status = 'degraded';
  // A damaged file was set aside at start: the gateway serves without what it held (a repaired torn tail does not count).
  if (dataDir?.lost) status = 'degraded';
  // A backup left on the boot partition was refused: the gateway runs on what it had, and the user must hear why.
  if (lifecycle && !lifecycle.ok && lifecycle.this_start) status = 'degraded';
  // A consumer reading a persona whose port is gone sees its meter lost: serving on elsewhere is not "healthy".
  if (serversDown.length > 0) status = 'degraded';
  if (buses.configured.length > 0 && running.length === 0) status = 'unhealthy';
  return {
    status,
    checks: {
      shadow: {
        totalDevices: stats.totalDevices, onlineDevices: stats.onlineDevices, dataPoints: stats.dataPoints, states: stats.states,
        freeDeviceSlots: stats.freeDeviceSlots, freePointSlots: stats.freePointSlots,
      },
      persistence: { ok: !persist.lastError, ...persist },
      buses: {
        running, failed: missingBuses, stats: buses.stats,
        ...(buses.failed.size > 0 ? { errors: Object.fromEntries(buses.failed) } : {}),
      },
      ...extra,
      servers: { ok: serversDown.length === 0, down: serversDown },
      ...(bootStatus ? { boot_config: bootStatus } : {}),
      ...(lifecycle ? { lifecycle } : {}),
      ...(update ? { update } : {}),
      ...(dataDir ? { data_dir: { ok: !dataDir.lost, damaged: dataDir.damaged } } : {}),
      // The paths can name MQTT users: the list itself is behind the write token (GET /config/file-drift).
      ...(fileDrift ? { config_file: {
        console_version: fileDrift.consoleVersion, undone: fileDrift.entries.length,
        file_version: fileDrift.fileVersion, file_edits: fileDrift.lost.length, details: '/api/v1/config/file-drift',
      } } : {}),
      process: { uptimeSeconds: Math.round(process.uptime()), rssBytes: process.memoryUsage.rss() },
    },
  };
}
