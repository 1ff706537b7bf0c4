/**
 * The Modbus servers part: each configured server started after the buses (its requests go through their
 * bus owners; it never opens a bus port itself) and stopped before them. A device is looked up on every
 * request, so a device edited or removed live is followed; the servers' own settings need a restart.
 */
import type { GatewayConfig, ServerConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { DeviceIO } from '../core/io.js';
import type { Shadow } from '../core/shadow.js';
import type { Part } from '../core/lifecycle.js';
import type { RawModbusAccess } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';
import type { BusesPart } from './buses.js';
import { GeneratedUnit, generateMap } from './door/generated-unit.js';
import { TcpDoor } from './door/tcp-server.js';

export interface ModbusServersPart extends Part<GatewayConfig> {
  /** Bound TCP port per server id. */
  ports(): Record<string, number>;
  /** Per server: totals, per client address and per unit (requests, hits, misses, writes, exceptions). */
  figures(): Record<string, ReturnType<TcpDoor['figures']['snapshot']>>;
  stats(): Record<string, unknown>;
}

export interface ModbusServersDeps {
  buses: BusesPart;
  shadow: Shadow;
  io: DeviceIO;
  clock: Clock;
  log: Logger;
}

export function createModbusServersPart(servers: readonly ServerConfig[], deps: ModbusServersDeps): ModbusServersPart {
  const { buses, clock, log } = deps;
  const doors = new Map<string, TcpDoor>();
  /** Servers that could not start (a port in use): logged, reported, and the gateway runs on without them. */
  const failed = new Map<string, string>();
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
        if (config.transport !== 'tcp') {
          failed.set(config.id, `transport "${config.transport}" is not available in this build`);
          log.error({ server: config.id }, `modbus server ${config.id}: transport "${config.transport}" is not available in this build; not started`);
          continue;
        }
        const door = new TcpDoor({ config, access, generated, clock, log });
        try {
          await door.start();
          doors.set(config.id, door);
        } catch (err) {
          failed.set(config.id, (err as Error).message);
          log.error({ server: config.id, err }, `modbus server ${config.id} failed to start`);
        }
      }
    },
    async stop() {
      for (const door of doors.values()) await door.stop();
      doors.clear();
    },
    ports: () => Object.fromEntries([...doors].map(([id, d]) => [id, d.port])),
    figures: () => Object.fromEntries([...doors].map(([id, d]) => [id, d.figures.snapshot()])),
    stats: () => ({
      ...Object.fromEntries([...doors].map(([id, d]) => [id, d.stats()])),
      ...Object.fromEntries([...failed].map(([id, error]) => [id, { running: false, error }])),
    }),
  };
}
