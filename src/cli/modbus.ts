/**
 * `shadowgate scan|read|write` for Modbus buses: one-off I/O through the bus's own driver (the Driver
 * interface, as the daemon uses it: its scan, read and write), without polling and without the daemon. Exit codes: 0 done, 1 the device did not answer / refused,
 * 2 usage or config error. The bus is one of the config (`--bus`), or for a scan a serial port (`--port DEV`
 * with --baud/--parity/--stop-bits/--data-bits, before any config exists). A port the running gateway holds
 * is named as such, with the console's scan to use instead (serial-port.ts).
 */
import { parseArgs } from 'node:util';
import type { BusConfig, GatewayConfig, ModbusPointBlock, ModbusRtuBusConfig, PointConfig, ResolvedDevice } from '../config/types.js';
import { systemClock } from '../core/clock.js';
import { isGatewayError } from '../core/errors.js';
import { resolveAddress } from '../protocol/modbus/address.js';
import { blockProblems } from '../protocol/modbus/block-check.js';
import { isBitTable } from '../protocol/modbus/codec.js';
import { createModbusRtuDriverWith } from '../drivers/modbus-rtu.js';
import { createModbusTcpDriverWith } from '../drivers/modbus-tcp.js';
import type { Driver, DriverContext } from '../drivers/types.js';
import { silentLogger } from '../util/logger.js';
import { adhocRtuBus, openFailure } from './serial-port.js';

class UsageError extends Error {}

const FLAGS = {
  bus: { type: 'string' }, unit: { type: 'string' }, table: { type: 'string' }, address: { type: 'string' },
  type: { type: 'string' }, value: { type: 'string' }, length: { type: 'string' }, bit: { type: 'string' },
  'word-order': { type: 'string' }, 'byte-order': { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
  timeout: { type: 'string' }, config: { type: 'string', short: 'c' },
  port: { type: 'string' }, baud: { type: 'string' }, parity: { type: 'string' }, 'stop-bits': { type: 'string' }, 'data-bits': { type: 'string' },
} as const;

const SERIAL_FLAGS = ['baud', 'parity', 'stop-bits', 'data-bits'] as const;

type Flags = Map<string, string>;

function parseFlags(args: readonly string[]): Flags {
  try {
    // parseArgs takes `--value -5` for a missing value followed by option -5; a negative number is a value here.
    const joined = args.flatMap((a, i) => (/^-\d|^-\.\d/.test(a) && /^--[a-z-]+$/.test(args[i - 1] ?? '') ? [] : [
      /^--[a-z-]+$/.test(a) && /^-\d|^-\.\d/.test(args[i + 1] ?? '') ? `${a}=${args[i + 1]!}` : a,
    ]));
    const { values } = parseArgs({ args: joined, options: FLAGS, strict: true, allowPositionals: false });
    return new Map(Object.entries(values).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function intFlag(flags: Flags, key: string, fallback?: number): number {
  const text = flags.get(key);
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${key} is required`);
    return fallback;
  }
  const n = Number(text);
  if (!Number.isInteger(n)) throw new UsageError(`--${key} must be an integer, not "${text}"`);
  return n;
}

/** The bus's own driver for one-off use (no polling): the CLI goes through the Driver interface like the daemon. */
function oneOffDriver(bus: BusConfig, devices: ResolvedDevice[], timeoutMs?: number): Driver {
  if (bus.driver !== 'modbus-rtu' && bus.driver !== 'modbus-tcp') throw new UsageError(`bus ${bus.id} is a ${bus.driver} bus, not modbus-rtu or modbus-tcp`);
  const cfg = timeoutMs === undefined ? bus : { ...bus, timeout: timeoutMs };
  const ctx: DriverContext = { sink: { data() {}, failure() {} }, clock: systemClock, log: silentLogger, lastValue: () => null, lastWrite: () => null };
  const create = bus.driver === 'modbus-rtu' ? createModbusRtuDriverWith : createModbusTcpDriverWith;
  return create(cfg, devices, ctx, { oneOff: true });
}

/** Opens the driver's link; a link that does not open is an error naming it (and the gateway, when it holds the port). */
async function open(driver: Driver, what: 'scan' | 'read' | 'write'): Promise<Driver> {
  await driver.start();
  const { bus: link } = driver.stats!() as { bus: { open: boolean; link: string; lastError: string | null } };
  if (!link.open) {
    await driver.stop();
    throw new Error(openFailure(link.link, link.lastError, what));
  }
  return driver;
}

/** The bus of `--bus ID` (from the config) or, for a scan, of `--port DEV` (ad hoc, no config needed). */
async function busOf(cmd: 'scan' | 'read' | 'write', flags: Flags, config: () => Promise<GatewayConfig | undefined>): Promise<BusConfig | undefined> {
  const busId = flags.get('bus');
  const port = flags.get('port');
  if (busId !== undefined && port !== undefined) throw new UsageError('give --bus (a bus of the config) or --port (a serial port), not both');
  const serial = SERIAL_FLAGS.filter((k) => flags.has(k));
  if (port === undefined && serial.length > 0) throw new UsageError(`--${serial[0]!} goes with --port; a --bus has its settings in the config`);
  if (port !== undefined) {
    if (cmd !== 'scan') throw new UsageError(`--port is for scan (and probe); ${cmd} takes --bus, a bus of the config`);
    const int = (k: string): number | undefined => (flags.has(k) ? intFlag(flags, k) : undefined);
    return adhocRtuBus({ port, baud: int('baud'), parity: flags.get('parity'), stopBits: int('stop-bits'), dataBits: int('data-bits') }).bus;
  }
  if (!busId) throw new UsageError(cmd === 'scan' ? '--bus or --port is required' : '--bus is required');
  const loaded = await config();
  if (!loaded) return undefined;
  const busConfig = loaded.buses.find((b) => b.id === busId);
  if (!busConfig) throw new UsageError(`unknown bus "${busId}" (buses: ${loaded.buses.map((b) => b.id).join(', ') || 'none'})`);
  return busConfig;
}

function blockFrom(flags: Flags): ModbusPointBlock {
  const table = (flags.get('table') ?? 'holding') as ModbusPointBlock['table'];
  if (!['coil', 'discrete', 'input', 'holding'].includes(table)) throw new UsageError(`--table must be coil, discrete, input or holding`);
  const address = resolveAddress(/^\d+$/.test(flags.get('address') ?? '') && (flags.get('address') ?? '').length < 5 ? Number(flags.get('address')) : (flags.get('address') ?? ''), table);
  if (typeof address === 'string') throw new UsageError(flags.has('address') ? address : '--address is required');
  const block: ModbusPointBlock = {
    table, address,
    data_type: (flags.get('type') ?? (isBitTable(table) ? 'bool' : 'uint16')) as ModbusPointBlock['data_type'],
    word_order: flags.get('word-order') === 'little' ? 'little' : 'big',
    byte_order: flags.get('byte-order') === 'little' ? 'little' : 'big',
  };
  if (flags.has('length')) block.length = intFlag(flags, 'length');
  if (flags.has('bit')) block.bit = intFlag(flags, 'bit');
  const problems = blockProblems(block);
  if (problems.length > 0) throw new UsageError(problems.map((p) => `--${p.key.replace('data_type', 'type')}: ${p.message}`).join('; '));
  return block;
}

/**
 * Runs one command. `config` loads the config file (undefined back: it is invalid, its problems already
 * printed): only a `--bus` needs it, so `scan --port` runs on a board with no config yet.
 */
export async function runModbusCommand(cmd: 'scan' | 'read' | 'write', args: string[], config: () => Promise<GatewayConfig | undefined>, out: (line: string) => void): Promise<number> {
  let driver: Driver | null = null;
  try {
    const flags = parseFlags(args);
    const busConfig = await busOf(cmd, flags, config);
    if (!busConfig) return 2;
    if (cmd === 'scan') {
      const from = intFlag(flags, 'from', 1);
      const to = intFlag(flags, 'to', 247);
      if (from < 0 || to > 255 || from > to) throw new UsageError('--from/--to must satisfy 0 <= from <= to <= 255');
      // A short timeout: a scan of 247 ids at the bus's 300 ms would take over a minute.
      driver = await open(oneOffDriver(busConfig, [], flags.has('timeout') ? intFlag(flags, 'timeout') : Math.min((busConfig as ModbusRtuBusConfig).timeout, 200)), 'scan');
      return await scan(driver, from, to, out);
    }
    const unit = intFlag(flags, 'unit');
    const block = blockFrom(flags);
    if (cmd === 'write' && !flags.has('value')) throw new UsageError('--value is required');
    // The register as a one-point device of the bus, read or written through the driver like any other.
    const name = `${block.table}:${block.address}`;
    const point: PointConfig = { name, type: block.data_type === 'string' ? 'string' : 'float', access: 'RW', report: 'change', scale: 1, offset: 0, modbus: block };
    const device: ResolvedDevice = {
      config: { id: 'cli', model: 'cli', bus: busConfig.id, unit_id: unit, poll: 60_000 },
      model: { name: 'cli', points: [point] }, points: new Map([[name, point]]), ttl: 60_000,
    };
    const one = oneOffDriver(busConfig, [device]);
    // A value that does not fit is a usage error, found before the port is opened.
    if (cmd === 'write') one.check!('cli', [{ name, value: flags.get('value')! }]);
    driver = await open(one, cmd);
    if (cmd === 'write') {
      await driver.write('cli', [{ name, value: flags.get('value')! }]);
      out(`wrote ${flags.get('value')} to unit ${unit} ${block.table} ${block.address}`);
      return 0;
    }
    const values = await driver.read!('cli', [name]);
    const value = values[name];
    out(String(typeof value === 'boolean' ? (value ? 1 : 0) : value));
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (isGatewayError(err) && (err.code === 'CONFIG_INVALID' || err.code === 'INVALID_VALUE'))) {
      out(`error: ${(err as Error).message}`);
      return 2;
    }
    out(`error: ${(err as Error).message}`);
    return 1;
  } finally {
    await driver?.stop();
  }
}

async function scan(driver: Driver, from: number, to: number, out: (line: string) => void): Promise<number> {
  const found = await driver.scan!(from, to);
  for (const unit of found) out(`unit ${unit}: answered`);
  out(found.length > 0 ? `found ${found.length} unit(s): ${found.join(', ')}` : `no unit answered between ${from} and ${to}`);
  return found.length > 0 ? 0 : 1;
}
