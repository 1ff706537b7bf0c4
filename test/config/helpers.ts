/** Shared helpers of the config tests. */
import { ConfigError, validateConfig, type ValidateOptions } from '../../src/config/load.js';

/** The problems validateConfig reports for `raw` (fails the test when it does not throw a ConfigError). */
export function problemsOf(raw: unknown, opts: ValidateOptions = {}): string[] {
  try {
    validateConfig(raw, { env: {}, models: {}, ...opts });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected the config to be refused');
}

/** A valid modbus-rtu setup around the given points, to vary one thing at a time. */
export function modbusConfig(points: unknown[], device: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyUSB0' }],
    models: { meter: { points } },
    devices: [{ id: 'm1', model: 'meter', bus: 'rs485', unit_id: 1, ...device }],
  };
}
