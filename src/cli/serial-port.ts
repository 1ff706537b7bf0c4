/**
 * What the one-off Modbus commands (scan, read, write, probe) share about a serial port: the ad-hoc
 * modbus-rtu bus of `--port DEV` (for a port before any config exists), validated like a config so the
 * schema's defaults apply, and the words for a link that does not open — above all a port the running
 * gateway holds: serialport locks the port (flock) it opens, so a second opener gets "Cannot lock port".
 */
import { ConfigError, validateConfig, type ConfigChecker } from '../config/load.js';
import type { BusConfig, ModelConfig } from '../config/types.js';

/** The `--port` flags, as given on the command line. */
export interface PortFlags {
  port: string;
  baud?: number;
  parity?: string;
  stopBits?: number;
  dataBits?: number;
}

/** The schema's words for the flags: buses[0].baud_rate is --baud. */
const FLAG_NAMES: Record<string, string> = { baud_rate: '--baud', parity: '--parity', stop_bits: '--stop-bits', data_bits: '--data-bits', port: '--port' };

/**
 * The ad-hoc bus (id "port") with these models. Throws a ConfigError whose problems name the flags
 * (`--baud: must be …`); `serialOnly` tells whether only the serial settings were wrong.
 */
export function adhocRtuBus(flags: PortFlags, models: Record<string, unknown> = {}, checkers: readonly ConfigChecker[] = []): { bus: BusConfig; models: Record<string, ModelConfig> } {
  const raw: Record<string, unknown> = { id: 'port', driver: 'modbus-rtu', port: flags.port };
  if (flags.baud !== undefined) raw.baud_rate = flags.baud;
  if (flags.parity !== undefined) raw.parity = flags.parity;
  if (flags.stopBits !== undefined) raw.stop_bits = flags.stopBits;
  if (flags.dataBits !== undefined) raw.data_bits = flags.dataBits;
  try {
    const config = validateConfig({ buses: [raw] }, { models, checkers });
    return { bus: config.buses[0]!, models: config.models };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(e.problems.map((p) => p.replace(/^buses\[0\]\.(\w+)/, (m, k: string) => FLAG_NAMES[k] ?? m)));
  }
}

/** Whether every problem of a failed adhocRtuBus is about the serial settings (not a model). */
export const serialOnly = (e: ConfigError): boolean => e.problems.every((p) => /^(--|buses\[0\])/.test(p));

/**
 * The error for a link that did not open. A port locked by another process is, on a gateway, the running
 * service that owns the bus: say so and point to what works while it runs.
 */
export function openFailure(link: string, lastError: string | null, what: 'scan' | 'probe' | 'read' | 'write' | 'doctor'): string {
  if (!/cannot lock port|resource temporarily unavailable/i.test(lastError ?? '')) return `cannot open ${link}: ${String(lastError)}`;
  const instead = what === 'scan'
    ? 'scan from the console instead (Devices → Add a device → pick the bus → Scan the bus; REST: POST /api/v1/bus/scan?id=BUS)'
    : what === 'doctor'
      ? 'run the doctor on the bus from the REST API instead (POST /api/v1/buses/<id>/doctor)'
      : what === 'probe'
      ? 'read the device from the console instead (Devices → Add a device → Test read; REST: POST /api/v1/device/testRead)'
      : 'use the REST API of the running gateway instead (docs/rest.md)';
  return `${link} is held by another program — on a gateway, the running shadowgate service, which owns the bus and locks its port; `
    + `${instead}, or stop the service first (sudo systemctl stop shadowgate)`;
}
