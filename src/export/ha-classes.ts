/**
 * Home Assistant's rules for what an entity is: device class and state class from the unit (HA's own
 * table, `homeassistant/components/sensor/const.py`: DEVICE_CLASS_UNITS, DEVICE_CLASS_STATE_CLASSES),
 * binary sensor classes, and human names. Pure.
 */
import type { PointInfo } from './context.js';

/** The unit as HA spells it (`%RH` is HA's humidity `%`, `uS/cm` its `µS/cm`, `deg` its `°`). */
export function haUnit(unit: string | undefined): string | undefined {
  if (unit === undefined || unit === '') return undefined;
  const spelled: Record<string, string> = { '%RH': '%', RH: '%', degC: '°C', C: '°C', degF: '°F', 'uS/cm': 'µS/cm', 'mS/cm': 'mS/cm', deg: '°' };
  return spelled[unit] ?? unit;
}

// Units HA's table ties to one device class (kVA and kvar are not in it: no class for them).
const UNIT_CLASS: Record<string, string> = {
  '°C': 'temperature', '°F': 'temperature', K: 'temperature',
  V: 'voltage', mV: 'voltage', kV: 'voltage',
  A: 'current', mA: 'current',
  W: 'power', kW: 'power', MW: 'power',
  VA: 'apparent_power', var: 'reactive_power',
  Wh: 'energy', kWh: 'energy', MWh: 'energy',
  Hz: 'frequency', kHz: 'frequency',
  Pa: 'pressure', hPa: 'pressure', kPa: 'pressure', bar: 'pressure', mbar: 'pressure', psi: 'pressure',
  lx: 'illuminance', dBm: 'signal_strength',
  'µS/cm': 'conductivity', 'mS/cm': 'conductivity',
  s: 'duration', ms: 'duration', min: 'duration', h: 'duration', d: 'duration',
};

/** Accumulating meters: HA's statistics sum them (`total_increasing`), a reset (a daily counter) is a new cycle. */
const COUNTER_UNITS = new Set(['Wh', 'kWh', 'MWh', 'varh', 'kvarh', 'VAh', 'kVAh', 'm³', 'L']);
const COUNTER_NAME = /(^|_)(count|counter|pulses?|impulses?)(_?\d+)?$/i;
/** Settings, identities and codes, not measurements: no statistics, shown under the device's diagnostics. */
const DIAGNOSTIC_NAME = /(_sf$|(^|_)(address|baud_rate|version|serial_number|manufacturer|model|code|type|status_word|control_word|events?|application)(_|$)|_(id|length)$)/i;

export function isDiagnostic(p: PointInfo): boolean {
  return DIAGNOSTIC_NAME.test(p.name);
}

/** HA device_class and state_class of a numeric sensor. */
export function classesFor(p: PointInfo): { device_class?: string; state_class?: string } {
  if (p.type === 'string') return {};
  const unit = haUnit(p.unit);
  const counter = (unit !== undefined && COUNTER_UNITS.has(unit)) || (!unit && p.type === 'int' && COUNTER_NAME.test(p.name));
  const state_class = counter ? 'total_increasing' : isDiagnostic(p) ? undefined : 'measurement';
  const out = (device_class?: string): { device_class?: string; state_class?: string } => ({
    ...(device_class ? { device_class } : {}), ...(state_class ? { state_class } : {}),
  });
  // A scale factor (SunSpec `pf_sf`, `w_sf`) is an exponent, not the quantity its name starts with.
  if (/_sf$/i.test(p.name)) return out();
  if (/power_factor|(^|_)pf(_|$)/i.test(p.name) && (unit === undefined || unit === '%')) return out('power_factor');
  if (unit === '%') {
    if (/humid/i.test(p.name)) return out('humidity');
    if (/(^|_)(battery_)?soc$|battery_(level|charge)$/i.test(p.name)) return out('battery');
    if (/moisture/i.test(p.name)) return out('moisture');
    return out();
  }
  return out(unit ? UNIT_CLASS[unit] : undefined);
}

/** Binary sensor class from the point's name (GPIO door contacts, PIR sensors, alarms). */
export function binaryClassFor(name: string): { device_class?: string; inverted?: boolean } {
  // HA's door/window are on when open; a point named `closed` is 1 when the contact is closed.
  if (/^closed(_?\d+)?$/i.test(name) || /_closed$/i.test(name)) return { device_class: 'door', inverted: true };
  if (/(^|_)(door|contact)(_?\d+)?$/i.test(name)) return { device_class: 'door' };
  if (/(^|_)window(_?\d+)?$/i.test(name)) return { device_class: 'window' };
  if (/(^|_)(motion|pir|presence|occupancy)(_?\d+)?$/i.test(name)) return { device_class: 'motion' };
  if (/(^|_)(alarm|fault|error)(_?\d+)?$/i.test(name)) return { device_class: 'problem' };
  return {};
}

const UPPER = new Set(['l1', 'l2', 'l3', 'n', 'pv', 'pv1', 'pv2', 'ac', 'dc', 'soc', 'ec', 'pf', 'id', 'thd', 'rs485', 'gpio', 'led', 'pir']);

/** `voltage_l1` → `Voltage L1`, `relay1` → `Relay 1`, `pv1_current` → `PV1 current`. */
export function humanName(name: string): string {
  const words = name
    .split(/[_\s]+/)
    .filter(Boolean)
    .flatMap((w) => (UPPER.has(w.toLowerCase()) ? [w] : w.split(/(?<=[a-zA-Z])(?=\d)/)))
    .map((w) => (UPPER.has(w.toLowerCase()) ? w.toUpperCase() : w.toLowerCase()));
  if (words.length === 0) return name;
  const first = words[0]!;
  words[0] = first === first.toUpperCase() ? first : first[0]!.toUpperCase() + first.slice(1);
  return words.join(' ');
}
