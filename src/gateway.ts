/**
 * The composition root: builds every part from the config and starts them in order through the one
 * lifecycle contract (src/core/lifecycle.ts) — persistence (restore), buses, history, MQTT export, HTTP —
 * and stops them in reverse. Live configuration goes through the config manager, which hands changed
 * devices and buses to the buses part only. Nothing else constructs services or reads the config globally.
 */
import path from 'node:path';
import { validateConfig, type ConfigChecker } from './config/load.js';
import { readModelLibrary } from './config/models.js';
import type { GatewayConfig } from './config/types.js';
import type { Clock } from './core/clock.js';
import { systemClock } from './core/clock.js';
import type { DeviceIO } from './core/io.js';
import { Shadow } from './core/shadow.js';
import type { Driver } from './drivers/types.js';
import { createDeviceIO } from './io/device-io.js';
import { buildHealth } from './api/health.js';
import { shadowAllJson } from './api/rest-shape.js';
import type { ApiApp, RouteKit } from './api/context.js';
import { findConsoleDir, loadConsole, mountConsole } from './api/console-static.js';
import { BusesPart } from './runtime/buses.js';
import { ConfigManager, type FileDrift } from './runtime/config-manager.js';
import { consoleDrift, fileOwnEdits } from './config/console-drift.js';
import { ConfigStore, originOf, sha256 } from './runtime/config-store.js';
import { createExportPart } from './runtime/export.js';
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
import { sameValue } from './util/same-value.js';
import { DataDirDamage } from './store/damage.js';
import { checkExportFiles } from './runtime/data-check.js';
import { consoleUrl, haDeviceInfo, haPointInfo, hostAddress } from './runtime/ha-info.js';
import { mountHomeAssistant } from './api/homeassistant-routes.js';
import { createLifecycle } from './runtime/backup-service.js';
import { lastLifecycle, type LifecycleStatus } from './runtime/lifecycle.js';
import { createUpdates } from './runtime/update-service.js';
import { DoctorService } from './runtime/doctor-service.js';
import { busDoctorRun } from './runtime/doctor-run.js';
import { RAUC_SYSTEM_CONF } from './store/update-status.js';
import { makeDir } from './util/make-dir.js';

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
  modbusServers: Pick<ModbusServersPart, 'ports' | 'figures' | 'persona' | 'stats'>;
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
  /** Damaged files set aside in data_dir (main.ts starts it before reading active.json); default: a new one. */
  damage?: DataDirDamage;
  /** Extra HTTP routes (the console's files). */
  routes?: ((app: ApiApp, kit: RouteKit) => void)[];
  /**
   * Restarts the process, for the console's restart button (POST /system/restart). main.ts gives one under
   * systemd: a clean stop, then an exit status the unit starts again. Absent: the gateway says it cannot.
   */
  restart?: () => void;
  /** What main.ts restored or reset at this start (runtime/lifecycle.ts); else the last outcome kept in data_dir. */
  lifecycle?: LifecycleStatus;
  /** RAUC's system.conf, whose presence makes A/B system updates available (default /etc/rauc/system.conf). */
  raucSystemConf?: string;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { log } = opts;
  const clock = opts.clock ?? systemClock;
  const dataDir = path.resolve(config.gateway.data_dir);
  await makeDir(dataDir);
  const damage = opts.damage ?? new DataDirDamage(dataDir);
  if (!opts.damage) damage.attach(log);
  const parts = new PartList(log);
  try {
    const shadow = new Shadow({
      maxDevices: config.shadow.max_devices, maxPoints: config.shadow.max_points, defaultTtl: config.shadow.default_ttl, clock,
    });
    // The buses part puts every configured device into the shadow; persistence then restores their state,
    // and only then do drivers start (a simulator resumes from the restored values).
    const buses = new BusesPart(config, { shadow, clock, log });
    const eventLoop = await parts.start(createEventLoopPart());
    const persistence = await parts.start(createPersistencePart(config, dataDir, shadow, clock, log, damage));
    await parts.start(buses);
    const io = createDeviceIO({ shadow, devices: buses.devices, drivers: buses.drivers, sink: buses.sink, busErrors: buses.failed, log: log.child({ part: 'io' }) });
    // Modbus servers come after the buses: their requests go through the buses' owners (stopped before them).
    const modbusServers = await parts.start(createModbusServersPart(config.servers, {
      buses, shadow, io, clock, log: log.child({ part: 'modbus-server' }), models: config.models,
    }));
    // The clock's sync state for /health/shadow and history's flags, read in the background (the health route stays synchronous).
    const clockSync = { synchronized: await clockSynchronized() as boolean | null };
    const syncTimer = setInterval(() => void clockSynchronized().then((s) => (clockSync.synchronized = s)), 2000);
    syncTimer.unref();
    parts.adopt({ name: 'clock-sync', start: async () => {}, stop: async () => clearInterval(syncTimer) });
    const history = await parts.start(createHistoryPart(config, dataDir, shadow, clock, log.child({ part: 'history' }), () => clockSync.synchronized, damage));
    await checkExportFiles(dataDir, damage);
    const version = readVersion();
    const haConsole = consoleUrl(config.http.host, config.http.port);
    const exporter = await parts.start(createExportPart({
      shadow, bus: shadow.bus, io, shadowJson: () => shadowAllJson(shadow), devicePoints: (id) => haPointInfo(buses.devices.get(id)),
      deviceInfo: (id, modelName) => haDeviceInfo(buses.devices.get(id), modelName, version, haConsole),
      mqtt: config.mqtt, export: config.export, gatewayId: config.gateway.id, dataDir, clock, log,
    }));

    const store = new ConfigStore(path.join(dataDir, 'config'), sha256(opts.fileText ?? JSON.stringify(opts.raw ?? config)), damage);
    await store.open();
    // The running config is always a version, so a rollback can return to it (also after the file was edited).
    const raw = opts.raw ?? config;
    const latest = await store.latestVersion();
    let drift: FileDrift | undefined;
    if (!latest || !sameValue(latest.raw, raw)) {
      // The file was edited after the console applied a change: the file wins, and what it undid is shown.
      if (latest && originOf(latest) === 'console') {
        const base = (await store.fileVersionBefore(latest.version))?.raw ?? {};
        const entries = consoleDrift(base, latest.raw, raw);
        if (entries.length > 0) drift = { consoleVersion: latest.version, time: latest.time, entries, fileVersion: 0, lost: fileOwnEdits(base, latest.raw, raw) };
      }
      const fileVersion = await store.record(raw, latest ? 'configuration file changed' : 'configuration at start', clock.now(), 'file');
      if (drift) drift.fileVersion = fileVersion;
    }
    const library = readModelLibrary();
    const libraryModels = Object.fromEntries(Object.entries(library.models).map(([name, m]) => [name, m.raw]));
    const manager = new ConfigManager({
      raw, config, buses, store, clock, log: log.child({ part: 'config' }),
      models: libraryModels,
      checkers: opts.checkers ?? [],
      onLogLevel: (level) => {
        log.level = level;
      },
    });
    if (drift) {
      manager.setFileDrift(drift);
      log.warn({ consoleVersion: drift.consoleVersion, undone: drift.entries },
        `the configuration file undoes what the console applied (version ${drift.consoleVersion}): ${drift.entries.map((e) => `${e.path} ${e.change}`).join(', ')}; ` +
        'POST /api/v1/config/file-drift/console returns to the console\'s version');
    }
    const partStats = (): Record<string, Record<string, unknown>> => ({
      mqtt: exporter.stats(), history: history.stats(), eventLoop: eventLoop.stats(), modbusServers: modbusServers.stats(),
    });
    const lastLife = opts.lifecycle ? { ...opts.lifecycle, this_start: true } : await lastLifecycle(dataDir).then((s) => (s ? { ...s, this_start: false } : undefined));
    const lifecycle = createLifecycle({
      dataDir, store, version, clock, log: log.child({ part: 'lifecycle' }), baseSha: sha256(opts.fileText ?? JSON.stringify(opts.raw ?? config)),
      raw: () => manager.current(), running: () => manager.running(),
      validate: (next) => void validateConfig(next, { models: libraryModels, checkers: opts.checkers ?? [] }),
      flushHistory: () => history.flush(),
      ...(opts.restart ? { restart: opts.restart } : {}), ...(lastLife ? { status: lastLife } : {}),
    });
    // The bus doctor's runs go through the buses' owners, or take a bus's line for a search: adopted here, it
    // stops before them (a taken line is given back first).
    const doctor = new DoctorService({
      drivers: buses.drivers, buses: () => manager.running().buses, run: busDoctorRun(() => Object.values(manager.running().models)),
      takeLine: (id) => buses.lend(id),
      // Loaded on demand, as the RTU driver loads serialport.
      openSerial: async (path, settings) => (await import('./drivers/modbus/doctor/serial-io.js')).openSerialDoctorIo(path, settings),
      listen: async (...args) => (await import('./drivers/modbus/doctor/listen.js')).listenReport(...args),
      clock, log: log.child({ part: 'doctor' }),
    });
    parts.adopt(doctor);
    const updates = createUpdates({ dataDir, systemConf: opts.raucSystemConf ?? RAUC_SYSTEM_CONF, version, clock, log: log.child({ part: 'update' }) });
    const system = createSystem({
      buses, dataDir, clock, version, log,
      restartPending: () => manager.restartPending(), ...(opts.restart ? { restart: opts.restart } : {}),
      rawBuses: () => {
        const raw = manager.current() as { buses?: Record<string, unknown>[] };
        return Array.isArray(raw.buses) ? raw.buses : [];
      }, ...(opts.ring ? { ring: opts.ring } : {}),
      parts: async () => {
        await history.opened();
        return { persistence: persistence.stats(), ...partStats() };
      },
    });
    // The web console's files (make build); a tree without them still serves the API.
    const consoleDir = await findConsoleDir();
    const consoleFiles = consoleDir ? await loadConsole(consoleDir) : undefined;
    if (!consoleFiles) log.warn('web console not built (make build): serving the API only');
    const http = await parts.start(createHttpPart({
      host: config.http.host, port: config.http.port,
      api: {
        shadow, io, http: config.http, log: log.child({ part: 'http' }), config: manager, system, lifecycle, updates, doctor,
        // The history store opens after ready: what these show of it (figures, damage repaired) waits for that.
        health: async () => {
          await history.opened();
          return buildHealth({
            shadow, persist: persistence.stats(),
            buses: { configured: manager.running().buses.map((b) => b.id), stats: buses.stats(), failed: buses.failed },
            extra: { ...partStats(), clock: { synchronized: clockSync.synchronized } },
            dataDir: { damaged: damage.list(), lost: damage.lost },
            fileDrift: manager.fileDrift(),
            ...(opts.bootStatus ? { bootStatus: opts.bootStatus } : {}),
            ...(lastLife ? { lifecycle: lastLife } : {}),
            serversDown: modbusServers.down(),
            update: await updates.check(),
          });
        },
      },
      metrics: async () => {
        await history.opened();
        // The metrics modules load at the first scrape, not at every start: a gateway never scraped never loads them.
        const { renderMetrics } = await import('./api/metrics.js');
        return renderMetrics({ shadow, persist: persistence.stats(), buses: buses.stats(), parts: partStats(), devices: manager.running().devices });
      },
      routes: [
        (app, kit) => history.routes(app, kit),
        (_app, kit) => mountHomeAssistant(kit, {
          config, mqttStats: () => exporter.stats(), mqttPort: () => exporter.mqttPort, wsPort: () => exporter.wsPort, address: hostAddress,
        }),
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
