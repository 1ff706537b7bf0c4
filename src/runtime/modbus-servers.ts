/**
 * The Modbus servers part: each configured server started after the buses (its requests go through their
 * bus owners; it never opens a bus port itself) and stopped before them. A device is looked up on every
 * request, so a device edited or removed live is followed; the servers' own settings need a restart.
 */
import type { GatewayConfig, ServerConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Part } from '../core/lifecycle.js';
import type { RawModbusAccess } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';
import type { BusesPart } from './buses.js';
import { TcpDoor } from './door/tcp-server.js';

export interface ModbusServersPart extends Part<GatewayConfig> {
  /** Bound TCP port per server id. */
  ports(): Record<string, number>;
  /** Per server: totals, per client address and per unit (requests, hits, misses, writes, exceptions). */
  figures(): Record<string, ReturnType<TcpDoor['figures']['snapshot']>>;
  stats(): Record<string, unknown>;
}

export function createModbusServersPart(servers: readonly ServerConfig[], buses: BusesPart, clock: Clock, log: Logger): ModbusServersPart {
  const doors = new Map<string, TcpDoor>();
  /** Servers that could not start (a port in use): logged, reported, and the gateway runs on without them. */
  const failed = new Map<string, string>();
  const access = (deviceId: string): RawModbusAccess | undefined => {
    const device = buses.devices.get(deviceId);
    return device ? buses.drivers.get(device.config.bus)?.raw : undefined;
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
        const door = new TcpDoor({ config, access, clock, log });
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
