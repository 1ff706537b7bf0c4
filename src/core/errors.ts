/** Typed failures with a stable `code`; the REST layer maps them to the envelope in one place. */
export type ErrorCode =
  | 'UNKNOWN_DEVICE'
  | 'UNKNOWN_POINT'
  | 'POINT_READONLY'
  | 'POINT_WRITEONLY'
  | 'READ_NOT_SUPPORTED'
  | 'INVALID_VALUE'
  | 'BAD_REQUEST'
  | 'CAPACITY_DEVICES'
  | 'CAPACITY_POINTS'
  | 'VERSION_CONFLICT'
  | 'DRIVER_TIMEOUT'
  | 'DRIVER_ERROR'
  | 'MODBUS_EXCEPTION'
  | 'BUS_BUSY'
  | 'UNIT_BACKED_OFF'
  | 'SUNSPEC_NOT_FOUND'
  | 'SUNSPEC_PENDING'
  | 'CONFIG_INVALID';

export class GatewayError extends Error {
  /** Structured detail for the envelope's `data` (a refused config's problems); none for most errors. */
  details?: unknown;

  constructor(readonly code: ErrorCode, message: string) {
    super(message);
    this.name = 'GatewayError';
  }
}

// The seed fixes these three texts exactly; clients of the upstream gateway match on them.
export const unknownDevice = (): GatewayError => new GatewayError('UNKNOWN_DEVICE', 'unknown device');
export const pointReadonly = (): GatewayError => new GatewayError('POINT_READONLY', 'point is readonly, can not write');
export const readNotSupported = (): GatewayError =>
  new GatewayError('READ_NOT_SUPPORTED', 'the protocol does not support getting connector');

export const unknownPoint = (name: string): GatewayError => new GatewayError('UNKNOWN_POINT', `unknown point: ${name}`);
export const pointWriteonly = (name: string): GatewayError =>
  new GatewayError('POINT_WRITEONLY', `point is writeonly, can not read: ${name}`);
export const badRequest = (message: string): GatewayError => new GatewayError('BAD_REQUEST', message);
export const invalidValue = (message: string): GatewayError => new GatewayError('INVALID_VALUE', message);

export const isGatewayError = (e: unknown): e is GatewayError => e instanceof GatewayError;

/**
 * Whether an error says the device (or the link to it) failed, for rule 3 (MayBeOffline): timeouts, corrupt
 * frames, a link that is down, and errors we could not classify. A refused value (INVALID_VALUE, a read-only
 * point), a request the gateway itself refused, and a Modbus exception reply — an answer from a live device —
 * say nothing about the device's health (DESIGN §3 rule 10).
 */
export function isDeviceFailure(err: unknown): boolean {
  if (!isGatewayError(err)) return true;
  return err.code === 'DRIVER_TIMEOUT' || err.code === 'DRIVER_ERROR';
}
