/**
 * What a Modbus server answers to one request. Never silence and never a closed socket for a device
 * problem: an unmapped unit is exception 0x0A at once; a device that does not answer 0x0B (after the bus's
 * timeout and retries, at once while its backoff lasts); a device's own exception is passed through; a
 * client over its bus budget, or a bus queue that is full, 0x06; a write to a unit without `writes` 0x01
 * and nothing on the bus. Reads young enough in the last poll are answered without the bus and cost no budget.
 */
import type { Clock } from '../../core/clock.js';
import { isGatewayError } from '../../core/errors.js';
import { LinkDownError } from '../../drivers/modbus/bus-owner.js';
import { ModbusExceptionError } from '../../drivers/modbus/errors.js';
import type { RawModbusAccess } from '../../drivers/types.js';
import { EXCEPTION, decodeRequest, encodeBits, encodeException, encodeRegisters, encodeWriteAnswer, type ServerRequest } from '../../protocol/modbus/pdu.js';
import type { Figures } from './figures.js';
import { UnitException, type GeneratedUnit } from './generated-unit.js';

/** Bus requests (misses, writes) of one connection waiting at once; one more is answered 0x06. */
export const MAX_WAITING_PER_CLIENT = 8;

export interface DeviceUnit {
  unit: number;
  device: string;
  writes: boolean;
  maxAgeMs: number;
}

export interface HandlerParts {
  units: ReadonlyMap<number, DeviceUnit>;
  diagnosticUnit?: number;
  /** The running bus's raw access for a device; undefined when its bus is not a running Modbus bus. */
  access(deviceId: string): RawModbusAccess | undefined;
  /** A register map generated from the model, for a device whose bus has no raw Modbus access. */
  generated(deviceId: string): GeneratedUnit | undefined;
  clock: Clock;
  figures: Figures;
}

/** A connection's bus budget: a token bucket (`rate` per second, one second's worth of burst) and a cap on waiting requests. */
export class Budget {
  private tokens: number;
  private last: number;
  waiting = 0;

  constructor(private readonly rate: number, now: number) {
    this.tokens = Math.max(1, rate);
    this.last = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(Math.max(1, this.rate), this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.waiting >= MAX_WAITING_PER_CLIENT || this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** The exception a failed bus request becomes. */
export function exceptionFor(err: unknown): number {
  if (err instanceof ModbusExceptionError || err instanceof UnitException) return err.exception;
  if (err instanceof LinkDownError) return EXCEPTION.pathUnavailable;
  if (!isGatewayError(err)) return EXCEPTION.deviceFailure;
  switch (err.code) {
    case 'BUS_BUSY': return EXCEPTION.busy;
    case 'POINT_READONLY': return EXCEPTION.illegalFunction;
    case 'INVALID_VALUE': return EXCEPTION.illegalValue;
    case 'UNKNOWN_DEVICE': return EXCEPTION.pathUnavailable;
    case 'DRIVER_TIMEOUT': case 'UNIT_BACKED_OFF': case 'DRIVER_ERROR': return EXCEPTION.targetFailed;
    default: return EXCEPTION.deviceFailure;
  }
}

export function createHandler(parts: HandlerParts): (unit: number, pdu: Uint8Array, client: string, budget: Budget) => Promise<Uint8Array> {
  const { figures, clock } = parts;
  const fail = (client: string, unit: number, fc: number, code: number): Uint8Array => {
    figures.count(client, unit, { exception: code });
    return encodeException(fc, code);
  };

  const diagnostic = (req: ServerRequest): Uint8Array | number => {
    if (req.fc !== 3 && req.fc !== 4) return EXCEPTION.illegalFunction;
    // Two registers per mapped unit in config order: online (1/0), age of its newest poll in s (0xFFFF: none).
    const words: number[] = [];
    for (const u of parts.units.values()) {
      const state = (() => { try { return parts.access(u.device)?.state(u.device); } catch { return undefined; } })();
      words.push(state?.online ? 1 : 0, state?.ageMs == null ? 0xffff : Math.min(0xfffe, Math.floor(state.ageMs / 1000)));
    }
    if (req.address + req.count > words.length) return EXCEPTION.illegalAddress;
    return encodeRegisters(req.fc, words.slice(req.address, req.address + req.count));
  };

  return async (unitId, pdu, client, budget) => {
    const fc = pdu[0] ?? 0;
    const decoded = decodeRequest(pdu);
    if (!decoded.ok) return fail(client, unitId, fc, decoded.exception);
    const req = decoded.req;
    if (unitId === parts.diagnosticUnit) {
      const answer = diagnostic(req);
      if (typeof answer === 'number') return fail(client, unitId, fc, answer);
      figures.count(client, unitId, 'hit');
      return answer;
    }
    const unit = parts.units.get(unitId);
    if (!unit) return fail(client, unitId, fc, EXCEPTION.pathUnavailable);
    if (req.fc > 4 && !unit.writes) return fail(client, unitId, fc, EXCEPTION.illegalFunction);
    const access = parts.access(unit.device);
    if (!access?.has(unit.device)) {
      const generated = parts.generated(unit.device);
      if (!generated) return fail(client, unitId, fc, EXCEPTION.pathUnavailable);
      try {
        if ('count' in req) {
          const data = generated.read(req);
          figures.count(client, unitId, 'hit');
          return req.fc <= 2 ? encodeBits(req.fc as 1 | 2, data as boolean[]) : encodeRegisters(req.fc as 3 | 4, data as number[]);
        }
        if (!budget.take(clock.mono())) return fail(client, unitId, fc, EXCEPTION.busy);
        await generated.write(req);
        figures.count(client, unitId, 'write');
        return encodeWriteAnswer(req);
      } catch (err) {
        return fail(client, unitId, fc, exceptionFor(err));
      }
    }
    try {
      if ('count' in req) {
        const cached = access.peek(unit.device, req, unit.maxAgeMs);
        if (cached) {
          figures.count(client, unitId, 'hit');
          return req.fc <= 2 ? encodeBits(req.fc as 1 | 2, cached as boolean[]) : encodeRegisters(req.fc as 3 | 4, cached as number[]);
        }
      }
      // A unit backed off as dead costs no bus frame: 0x0B at once, never 0x06 for a budget it does not use (a
      // client polling it fast got 21 × 0x0B, then 0x06 for the rest once its tokens were spent on nothing).
      if (!access.state(unit.device).online) return fail(client, unitId, fc, EXCEPTION.targetFailed);
      if (!budget.take(clock.mono())) return fail(client, unitId, fc, EXCEPTION.busy);
      budget.waiting++;
      try {
        if ('count' in req) {
          const { data, hit } = await access.read(unit.device, req, unit.maxAgeMs);
          figures.count(client, unitId, hit ? 'hit' : 'miss');
          return req.fc <= 2 ? encodeBits(req.fc as 1 | 2, data as boolean[]) : encodeRegisters(req.fc as 3 | 4, data as number[]);
        }
        await access.write(unit.device, req);
        figures.count(client, unitId, 'write');
        return encodeWriteAnswer(req);
      } finally {
        budget.waiting--;
      }
    } catch (err) {
      return fail(client, unitId, fc, exceptionFor(err));
    }
  };
}
