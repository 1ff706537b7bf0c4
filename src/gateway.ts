/**
 * The composition root: builds every part from the config, starts them in order (each in its own
 * try/catch where one failing part must not take the rest down) and stops them in reverse.
 * Nothing else constructs services or reads the config globally.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { resolveDevices } from './config/load.js';
import type { GatewayConfig, ResolvedDevice } from './config/types.js';
import type { Clock } from './core/clock.js';
import { systemClock } from './core/clock.js';
import type { DeviceIO } from './core/io.js';
import { Shadow } from './core/shadow.js';
import { restoreSnapshot } from './core/snapshot.js';
import { driverFactories } from './drivers/registry.js';
import type { Driver } from './drivers/types.js';
import { createDeviceIO } from './io/device-io.js';
import { createShadowSink } from './io/sink.js';
import { openShadowStore, startPersisting } from './store/shadow-store.js';
import { createAuth } from './api/auth.js';
import { shadowAllJson } from './api/rest-shape.js';
import { startHttp } from './api/server.js';
import { attachEventStream, startExport, type PointInfo } from './export/index.js';
import { buildHealth } from './health.js';
import { startHistory } from './history-wiring.js';
import { renderMetrics } from './metrics.js';
import type { Logger } from './util/logger.js';

export interface Gateway {
  shadow: Shadow;
  io: DeviceIO;
  drivers: ReadonlyMap<string, Driver>;
  httpPort: number;
  /** Bound MQTT ports (0 when MQTT is disabled). */
  mqttPort: number;
  mqttWsPort: number;
  /** Saves the shadow now (also done periodically and on stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  log: Logger;
  clock?: Clock;
  /** boot-config's status (read once by the caller), shown in /health/shadow as `checks.boot_config`. */
  bootStatus?: Record<string, unknown>;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const stops: Stop[] = [];
  try {
    return await build(config, opts, stops);
  } catch (err) {
    // A part that failed to start takes the gateway down cleanly: what did start is stopped in reverse.
    await stopAll(stops, opts.log);
    throw err;
  }
}

interface Stop {
  name: string;
  stop: () => Promise<void> | void;
}

async function stopAll(stops: Stop[], log: Logger): Promise<void> {
  for (const part of stops.splice(0).reverse()) {
    try {
      await part.stop();
    } catch (err) {
      log.error({ err, part: part.name }, 'stop failed');
    }
  }
}

/** Model facts per point for Home Assistant discovery (on/off lines become switches/binary sensors). */
function pointInfo(device: ResolvedDevice | undefined): PointInfo[] {
  return (device?.model.points ?? []).map((p) => ({
    name: p.name, type: p.type, access: p.access, ...(p.unit === undefined ? {} : { unit: p.unit }),
    binary: p.gpio !== undefined || p.modbus?.data_type === 'bool' || p.modbus?.table === 'coil' || p.modbus?.table === 'discrete',
  }));
}

async function build(config: GatewayConfig, opts: GatewayOptions, stops: Stop[]): Promise<Gateway> {
  const { log } = opts;
  const clock = opts.clock ?? systemClock;
  const dataDir = path.resolve(config.gateway.data_dir);
  await mkdir(dataDir, { recursive: true });

  // 1. Shadow, with every configured device, then its persisted state.
  const shadow = new Shadow({
    maxDevices: config.shadow.max_devices, maxPoints: config.shadow.max_points, defaultTtl: config.shadow.default_ttl, clock,
  });
  const resolved = resolveDevices(config);
  const devices = new Map<string, ResolvedDevice>(resolved.map((d) => [d.config.id, d]));
  for (const d of resolved) {
    shadow.AddDevice(d.config.id, d.model.name ?? d.config.model, d.ttl, {
      points: d.model.points.map((p) => ({ name: p.name, report: p.report })),
    });
  }
  const store = await openShadowStore({ dir: path.join(dataDir, 'shadow'), log: log.child({ part: 'store' }) });
  const loaded = await store.load();
  for (const problem of loaded.problems) log.error({ problem }, 'persisted shadow problem');
  if (loaded.snapshot) {
    const report = restoreSnapshot(shadow, loaded.snapshot, clock.now());
    log.info({ seq: loaded.seq, source: loaded.source, ...report }, 'shadow restored');
  }
  const persister = startPersisting(shadow, store, config.shadow.persist_interval, clock, log.child({ part: 'persist' }));
  stops.push({ name: 'persistence', stop: () => persister.stop() });
  // Rule 8 of the design: a deleted device's persisted data is destroyed at once, not at the next tick.
  shadow.bus.on(persister, 'deviceDeleted', () => void persister.flush().catch(() => {}));

  const ttlTimer = setInterval(() => shadow.CheckTTL(), config.shadow.check_interval);
  stops.push({ name: 'ttl-check', stop: () => clearInterval(ttlTimer) });

  // 2. Drivers, one per bus; a bus that fails to start is logged and its devices go offline by rule.
  const sink = createShadowSink(shadow, devices, log.child({ part: 'sink' }));
  const drivers = new Map<string, Driver>();
  for (const bus of config.buses) {
    const load = driverFactories[bus.driver];
    const busLog = log.child({ bus: bus.id });
    if (!load) {
      busLog.error({ driver: bus.driver }, 'no such driver in this build');
      continue;
    }
    try {
      const factory = await load();
      // The gpio driver maps BCM numbers through the board (gateway.board overrides detection).
      const busConfig = bus.driver === 'gpio' && config.gateway.board ? { ...bus, board: config.gateway.board } : bus;
      const driver = factory(busConfig, resolved.filter((d) => d.config.bus === bus.id), {
        sink, clock, log: busLog,
        lastValue: (id, point) => shadow.LastValues(id, point).value,
        lastWrite: (id, point) => shadow.LastValues(id, point).writeValue,
      });
      await driver.start();
      drivers.set(bus.id, driver);
      stops.push({ name: `bus ${bus.id}`, stop: () => driver.stop() });
    } catch (err) {
      busLog.error({ err }, 'bus failed to start');
    }
  }
  const io = createDeviceIO({ shadow, devices, drivers, sink, log: log.child({ part: 'io' }) });

  // 3. History of value changes (flat files), then the MQTT broker and exporters (state, events, set, Home Assistant, bridge, export.shadow).
  const history = await startHistory(config, dataDir, shadow, clock, log.child({ part: 'history' }));
  stops.push({ name: 'history', stop: () => history.stop() });
  const exporter = await startExport({
    shadow, bus: shadow.bus, io, shadowJson: () => shadowAllJson(shadow), devicePoints: (id) => pointInfo(devices.get(id)),
    mqtt: config.mqtt, export: config.export, gatewayId: config.gateway.id, dataDir, clock, log,
  });
  stops.push({ name: 'export', stop: () => exporter.stop() });

  // 4. REST, and the WebSocket event stream on the same server (same auth as REST reads).
  const checkAuth = createAuth(config.http.auth);
  const health = (): ReturnType<typeof buildHealth> =>
    buildHealth({
      shadow, persister, drivers, buses: config.buses, extra: { mqtt: exporter.stats(), history: history.stats() },
      ...(opts.bootStatus ? { bootStatus: opts.bootStatus } : {}),
    });
  const http = await startHttp(
    {
      shadow, io, http: config.http, log: log.child({ part: 'http' }), health,
      extraRoutes: (app, kit) => {
        history.routes(app, kit);
        // Prometheus scrapes outside /api/v1, in its own text format (no envelope); reads' auth applies.
        app.get('/metrics', (req, res) => {
          checkAuth(req, 'read');
          const body = renderMetrics({
            shadow, persist: { ...persister.stats() }, drivers, parts: { mqtt: exporter.stats(), history: history.stats() },
          });
          res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
          res.end(body);
        });
      },
    },
    { host: config.http.host, port: config.http.port },
  );
  stops.push({ name: 'http', stop: () => http.close() });
  const stream = attachEventStream(http.server, shadow.bus, {
    authorize: (req) => {
      try {
        checkAuth(req, 'read');
        return true;
      } catch {
        return false;
      }
    },
  });
  stops.push({ name: 'event-stream', stop: () => stream.close() });

  let stopped = false;
  return {
    shadow, io, drivers,
    httpPort: (http.server.address() as AddressInfo).port,
    mqttPort: exporter.mqttPort,
    mqttWsPort: exporter.wsPort,
    flush: () => persister.flush(),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll(stops, log);
      shadow.bus.off(persister);
    },
  };
}
