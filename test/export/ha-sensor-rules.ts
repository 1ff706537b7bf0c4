/**
 * Home Assistant's own rules for sensor entities, replicated for the tests (not used by the gateway, which
 * must not grade its own homework). Source: home-assistant/core, `homeassistant/components/sensor/const.py`
 * at commit 00eb6680fbf6bdf7af2499095f2e74fca980a148: `DEVICE_CLASS_UNITS` and `DEVICE_CLASS_STATE_CLASSES`.
 * Where the table says `set(UnitOfX)`, the units are the ones the same file's docstring of that device class
 * lists. Classes whose unit enum is not spelled out there (area, data rate/size, distance, speed, volume,
 * weight, …) are left out: no unit of the model library belongs to them, and a config naming one of them
 * fails the test until it is replicated here. `null` = no unit.
 * Binary sensor classes: `BinarySensorDeviceClass` in `homeassistant/components/binary_sensor/__init__.py`.
 */

const ALL = ['measurement', 'total', 'total_increasing'];
const M = ['measurement'];

export const DEVICE_CLASS_UNITS: Record<string, (string | null)[]> = {
  apparent_power: ['VA'],
  aqi: [null],
  battery: ['%'],
  carbon_monoxide: ['ppm'],
  carbon_dioxide: ['ppm'],
  conductivity: ['S/cm', 'mS/cm', 'µS/cm'],
  current: ['A', 'mA'],
  duration: ['d', 'h', 'min', 's', 'ms'],
  energy: ['J', 'kJ', 'MJ', 'GJ', 'mWh', 'Wh', 'kWh', 'MWh', 'GWh', 'TWh', 'cal', 'kcal', 'Mcal', 'Gcal'],
  energy_storage: ['J', 'kJ', 'MJ', 'GJ', 'mWh', 'Wh', 'kWh', 'MWh', 'GWh', 'TWh', 'cal', 'kcal', 'Mcal', 'Gcal'],
  frequency: ['Hz', 'kHz', 'MHz', 'GHz'],
  gas: ['CCF', 'ft³', 'm³'],
  humidity: ['%'],
  illuminance: ['lx'],
  moisture: ['%'],
  ph: [null],
  power_factor: ['%', null],
  power: ['W', 'kW', 'MW', 'GW', 'TW'],
  pressure: ['mbar', 'cbar', 'bar', 'Pa', 'hPa', 'kPa', 'inHg', 'psi'],
  reactive_power: ['var'],
  signal_strength: ['dB', 'dBm'],
  temperature: ['°C', '°F', 'K'],
  temperature_delta: ['°C', '°F', 'K'],
  voltage: ['V', 'mV', 'µV', 'kV', 'MV'],
  water: ['CCF', 'ft³', 'm³', 'gal', 'L'],
  wind_direction: ['°'],
};

export const DEVICE_CLASS_STATE_CLASSES: Record<string, string[]> = {
  apparent_power: M, aqi: M, battery: M, carbon_monoxide: M, carbon_dioxide: M, conductivity: M, current: M,
  date: [], duration: ALL, energy: ['total', 'total_increasing'], energy_storage: M, enum: [], frequency: M,
  gas: ['total', 'total_increasing'], humidity: M, illuminance: M, moisture: M, ph: M, power_factor: M, power: M,
  pressure: M, reactive_power: M, signal_strength: M, temperature: M, temperature_delta: M, timestamp: [],
  voltage: M, water: ['total', 'total_increasing'], wind_direction: [],
};

export const STATE_CLASSES = ALL;

export const BINARY_SENSOR_CLASSES = new Set([
  'battery', 'battery_charging', 'carbon_monoxide', 'cold', 'connectivity', 'door', 'garage_door', 'gas', 'heat',
  'light', 'lock', 'moisture', 'motion', 'moving', 'occupancy', 'opening', 'plug', 'power', 'presence', 'problem',
  'running', 'safety', 'smoke', 'sound', 'tamper', 'update', 'vibration', 'window',
]);

/** The one device class HA's table allows `unit` for, or null when none or several do. */
export function onlyClassFor(unit: string): string | null {
  const classes = Object.entries(DEVICE_CLASS_UNITS).filter(([, units]) => units.includes(unit)).map(([c]) => c);
  return classes.length === 1 ? classes[0]! : null;
}

/** What is wrong with a sensor config by HA's table (empty when nothing). */
export function sensorProblems(c: Record<string, unknown>): string[] {
  const out: string[] = [];
  const dc = c.device_class as string | undefined;
  const unit = (c.unit_of_measurement as string | undefined) ?? null;
  const sc = c.state_class as string | undefined;
  if (sc !== undefined && !STATE_CLASSES.includes(sc)) out.push(`unknown state_class ${sc}`);
  if (dc === 'enum') {
    if (!Array.isArray(c.options) || c.options.length === 0) out.push('enum without options');
    if (unit !== null) out.push('enum with a unit');
    if (sc !== undefined) out.push('enum with a state_class');
    return out;
  }
  if (dc !== undefined) {
    const units = DEVICE_CLASS_UNITS[dc];
    if (!units) return [...out, `device_class ${dc} not in the replicated table`];
    if (!units.includes(unit)) out.push(`unit ${unit} not allowed for ${dc} (${units.join(', ')})`);
    if (sc !== undefined && !DEVICE_CLASS_STATE_CLASSES[dc]!.includes(sc)) out.push(`state_class ${sc} not allowed for ${dc}`);
  }
  return out;
}
