/**
 * One Modbus TCP server ("front door"), MBAP or RTU-over-TCP framed: a listener with at most `max_clients` connections, an optional
 * allow-list of client addresses, TCP keepalive and no idle timeout; each connection has its own bus
 * budget and pipeline (connection.ts), every request is answered by the unit table (unit-table.ts).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { TcpServerConfig } from '../../config/types.js';
import type { MbapFrame } from '../../protocol/modbus/mbap.js';
import { DoorConnection, normalizeAddress } from './connection.js';
import { mbapFraming, rtuFraming } from './framing.js';
import { Figures, LATENCY_BOUNDS_S } from './figures.js';
import { Budget } from './handler.js';
import { UnitTable, type UnitTableParts } from './unit-table.js';

/** The unit table's parts, on a TCP server's config. */
export type TcpDoorParts = UnitTableParts & { config: TcpServerConfig };

export class TcpDoor {
  /** Counts of the device and diagnostic units (the unit table's, once started). */
  figures = new Figures();
  private server: Server | null = null;
  private readonly connections = new Set<DoorConnection>();
  private refused = 0;
  /** RTU framing: bytes dropped as no request (bad CRC, noise). */
  private discarded = 0;
  port = 0;

  constructor(private readonly parts: TcpDoorParts) {}

  async start(): Promise<void> {
    const { config, clock, log } = this.parts;
    const table = new UnitTable(this.parts);
    this.figures = table.figures;
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
      const rtu = config.framing === 'rtu';
      // RTU broadcast (unit 0): a line's slaves never answer it; a door serves no broadcast, so it is dropped.
      const answer = (frame: MbapFrame): Promise<Uint8Array | null> =>
        rtu && frame.unit === 0 ? Promise.resolve(null) : table.answer(frame.unit, frame.pdu, address, budget);
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
    log.info({ server: config.id, host: config.host, port: this.port, framing: config.framing, units: config.units.map((u) => u.unit).filter((u) => table.serves(u)) }, 'modbus server listening');
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
