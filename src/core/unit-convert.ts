/**
 * The factor that turns a value in one unit into another, for a value passed from one model's point to
 * another's (a persona bound to a device's point). Only conversions that cannot be a guess: SI prefixes of
 * the same quantity (W and kW, Wh and kWh, …), and a power factor as a fraction (the usual meter's 0.95)
 * into percent (SunSpec's 95, "Pct") and back. Anything else passes unchanged (factor 1).
 */

/** Units that are a base unit times a factor. */
const PREFIXED: Readonly<Record<string, readonly [string, number]>> = {
  kW: ['W', 1000], MW: ['W', 1e6], kWh: ['Wh', 1000], MWh: ['Wh', 1e6],
  kvar: ['var', 1000], kvarh: ['varh', 1000], kVA: ['VA', 1000], kVAh: ['VAh', 1000],
  kV: ['V', 1000], mA: ['A', 0.001], kHz: ['Hz', 1000],
};

const base = (unit: string): readonly [string, number] => PREFIXED[unit] ?? [unit, 1];

/** Whether a point named so is a power factor (`power_factor`, `total_power_factor_l1`, `pf`, `pf_a`). */
const isPowerFactor = (name: string): boolean => /power_factor|(^|_)pf(_|$)/i.test(name) && !/_sf$/i.test(name);

/** What a value in `from` (absent: none) is multiplied by to be in `to`, for a point named `name`. */
export function unitFactor(from: string | undefined, to: string | undefined, name: string): number {
  const f = from ?? '';
  const t = to ?? '';
  if (f === t) return 1;
  if (isPowerFactor(name)) {
    if (f === '' && t === '%') return 100;
    if (f === '%' && t === '') return 0.01;
  }
  const [fb, ff] = base(f);
  const [tb, tf] = base(t);
  return fb === tb && fb !== '' ? ff / tf : 1;
}
