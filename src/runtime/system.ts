/**
 * The System page's figures and the buses list: version, uptime, clock sync, memory, disk of the data
 * dir, persistence/history/MQTT status, serial ports present, and the last log lines.
 */
import { statfs } from 'node:fs/promises';
import type { SystemService } from '../api/context.js';
import type { Clock } from '../core/clock.js';
import { badRequest } from '../core/errors.js';
import type { Logger } from '../util/logger.js';
import type { LogRing } from '../util/log-ring.js';
import type { BusesPart } from './buses.js';
import { clockSynchronized } from './clock-sync.js';

export interface SystemOptions {
  buses: BusesPart;
  dataDir: string;
  clock: Clock;
  ring?: LogRing;
  log?: Logger;
  /** Other parts' figures, read when the page asks (once history's store has opened: gateway.ts). */
  parts: () => Promise<Record<string, unknown>>;
  /** The buses as the config writes them (durations as text, no defaults filled). */
  rawBuses: () => Record<string, unknown>[];
  /** Read once at start (package.json). */
  version: string;
  /** Restarts the process (main.ts under systemd); absent when nothing would start it again. */
  restart?: () => void;
  /** Config sections applied from the console that wait for a restart. */
  restartPending: () => string[];
}

/** Time for the restart's answer to leave before the stop closes the HTTP server. */
const RESTART_DELAY_MS = 200;

export function createSystem(opts: SystemOptions): SystemService {
  return {
    // Each bus as written (an editor sends it back), with whether it runs and its driver figures (as /metrics).
    buses: () => opts.rawBuses().map((bus) => {
      const id = String(bus.id);
      const state = opts.buses.list().find((b) => b.bus.id === id);
      return { ...bus, id, driver: String(bus.driver), running: state?.running ?? false, error: state?.error ?? null, stats: opts.buses.drivers.get(id)?.stats?.() ?? null };
    }),
    async ports() {
      try {
        // Loaded on demand: serialport's binding costs start-up time a gateway without RTU buses never pays.
        const { SerialPort } = await import('serialport');
        const ports = await SerialPort.list();
        return ports.map((p) => ({
          path: p.path,
          ...(p.manufacturer ? { manufacturer: p.manufacturer } : {}),
          ...(p.serialNumber ? { serialNumber: p.serialNumber } : {}),
        }));
      } catch {
        return [];
      }
    },
    async info() {
      const synchronized = await clockSynchronized();
      let disk: Record<string, unknown> = { data_dir: opts.dataDir };
      try {
        const s = await statfs(opts.dataDir);
        disk = { ...disk, free: s.bavail * s.bsize, total: s.blocks * s.bsize };
      } catch (err) {
        disk = { ...disk, error: (err as Error).message };
      }
      const mem = process.memoryUsage();
      return {
        version: opts.version,
        node: process.version,
        uptime_s: Math.round(process.uptime()),
        clock: { synchronized, now: new Date(opts.clock.now()).toISOString() },
        memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, arrayBuffers: mem.arrayBuffers },
        disk,
        restart: { available: opts.restart !== undefined, pending: opts.restartPending() },
        ...(await opts.parts()),
      };
    },
    logs: (lines) => opts.ring?.tail(lines) ?? [],
    restart() {
      const restart = opts.restart;
      if (!restart) throw badRequest('this gateway cannot restart itself: it is not run by its systemd unit (restart it the way it was started)');
      opts.log?.info({ in: RESTART_DELAY_MS }, 'restart asked for');
      setTimeout(restart, RESTART_DELAY_MS);
      return { restarting: true };
    },
  };
}
