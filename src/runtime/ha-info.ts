/**
 * What Home Assistant discovery needs from the model library and the host: per point, the facts that decide
 * the entity (on/off line, register type, scale, value map); per device, the HA device block (manufacturer
 * and model from the library, the gateway's version, the console's address).
 */
import { networkInterfaces, hostname } from 'node:os';
import { isGpioLevel } from '../config/on-off.js';
import type { ResolvedDevice } from '../config/types.js';
import type { PointInfo } from '../export/context.js';
import type { DiscoveryDevice } from '../export/homeassistant.js';

export function haPointInfo(device: Pick<ResolvedDevice, 'model'> & { config?: Pick<ResolvedDevice['config'], 'unlock_writes'> } | undefined): PointInfo[] {
  const unlocked = new Set(device?.config?.unlock_writes ?? []);
  return (device?.model.points ?? []).map((p) => ({
    // A guarded point (a line setting) is read-only until the device unlocks it: no write control in HA.
    name: p.name, type: p.type, access: p.guarded && !unlocked.has(p.name) ? 'R' as const : p.access, ...(p.unit === undefined ? {} : { unit: p.unit }),
    binary: isGpioLevel(p) || p.modbus?.data_type === 'bool' || p.modbus?.table === 'coil' || p.modbus?.table === 'discrete',
    ...(p.modbus?.data_type ? { dataType: p.modbus.data_type } : {}),
    ...(p.scale !== undefined && p.scale !== 1 ? { scale: p.scale } : {}),
    ...(p.offset ? { offset: p.offset } : {}),
    ...(p.decimals !== undefined ? { decimals: p.decimals } : {}),
    ...(p.min !== undefined ? { min: p.min } : {}),
    ...(p.max !== undefined ? { max: p.max } : {}),
    ...(p.values ? { values: p.values } : {}),
  }));
}

export function haDeviceInfo(device: Pick<ResolvedDevice, 'model'> | undefined, modelName: string, swVersion: string, consoleUrl: string): DiscoveryDevice {
  return {
    model: device?.model.name ?? modelName,
    manufacturer: device?.model.manufacturer ?? 'shadowgate',
    sw_version: swVersion,
    configuration_url: consoleUrl,
  };
}

/** The address another machine reaches a listener on `host` by: a wildcard becomes the host's own IPv4 address. */
export function hostAddress(host: string): string {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return host;
  const v4 = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
  return v4?.address ?? hostname();
}

/** The console's address as another machine reaches it. */
export function consoleUrl(host: string, port: number): string {
  const name = hostAddress(host);
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}/`;
}
