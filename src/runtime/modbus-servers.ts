/**
 * The Modbus servers part: each configured server started after the buses (its requests go through their
 * bus owners; it never opens a bus port itself) and stopped before them. A device is looked up on every
 * request, so a device edited or removed live is followed; the servers' own settings need a restart.
 */
import type { GatewayConfig, ModelConfig, ServerConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { DeviceIO } from '../core/io.js';
import type { Shadow } from '../core/shadow.js';
import type { Part } from '../core/lifecycle.js';
import type { RawModbusAccess } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';
import type { BusesPart } from './buses.js';
import { LATENCY_BOUNDS_S, zeroCounts, type Counts } from './door/figures.js';
import { GeneratedUnit, generateMap } from './door/generated-unit.js';
import { TcpDoor } from './door/tcp-server.js';
import type { RtuPersonaSlave } from './persona/rtu-slave.js';
import { Budget } from './door/handler.js';
import { UnitTable, type UnitAnswer } from './door/unit-table.js';
import { PersonaUnit } from './persona/unit.js';
import { describeServerFailure } from './startup-failure.js';

/**
 * Bus requests a second an RTU server's master may cause: at 9600 baud a line carries about 40 requests a
 * second, so this is no limit on the line's own pace; only the waiting cap (MAX_WAITING_PER_CLIENT) applies.
 */
const RTU_MASTER_RATE = 1000;

/** What persona units need: the shadow they are served from, the write pipeline, the model library. */
export interface PersonaSources {
  shadow: Shadow;
  io: DeviceIO;
  models: Readonly<Record<string, ModelConfig>>;
}

export interface ModbusServersPart extends Part<GatewayConfig> {
  /** Bound TCP port per server id. */
  ports(): Record<string, number>;
  /** Per server: totals, per client address and per unit (requests, hits, misses, writes, exceptions). */
  figures(): Record<string, ReturnType<TcpDoor['figures']['snapshot']>>;
  stats(): Record<string, unknown>;
  /** A persona unit of a server, for its capture (undefined: no such persona). */
  persona(serverId: string, unit: number): PersonaUnit | undefined;
  /** Every persona unit of a server. */
  personas(serverId: string): PersonaUnit[];
  /** Servers not serving now: an RTU persona port missing or closed (retried meanwhile), or a server that could not start. */
  down(): ServerDown[];
}

export interface ServerDown {
  server: string;
  transport: ServerConfig['transport'];
  port: string | number;
  reason: string;
}


export interface ModbusServersDeps extends PersonaSources {
  buses: BusesPart;
  clock: Clock;
  log: Logger;
}

export function createModbusServersPart(servers: readonly ServerConfig[], deps: ModbusServersDeps): ModbusServersPart {
  const { buses, clock, log } = deps;
  const sources: PersonaSources = deps;
  const doors = new Map<string, TcpDoor>();
  const slaves = new Map<string, RtuPersonaSlave>();
  /** The unit tables of the RTU servers (a TCP door keeps its own). */
  const tables = new Map<string, UnitTable>();
  const personas = new Map<string, Map<number, PersonaUnit>>();
  /** The persona units of a server, started; a unit whose model or binding cannot be served is logged and left out. */
  const personaUnits = (config: ServerConfig): Map<number, UnitAnswer> => {
    const answers = new Map<number, UnitAnswer>();
    const units = new Map<number, PersonaUnit>();
    for (const u of config.units) {
      if (u.persona === undefined) continue;
      const model = sources?.models[u.persona];
      try {
        if (!sources || !model) throw new Error(`model "${u.persona}" is not available`);
        const unit = new PersonaUnit({
          unit: u.unit, model, bind: u.bind ?? {}, write: u.write ?? {}, maxAgeMs: u.max_age ?? 5000,
          stale: u.stale ?? 'silent', capture: u.capture ?? false, ...(u.rated_power === undefined ? {} : { ratedPower: u.rated_power }),
        }, { shadow: sources.shadow, io: sources.io, clock, unitOf: (device, point) => buses.devices.get(device)?.points.get(point)?.unit });
        for (const source of unit.map.slots.flatMap((s) => s.binding?.sources ?? [])) {
          const device = buses.devices.get(source.device);
          if (device && !device.points.has(source.point)) log.warn({ server: config.id, unit: u.unit, source: `${source.device}.${source.point}` }, `persona source point ${source.device}.${source.point} is not a point of its device's model; the persona stays silent until it has a value`);
        }
        unit.start();
        units.set(u.unit, unit);
        answers.set(u.unit, (pdu) => unit.answer(pdu));
      } catch (err) {
        log.error({ server: config.id, unit: u.unit, err: (err as Error).message }, `persona unit ${u.unit} not served`);
      }
    }
    personas.set(config.id, units);
    return answers;
  };
  /**
   * A server's figures with its persona units' counts added: per unit beside the door's units, and into the
   * total (a persona answers from its snapshot, so the door's own counting never sees its requests).
   */
  const withPersonas = <T extends object>(serverId: string, figures: T): T & { units: Record<string, Counts>; total: Counts } => {
    const own = figures as { units?: Record<string, Counts>; total?: Counts };
    const units: Record<string, Counts> = { ...own.units };
    const total: Counts = own.total ? { ...own.total, codes: { ...own.total.codes } } : zeroCounts();
    for (const [unit, persona] of personas.get(serverId) ?? []) {
      const c = persona.counts;
      units[String(unit)] = { ...c, codes: { ...c.codes } };
      for (const k of ['requests', 'hits', 'misses', 'writes', 'exceptions'] as const) total[k] += c[k];
      for (const [code, n] of Object.entries(c.codes)) total.codes[code] = (total.codes[code] ?? 0) + n;
    }
    return { ...figures, units, total };
  };
  /** Servers that could not start (a port in use): logged, reported, and the gateway runs on without them. */
  const failed = new Map<string, string>();
  const fail = (config: ServerConfig, err: unknown): void => {
    const line = describeServerFailure(err, config);
    failed.set(config.id, line);
    // One line naming the setting, no stack: a port in use is the user's to fix, not a bug.
    log.error({ server: config.id }, line);
  };
  const access = (deviceId: string): RawModbusAccess | undefined => {
    const device = buses.devices.get(deviceId);
    return device ? buses.drivers.get(device.config.bus)?.raw : undefined;
  };
  /** Generated maps by device, rebuilt when its model object changes (a live edit). */
  const generatedUnits = new Map<string, { model: unknown; unit: GeneratedUnit }>();
  const generated = (deviceId: string): GeneratedUnit | undefined => {
    const device = buses.devices.get(deviceId);
    if (!device || !buses.drivers.has(device.config.bus) || buses.drivers.get(device.config.bus)?.raw) return undefined;
    let entry = generatedUnits.get(deviceId);
    if (entry?.model !== device.model) {
      entry = { model: device.model, unit: new GeneratedUnit({ deviceId, map: generateMap(device.model), io: deps.io, value: (id, point) => deps.shadow.GetDevicePoint(id, point) }) };
      generatedUnits.set(deviceId, entry);
    }
    return entry.unit;
  };
  return {
    name: 'modbus-servers',
    async start() {
      for (const config of servers) {
        const answers = personaUnits(config);
        if (config.transport === 'rtu') {
          // Loaded only for an RTU server: serialport's module is ~20 ms of every start on this machine.
          const { RtuPersonaSlave } = await import('./persona/rtu-slave.js');
          const table = new UnitTable({ config, access, generated, clock, log, personas: answers });
          tables.set(config.id, table);
          // The line's one master is paced by the line itself: its budget only caps the bus requests waiting.
          const budget = new Budget(RTU_MASTER_RATE, clock.mono());
          const units = new Map(config.units.map((u) => u.unit).concat(config.diagnostic_unit ?? []).filter((u) => table.serves(u))
            .map((u) => [u, (pdu: Uint8Array) => table.answer(u, pdu, config.port, budget)] as const));
          const slave = new RtuPersonaSlave(config, units, clock, log);
          try {
            await slave.start();
            slaves.set(config.id, slave);
          } catch (err) {
            fail(config, err);
          }
          continue;
        }
        const door = new TcpDoor({ config, access, generated, clock, log, personas: answers });
        try {
          await door.start();
          doors.set(config.id, door);
        } catch (err) {
          fail(config, err);
        }
      }
    },
    async stop() {
      for (const door of doors.values()) await door.stop();
      doors.clear();
      for (const slave of slaves.values()) await slave.stop();
      slaves.clear();
      tables.clear();
      for (const units of personas.values()) for (const unit of units.values()) unit.stop();
      personas.clear();
    },
    ports: () => Object.fromEntries([...doors].map(([id, d]) => [id, d.port])),
    figures: () => Object.fromEntries([...doors].map(([id, d]) => [id, withPersonas(id, d.figures.snapshot())])),
    stats: () => ({
      ...Object.fromEntries([...doors].map(([id, d]) => [id, withPersonas(id, d.stats())])),
      ...Object.fromEntries([...slaves].map(([id, s]) => [id, withPersonas(id, { ...s.counts, latencyBounds: LATENCY_BOUNDS_S, ...tables.get(id)?.figures.snapshot() })])),
      ...Object.fromEntries([...failed].map(([id, error]) => [id, { running: false, error }])),
    }),
    down: () => [
      ...[...slaves].filter(([, s]) => !s.counts.open).map(([id, s]) => ({
        server: id, transport: 'rtu' as const, port: s.path,
        // Between the close and the first failed attempt there is no error yet: the port closed under it.
        reason: s.counts.error ?? 'the serial port closed; opening it again',
      })),
      ...servers.filter((c) => failed.has(c.id)).map((c) => ({ server: c.id, transport: c.transport, port: c.port, reason: failed.get(c.id)! })),
    ],
    persona: (serverId, unit) => personas.get(serverId)?.get(unit),
    personas: (serverId) => [...(personas.get(serverId)?.values() ?? [])],
  };
}
