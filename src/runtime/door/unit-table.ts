/**
 * A Modbus server's units, one dispatch for both transports: a persona unit answers from its snapshot, a
 * device unit (the door) through its bus owner's raw access or its generated map (handler.ts), the
 * diagnostic unit from the devices' states. The transports (tcp-server.ts: MBAP or RTU over TCP;
 * persona/rtu-slave.ts: a serial port) only frame requests and write the answers.
 */
import type { ServerConfig } from '../../config/types.js';
import type { Clock } from '../../core/clock.js';
import type { RawModbusAccess } from '../../drivers/types.js';
import type { Logger } from '../../util/logger.js';
import { Figures } from './figures.js';
import type { GeneratedUnit } from './generated-unit.js';
import { createHandler, type Budget, type DeviceUnit } from './handler.js';

/** A persona unit's answer to one PDU (null: silence). */
export type UnitAnswer = (pdu: Uint8Array) => Promise<Uint8Array | null>;

export interface UnitTableParts {
  config: ServerConfig;
  access(deviceId: string): RawModbusAccess | undefined;
  generated(deviceId: string): GeneratedUnit | undefined;
  clock: Clock;
  log: Logger;
  /** Persona units by unit id: answered from their snapshot, never through a bus. */
  personas?: ReadonlyMap<number, UnitAnswer>;
}

export class UnitTable {
  /** Counts of the device and diagnostic units (persona units count their own). */
  readonly figures = new Figures();
  readonly units = new Map<number, DeviceUnit>();
  private readonly handle: ReturnType<typeof createHandler>;

  constructor(private readonly parts: UnitTableParts) {
    const { config, clock, log } = parts;
    for (const u of config.units) {
      if (u.device !== undefined) this.units.set(u.unit, { unit: u.unit, device: u.device, writes: u.writes, maxAgeMs: u.max_age ?? config.max_age });
      else if (!parts.personas?.has(u.unit)) log.warn({ server: config.id, unit: u.unit }, 'persona unit not served (its error is logged above); the unit answers exception 0x0A');
    }
    this.handle = createHandler({
      units: this.units, access: parts.access, generated: parts.generated, clock, figures: this.figures,
      ...(config.diagnostic_unit === undefined ? {} : { diagnosticUnit: config.diagnostic_unit }),
    });
  }

  /** Whether `unit` is served here (a device, a persona or the diagnostic unit). */
  serves(unit: number): boolean {
    return this.units.has(unit) || this.parts.personas?.has(unit) === true || unit === this.parts.config.diagnostic_unit;
  }

  /** The answer PDU to `pdu` for `unit`, asked by `client` within its bus `budget`; null: silence. */
  answer(unit: number, pdu: Uint8Array, client: string, budget: Budget): Promise<Uint8Array | null> {
    const persona = this.parts.personas?.get(unit);
    if (persona) return persona(pdu);
    const { clock } = this.parts;
    const start = clock.mono();
    return this.handle(unit, pdu, client, budget).then((answer) => {
      // After count(): the client's and unit's entries exist by now.
      this.figures.latency(client, unit, (clock.mono() - start) / 1000);
      return answer;
    });
  }
}
