/** Bus option readers shared by the Modbus link set-up and driver (values arrive validated by the schema). */
import type { BusConfig } from '../../config/types.js';
import { GatewayError } from '../../core/errors.js';

export const num = (bus: BusConfig, key: string, fallback: number): number => (typeof bus[key] === 'number' ? (bus[key] as number) : fallback);

export function maxGapOf(bus: BusConfig): 'auto' | number {
  const g = bus['max_gap'];
  return typeof g === 'number' && g >= 0 ? g : 'auto';
}

export const configError = (bus: BusConfig, message: string): GatewayError =>
  new GatewayError('CONFIG_INVALID', `bus ${bus.id}: ${message}`);
