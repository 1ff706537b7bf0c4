/** Maps what the wire layer throws to the gateway's typed errors (codes of STYLE §7). */
import { GatewayError } from '../../core/errors.js';
import { exceptionMessage } from '../../protocol/modbus/exceptions.js';
import { WireGarbled, WireTimeout } from './transport.js';

export type FailureKind = 'timeout' | 'exception' | 'crc' | 'io';

/** A Modbus exception answer; `exception` keeps the device's code (the Modbus server passes it through). */
export class ModbusExceptionError extends GatewayError {
  constructor(readonly exception: number, unit: number) {
    super('MODBUS_EXCEPTION', exceptionMessage(exception, unit));
  }
}

export interface ClassifiedError {
  kind: FailureKind;
  error: GatewayError;
  /** Modbus exception code when kind is 'exception'. */
  code?: number;
}

export function classify(err: unknown, unit: number, where: string): ClassifiedError {
  if (err instanceof GatewayError) return { kind: err.code === 'DRIVER_TIMEOUT' ? 'timeout' : 'io', error: err };
  if (err instanceof WireTimeout) {
    return { kind: 'timeout', error: new GatewayError('DRIVER_TIMEOUT', `timeout: unit ${unit} on ${where} did not answer within ${err.timeoutMs} ms`) };
  }
  if (err instanceof WireGarbled) {
    return { kind: 'crc', error: new GatewayError('DRIVER_ERROR', `corrupt answer from unit ${unit} on ${where}: ${err.message}`) };
  }
  const e = err as { modbusCode?: number; message?: string };
  if (typeof e?.modbusCode === 'number') {
    return { kind: 'exception', code: e.modbusCode, error: new ModbusExceptionError(e.modbusCode, unit) };
  }
  return { kind: 'io', error: new GatewayError('DRIVER_ERROR', `${where}: ${String(e?.message ?? err)}`) };
}
