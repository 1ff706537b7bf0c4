/**
 * The composition root: builds every part from the config and starts them in order through the one
 * lifecycle contract (src/core/lifecycle.ts) — persistence (restore), buses, history, MQTT export, HTTP —
 * and stops them in reverse. Live configuration goes through the config manager, which hands changed
 * devices and buses to the buses part only. Nothing else constructs services or reads the config globally.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ConfigChecker } from './config/load.js';
import { readModelLibrary } from './config/models.js';
import type { GatewayConfig, ResolvedDevice } from './config/types.js';
import type { Clock } from './core/clock.js';
import { systemClock } from './core/clock.js';
import type { DeviceIO } from './core/io.js';
import { Shadow } from './core/shadow.js';
import type { Driver } from './drivers/types.js';
import { createDeviceIO } from './io/device-io.js';
import { buildHealth } from './api/health.js';
import { renderMetrics } from './api/metrics.js';
import { shadowAllJson } from './api/rest-shape.js';
import type { ApiApp, RouteKit } from './api/context.js';
import { findConsoleDir, loadConsole, mountConsole } from './api/console-static.js';
import { BusesPart } from './runtime/buses.js';
import { ConfigManager } from './runtime/config-manager.js';
import { ConfigStore, sha256 } from './runtime/config-store.js';
import { createExportPart, type PointInfo } from './runtime/export.js';
import { createHistoryPart } from './runtime/history.js';
import { createEventLoopPart } from './runtime/event-loop.js';
import { createHttpPart } from './runtime/http.js';
import { createModbusServersPart, type ModbusServersPart } from './runtime/modbus-servers.js';
import { mountCaptureRoutes } from './runtime/persona/capture-route.js';
import { PartList } from './runtime/part.js';
import { createPersistencePart } from './runtime/persistence.js';
import { createSystem } from './runtime/system.js';
import { clockSynchronized } from './runtime/clock-sync.js';
import type { LogRing } from './util/log-ring.js';
import type { Logger } from './util/logger.js';
import { readVersion } from './util/version.js';

export interface Gateway {
  shadow: Shadow;
  io: DeviceIO;
  drivers: ReadonlyMap<string, Driver>;
  config: ConfigManager;
  httpPort: number;
  /** Bound MQTT ports (0 when MQTT is disabled). */
  mqttPort: number;
  mqttWsPort: number;
  /** The Modbus servers ("front door"): bound ports and figures per server id. */
  modbusServers: Pick<ModbusServersPart, 'ports' | 'figures' | 'persona'>;
  /** Saves the shadow now (also done periodically and on stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  log: Logger;
  clock?: Clock;
  /** boot-config's status (read once by the caller), shown in /health/shadow as `checks.boot_config`. */
  bootStatus?: Record<string, unknown>;
  /** The config as written (before defaults), for the console to show and edit; default: the parsed config. */
  raw?: unknown;
  /** Text of the config file it came from: live changes are kept as derived from it (runtime/config-store.ts). */
  fileText?: string;
  /** Driver checks of the config (main.ts passes the gpio checker), for live changes too. */
  checkers?: readonly ConfigChecker[];
  /** The logger's recent lines, for the console. */
  ring?: LogRing;
  /** Extra HTTP routes (the console's files). */
  routes?: ((app: ApiApp, kit: RouteKit) => void)[];
}

/** Model facts per point for Home Assistant discovery (on/off lines become switches/binary sensors). */
function pointInfo(device: ResolvedDevice | undefined): PointInfo[] {
  return (device?.model.points ?? []).map((p) => ({
    name: p.name, type: p.type, access: p.access, ...(p.unit === undefined ? {} : { unit: p.unit }),
    binary: p.gpio !== undefined || p.modbus?.data_type === 'bool' || p.modbus?.table === 'coil' || p.modbus?.table === 'discrete',
  }));
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { log } = opts;
  const clock = opts.clock ?? systemClock;
  const dataDir = path.resolve(config.gateway.data_dir);
  await mkdir(dataDir, { recursive: true });
  const parts = new PartList(log);
  try {
    const shadow = new Shadow({
      maxDevices: config.shadow.max_devices, maxPoints: config.shadow.max_points, defaultTtl: config.shadow.default_ttl, clock,
    });
    // The buses part puts every configured device into the shadow; persistence then restores their state,
    // and only then do drivers start (a simulator resumes from the restored values).
    const buses = new BusesPart(config, { shadow, clock, log });
    const eventLoop = await parts.start(createEventLoopPart());
    const persistence = await parts.start(createPersistencePart(config, dataDir, shadow, clock, log));
    await parts.start(buses);
    // Modbus servers come after the buses: their requests go through the buses' owners (stopped before them).
    const io = createDeviceIO({ shadow, devices: buses.devices, drivers: buses.drivers, sink: buses.sink, log: log.child({ part: 'io' }) });
    const modbusServers = await parts.start(createModbusServersPart(config.servers, buses, clock, log.child({ part: 'modbus-server' }), { shadow, io, models: config.models }));
    // The clock's sync state for /health/shadow and history's flags, read in the background (the health route stays synchronous).
    const clockSync = { synchronized: await clockSynchronized() as boolean | null };
    const syncTimer = setInterval(() => void clockSynchronized().then((s) => (clockSync.synchronized = s)), 2000);
    syncTimer.unref();
    parts.adopt({ name: 'clock-sync', start: async () => {}, stop: async () => clearInterval(syncTimer) });
    const history = await parts.start(createHistoryPart(config, dataDir, shadow, clock, log.child({ part: 'history' }), () => clockSync.synchronized));
    const exporter = await parts.start(createExportPart({
      shadow, bus: shadow.bus, io, shadowJson: () => shadowAllJson(shadow), devicePoints: (id) => pointInfo(buses.devices.get(id)),
      mqtt: config.mqtt, export: config.export, gatewayId: config.gateway.id, dataDir, clock, log,
    }));

    const store = new ConfigStore(path.join(dataDir, 'config'), sha256(opts.fileText ?? JSON.stringify(opts.raw ?? config)));
    await store.open();
    // The running config is always a version, so a rollback can return to it (also after the file was edited).
    const raw = opts.raw ?? config;
    const latest = await store.latestVersion();
    if (!latest || JSON.stringify(latest.raw) !== JSON.stringify(raw)) {
      await store.record(raw, latest ? 'configuration file changed' : 'configuration at start', clock.now());
    }
    const library = readModelLibrary();
    const manager = new ConfigManager({
      raw, config, buses, store, clock, log: log.child({ part: 'config' }),
      models: Object.fromEntries(Object.entries(library.models).map(([name, m]) => [name, m.raw])),
      checkers: opts.checkers ?? [],
      onLogLevel: (level) => {
        log.level = level;
      },
    });
    const partStats = (): Record<string, Record<string, unknown>> => ({
      mqtt: exporter.stats(), history: history.stats(), eventLoop: eventLoop.stats(), modbusServers: modbusServers.stats(),
    });
    const system = createSystem({
      buses, dataDir, clock, version: readVersion(),
      rawBuses: () => {
        const raw = manager.current() as { buses?: Record<string, unknown>[] };
        return Array.isArray(raw.buses) ? raw.buses : [];
      }, ...(opts.ring ? { ring: opts.ring } : {}),
      parts: () => ({ persistence: persistence.stats(), ...partStats() }),
    });
    // The web console's files (make build); a tree without them still serves the API.
    const consoleDir = await findConsoleDir();
    const consoleFiles = consoleDir ? await loadConsole(consoleDir) : undefined;
    if (!consoleFiles) log.warn('web console not built (make build): serving the API only');
    const http = await parts.start(createHttpPart({
      host: config.http.host, port: config.http.port,
      api: {
        shadow, io, http: config.http, log: log.child({ part: 'http' }), config: manager, system,
        health: () => buildHealth({
          shadow, persist: persistence.stats(),
          buses: { configured: manager.running().buses.map((b) => b.id), stats: buses.stats(), failed: buses.failed },
          extra: { ...partStats(), clock: { synchronized: clockSync.synchronized } },
          ...(opts.bootStatus ? { bootStatus: opts.bootStatus } : {}),
        }),
      },
      metrics: () => renderMetrics({ shadow, persist: persistence.stats(), buses: buses.stats(), parts: partStats() }),
      routes: [
        (app, kit) => history.routes(app, kit),
        (app, kit) => mountCaptureRoutes(app, kit, (id) => modbusServers.personas(id)),
        ...(consoleFiles ? [(app: ApiApp) => mountConsole(app, consoleFiles)] : []),
        ...(opts.routes ?? []),
      ],
    }));

    // Serving: what only needs to follow start-up (discovery of every device) begins now, not before REST listens.
    parts.ready();
    let stopped = false;
    return {
      shadow, io, drivers: buses.drivers, config: manager,
      httpPort: http.port,
      mqttPort: exporter.mqttPort,
      mqttWsPort: exporter.wsPort,
      modbusServers,
      flush: () => persistence.flush(),
      async stop() {
        if (stopped) return;
        stopped = true;
        await parts.stopAll();
      },
    };
  } catch (err) {
    // A part that failed to start takes the gateway down cleanly: what did start is stopped in reverse.
    await parts.stopAll();
    throw err;
  }
}
