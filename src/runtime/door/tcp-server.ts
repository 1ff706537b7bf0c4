/**
 * One Modbus TCP server ("front door"), MBAP or RTU-over-TCP framed: a listener with at most `max_clients` connections, an optional
 * allow-list of client addresses, TCP keepalive and no idle timeout; each connection has its own bus
 * budget and pipeline (connection.ts), every request is answered by the handler.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { TcpServerConfig } from '../../config/types.js';
import type { Clock } from '../../core/clock.js';
import type { RawModbusAccess } from '../../drivers/types.js';
import type { Logger } from '../../util/logger.js';
import type { MbapFrame } from '../../protocol/modbus/mbap.js';
import { DoorConnection, normalizeAddress } from './connection.js';
import { mbapFraming, rtuFraming } from './framing.js';
import { Figures, LATENCY_BOUNDS_S } from './figures.js';
import type { GeneratedUnit } from './generated-unit.js';
import { Budget, createHandler, type DeviceUnit } from './handler.js';

export interface TcpDoorParts {
  config: TcpServerConfig;
  access(deviceId: string): RawModbusAccess | undefined;
  generated(deviceId: string): GeneratedUnit | undefined;
  clock: Clock;
  log: Logger;
  /** Persona units by unit id: answered from their snapshot (null: silence), never through a bus. */
  personas?: ReadonlyMap<number, (pdu: Uint8Array) => Promise<Uint8Array | null>>;
}

export class TcpDoor {
  readonly figures = new Figures();
  private server: Server | null = null;
  private readonly connections = new Set<DoorConnection>();
  private refused = 0;
  /** RTU framing: bytes dropped as no request (bad CRC, noise). */
  private discarded = 0;
  port = 0;

  constructor(private readonly parts: TcpDoorParts) {}

  async start(): Promise<void> {
    const { config, clock, log } = this.parts;
    const units = new Map<number, DeviceUnit>();
    for (const u of config.units) {
      if (u.device === undefined) {
        if (this.parts.personas?.has(u.unit)) continue;
        log.warn({ server: config.id, unit: u.unit }, 'persona unit not served (its error is logged above); the unit answers exception 0x0A');
        continue;
      }
      units.set(u.unit, { unit: u.unit, device: u.device, writes: u.writes, maxAgeMs: u.max_age ?? config.max_age });
    }
    const handle = createHandler({
      units, access: this.parts.access, generated: this.parts.generated, clock, figures: this.figures,
      ...(config.diagnostic_unit === undefined ? {} : { diagnosticUnit: config.diagnostic_unit }),
    });
    const allow = new Set(config.allow.map(normalizeAddress));
    const server = createServer((socket: Socket) => {
      const address = normalizeAddress(socket.remoteAddress ?? '');
      if ((allow.size > 0 && !allow.has(address)) || this.connections.size >= config.max_clients) {
        this.refused++;
        log.warn({ server: config.id, client: address, open: this.connections.size }, allow.size > 0 && !allow.has(address) ? 'modbus client not in the allow list; closed' : 'modbus server full (max_clients); client closed');
        socket.destroy();
        return;
      }
      const budget = new Budget(config.miss_rate, clock.mono());
      const personas = this.parts.personas;
      const rtu = config.framing === 'rtu';
      const answer = (frame: MbapFrame): Promise<Uint8Array | null> => {
        // RTU broadcast (unit 0): a line's slaves never answer it; a door serves no broadcast, so it is dropped.
        if (rtu && frame.unit === 0) return Promise.resolve(null);
        const persona = personas?.get(frame.unit);
        if (persona) return persona(frame.pdu);
        const start = clock.mono();
        return handle(frame, address, budget).then((pdu) => {
          // After count(): the client's and unit's entries exist by now.
          this.figures.latency(address, frame.unit, (clock.mono() - start) / 1000);
          return pdu;
        });
      };
      const conn: DoorConnection = new DoorConnection(socket, answer, () => this.connections.delete(conn),
        rtu ? rtuFraming(() => clock.mono(), (bytes) => { this.discarded += bytes; }) : mbapFraming());
      this.connections.add(conn);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: config.host, port: config.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => log.error({ server: config.id, err }, 'modbus server error'));
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    log.info({ server: config.id, host: config.host, port: this.port, framing: config.framing, units: [...units.keys()] }, 'modbus server listening');
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const c of this.connections) c.close();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  stats(): Record<string, unknown> {
    // Per unit and per client with exception codes: /metrics turns them into labels (api/metrics-servers.ts).
    const rtu = this.parts.config.framing === 'rtu' ? { discardedBytes: this.discarded } : {};
    return { running: true, connections: this.connections.size, refused: this.refused, ...rtu, latencyBounds: LATENCY_BOUNDS_S, ...this.figures.snapshot() };
  }

}
