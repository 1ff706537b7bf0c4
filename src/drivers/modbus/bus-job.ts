/**
 * What a job holding the bus may do (BusIo), what the bus counts per unit, and the link-down failure: the
 * contract between the bus owner (bus-owner.ts) and the parts that queue jobs on it (the poller, the driver's
 * reads and writes, the door's raw access, the scan and the doctor).
 */
import { GatewayError } from '../../core/errors.js';
import type { Exchange } from '../../protocol/modbus/doctor-types.js';
import type { WireRequest } from './transport.js';

/** The request never reached the wire because the link is down: the bus's fault, not the slave's. */
export class LinkDownError extends GatewayError {
  constructor(message: string) {
    super('DRIVER_ERROR', message);
  }
}

export interface UnitStats {
  requests: number;
  timeouts: number;
  crcErrors: number;
  exceptions: number;
  errors: number;
  lastRttMs: number | null;
}

/** What a job may do while it holds the bus. */
export interface BusIo {
  /** One request; `retries` extra attempts after a timeout or corrupt frame. Throws GatewayError. */
  request(unit: number, req: WireRequest, retries?: number): Promise<number[] | boolean[] | undefined>;
  /**
   * One request of a unit-id scan, no retry. Counted as a scan probe, not in the bus's or the unit's requests,
   * timeouts or exceptions, and no reopen after a run of them: silence from an id nobody owns is what a scan
   * expects, not a fault of the line (a scan of ids 1–10 with two devices showed "Timeouts 8" on a healthy bus).
   */
  probe(unit: number, req: WireRequest): Promise<number[] | boolean[] | undefined>;
  /**
   * One request of the bus doctor, given as its PDU, no retry: its outcome as the doctor sees it (an answer's
   * PDU, an exception, garbage, silence). Counted as a scan probe, as `probe`: a doctor asking every id and
   * function is not a fault of the line. Throws only when the link is down or cannot send raw requests.
   */
  ask(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<Exchange>;
}
