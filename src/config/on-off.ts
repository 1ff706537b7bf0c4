/**
 * On/off points: a coil, a discrete input, a Modbus `bool`, one bit of a register, a GPIO line, or a value map of exactly the codes 0
 * and 1. The console shows a writable one as a switch rather than a number box.
 */
import type { PointConfig } from './types.js';
import type { Value } from '../core/types.js';

/** A GPIO line read or driven as 0/1 (not a pulse counter's total or rate, which are numbers). */
export const isGpioLevel = (p: Pick<PointConfig, 'gpio'>): boolean =>
  p.gpio !== undefined && p.gpio.counter === undefined && p.gpio.rate_of === undefined;

/** The point's two states as the shadow holds them, `[off, on]`; undefined for any other point. */
export function onOffStates(p: Pick<PointConfig, 'type' | 'values' | 'modbus' | 'gpio'>): [Value, Value] | undefined {
  if (p.values) {
    const codes = Object.keys(p.values).sort();
    return codes.length === 2 && codes[0] === '0' && codes[1] === '1' ? [p.values['0']!, p.values['1']!] : undefined;
  }
  if (p.type === 'string') return undefined;
  const bit = isGpioLevel(p) || p.modbus?.data_type === 'bool' || p.modbus?.table === 'coil' || p.modbus?.table === 'discrete' || p.modbus?.bit !== undefined;
  return bit ? [0, 1] : undefined;
}
