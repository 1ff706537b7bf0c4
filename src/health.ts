/** The /health/shadow report: healthy, degraded (some part is failing) or unhealthy (persistence or all buses down). */
import type { HealthReport } from './api/index.js';
import type { BusConfig } from './config/types.js';
import type { Shadow } from './core/shadow.js';
import type { Driver } from './drivers/types.js';

export interface HealthInputs {
  shadow: Shadow;
  persister: { stats(): { lastSaveAt: number; lastError: string | null; saves: number; seq: number } };
  drivers: ReadonlyMap<string, Driver>;
  buses: readonly BusConfig[];
  /** Other parts' figures (MQTT, history), shown as they are. */
  extra?: Record<string, unknown>;
  /** boot-config's status.json (src/boot-status.ts), shown as `boot_config`; `ok: false` degrades the report. */
  bootStatus?: Record<string, unknown>;
}

export function buildHealth({ shadow, persister, drivers, buses, extra = {}, bootStatus }: HealthInputs): HealthReport {
  const stats = shadow.stats();
  const persist = persister.stats();
  const missingBuses = buses.filter((b) => !drivers.has(b.id)).map((b) => b.id);
  const busStats = Object.fromEntries([...drivers].map(([id, d]) => [id, d.stats?.() ?? {}]));
  let status: HealthReport['status'] = 'healthy';
  if (persist.lastError || missingBuses.length > 0 || stats.onlineDevices < stats.totalDevices) status = 'degraded';
  // The gateway runs, but not on the config the user last wrote: they need to hear that.
  if (bootStatus?.ok === false) status = 'degraded';
  if (buses.length > 0 && drivers.size === 0) status = 'unhealthy';
  return {
    status,
    checks: {
      shadow: {
        totalDevices: stats.totalDevices, onlineDevices: stats.onlineDevices, dataPoints: stats.dataPoints, states: stats.states,
        freeDeviceSlots: stats.freeDeviceSlots, freePointSlots: stats.freePointSlots,
      },
      persistence: { ok: !persist.lastError, ...persist },
      buses: { running: [...drivers.keys()], failed: missingBuses, stats: busStats },
      ...extra,
      ...(bootStatus ? { boot_config: bootStatus } : {}),
      process: { uptimeSeconds: Math.round(process.uptime()), rssBytes: process.memoryUsage.rss() },
    },
  };
}
