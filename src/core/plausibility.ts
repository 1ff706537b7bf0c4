/**
 * Plausibility of a value read from a device, by the point's unit (`shadowgate probe` flags what this returns,
 * docs/modbus.md §6). Pure. The rules are deliberately coarse: they catch a wrong register, a wrong word order,
 * a wrong data type or a wrong scale — not a value that is merely unusual. In order, the first that fires wins:
 *
 * - any numeric point: NaN or ±Infinity (a float the model does not declare as "not available");
 * - a `float` point: |value| ≥ 1e8 (a float32 read with the wrong word order or at the wrong register
 *   typically decodes to a huge or tiny number);
 * - `V`: exactly 0 ("no voltage at the terminals or wrong register"), otherwise outside 1..1000 V;
 * - `Hz`: outside 45..65 Hz (mains);
 * - `A`: negative or above 10 000 A;
 * - power (`W`, `kW`, `MW`, `VA`, `kVA`, `var`, `kvar`): magnitude above 10 MW (1e7 W; negative power is
 *   normal: export, capacitive);
 * - energy counters (`Wh`, `kWh`, `MWh`, `varh`, `kvarh`): negative, or above 1e12 Wh;
 * - `%`, `%RH`: outside 0..100;
 * - `°C`: outside -60..150 °C.
 *
 * Units are matched exactly as written in the model (case matters: mW is not MW). Other units, strings and
 * points without a unit are only checked by the first two rules.
 */

/** What the rules need of a point: its unit and type (a PointConfig fits). */
export interface PlausibilityPoint {
  unit?: string | undefined;
  type?: 'int' | 'float' | 'string' | undefined;
}

/** Above this magnitude a float point's value is flagged, whatever its unit. */
export const FLOAT_LIMIT = 1e8;

const POWER_W: Readonly<Record<string, number>> = { W: 1, kW: 1e3, MW: 1e6, VA: 1, kVA: 1e3, var: 1, kvar: 1e3 };
const ENERGY_WH: Readonly<Record<string, number>> = { Wh: 1, kWh: 1e3, MWh: 1e6, varh: 1, kvarh: 1e3 };
const MAX_POWER_W = 1e7;
const MAX_ENERGY_WH = 1e12;

const outside = (v: number, lo: number, hi: number): boolean => v < lo || v > hi;
/** A value in a reason: as it is, or with 4 significant digits when it is huge or tiny (2.318e+18, -2.418e-41). */
const show = (v: number): string => (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3) ? v.toPrecision(4) : String(v));
/** A power of ten as `1e7` (the limits in a unit). */
const pow10 = (v: number): string => `1e${Math.round(Math.log10(v))}`;

/**
 * Why `value` is not a plausible value of `point`, or null when it is. `value` is the engineering value
 * (after scale and offset); a raw NaN/Infinity may be passed as well, it is flagged for any numeric point.
 */
export function implausibility(point: PlausibilityPoint, value: unknown): string | null {
  if (typeof value !== 'number' || point.type === 'string') return null;
  if (Number.isNaN(value)) return 'NaN: not a number (wrong data type, word order or register?)';
  if (!Number.isFinite(value)) return `${show(value)}: not a finite number (wrong data type, word order or register?)`;
  if (point.type === 'float' && Math.abs(value) >= FLOAT_LIMIT) {
    return `|${show(value)}| ≥ 1e8: a float this large is usually a wrong word order, data type or register`;
  }
  const unit = point.unit?.trim();
  if (unit === undefined || unit === '') return null;
  switch (unit) {
    case 'V':
      if (value === 0) return '0 V: no voltage at the terminals or wrong register';
      return outside(value, 1, 1000) ? `${show(value)} V is outside 1..1000 V` : null;
    case 'Hz':
      return outside(value, 45, 65) ? `${show(value)} Hz is outside 45..65 Hz` : null;
    case 'A':
      if (value < 0) return `${show(value)} A: a negative current`;
      return value > 10_000 ? `${show(value)} A is above 10000 A` : null;
    case '%':
    case '%RH':
      return outside(value, 0, 100) ? `${show(value)} ${unit} is outside 0..100 ${unit}` : null;
    case '°C':
      return outside(value, -60, 150) ? `${show(value)} °C is outside -60..150 °C` : null;
    default:
      break;
  }
  const powerFactor = POWER_W[unit];
  if (powerFactor !== undefined) {
    return Math.abs(value * powerFactor) > MAX_POWER_W ? `${show(value)} ${unit}: magnitude above ${pow10(MAX_POWER_W / powerFactor)} ${unit}` : null;
  }
  const energyFactor = ENERGY_WH[unit];
  if (energyFactor !== undefined) {
    if (value < 0) return `${show(value)} ${unit}: a negative energy counter`;
    return value * energyFactor > MAX_ENERGY_WH ? `${show(value)} ${unit} is above ${pow10(MAX_ENERGY_WH / energyFactor)} ${unit}` : null;
  }
  return null;
}
