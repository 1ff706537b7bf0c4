/**
 * `shadowgate scan|read|write` for Modbus buses: one-off I/O through the same bus owner, codec and
 * writer as the daemon, without it. Exit codes: 0 done, 1 the device did not answer / refused,
 * 2 usage or config error. (Do not run it while the daemon holds the same serial port.)
 */
import { parseArgs } from 'node:util';
import type { BusConfig, GatewayConfig, ModbusPointBlock, ModbusRtuBusConfig } from '../config/types.js';
import { isGatewayError } from '../core/errors.js';
import { resolveAddress } from '../protocol/modbus/address.js';
import { blockProblems } from '../protocol/modbus/block-check.js';
import { decodeBit, decodeRegisters, isBitTable, pointWidth } from '../protocol/modbus/codec.js';
import { BusOwner, PRIORITY } from '../drivers/modbus/bus-owner.js';
import type { ModbusPoint } from '../drivers/modbus/device-plan.js';
import { modbusLink, scanUnits } from '../drivers/modbus/link.js';
import { READ_FC } from '../drivers/modbus/transport.js';
import { executeWrites, planWrites } from '../drivers/modbus/writer.js';
import { silentLogger } from '../util/logger.js';

class UsageError extends Error {}

const FLAGS = {
  bus: { type: 'string' }, unit: { type: 'string' }, table: { type: 'string' }, address: { type: 'string' },
  type: { type: 'string' }, value: { type: 'string' }, length: { type: 'string' }, bit: { type: 'string' },
  'word-order': { type: 'string' }, 'byte-order': { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
  timeout: { type: 'string' }, config: { type: 'string', short: 'c' },
} as const;

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

function owner(bus: BusConfig, timeoutOverride?: number): BusOwner {
  if (bus.driver !== 'modbus-rtu' && bus.driver !== 'modbus-tcp') throw new UsageError(`bus ${bus.id} is a ${bus.driver} bus, not modbus-rtu or modbus-tcp`);
  const link = modbusLink(bus);
  // One-off commands: no reopen loop, no bus-wide reopen after timeouts (a scan times out on purpose).
  return new BusOwner(link.transport, {
    ...link.owner, busId: bus.id, timeoutMs: timeoutOverride ?? link.owner.timeoutMs,
    reopenMinMs: 60_000, reopenMaxMs: 60_000, reopenAfterTimeouts: Infinity, log: silentLogger,
  });
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

export async function runModbusCommand(cmd: 'scan' | 'read' | 'write', args: string[], config: GatewayConfig, out: (line: string) => void): Promise<number> {
  let bus: BusOwner | null = null;
  try {
    const flags = parseFlags(args);
    const busId = flags.get('bus');
    if (!busId) throw new UsageError('--bus is required');
    const busConfig = config.buses.find((b) => b.id === busId);
    if (!busConfig) throw new UsageError(`unknown bus "${busId}" (buses: ${config.buses.map((b) => b.id).join(', ') || 'none'})`);
    if (cmd === 'scan') {
      const from = intFlag(flags, 'from', 1);
      const to = intFlag(flags, 'to', 247);
      if (from < 0 || to > 255 || from > to) throw new UsageError('--from/--to must satisfy 0 <= from <= to <= 255');
      // A short timeout: a scan of 247 ids at the bus's 300 ms would take over a minute.
      bus = owner(busConfig, flags.has('timeout') ? intFlag(flags, 'timeout') : Math.min((busConfig as ModbusRtuBusConfig).timeout, 200));
      await bus.start();
      if (!bus.open) throw new Error(`cannot open ${bus.label}: ${String(bus.totals.lastError)}`);
      return await scan(bus, from, to, out);
    }
    const unit = intFlag(flags, 'unit');
    const block = blockFrom(flags);
    const point: ModbusPoint = { name: `${block.table}:${block.address}`, block, width: pointWidth(block), access: 'RW', pollMs: 0 };
    if (cmd === 'write' && !flags.has('value')) throw new UsageError('--value is required');
    const ops = cmd === 'write' ? planWrites([{ point, value: flags.get('value')! }]) : [];
    bus = owner(busConfig);
    await bus.start();
    if (!bus.open) throw new Error(`cannot open ${bus.label}: ${String(bus.totals.lastError)}`);
    if (cmd === 'write') {
      await bus.enqueue(PRIORITY.write, (io) => executeWrites(io, unit, ops, (busConfig as ModbusRtuBusConfig).retries));
      out(`wrote ${flags.get('value')} to unit ${unit} ${block.table} ${block.address}`);
      return 0;
    }
    const data = (await bus.enqueue(PRIORITY.read, (io) => io.request(unit, { fc: READ_FC[block.table], address: block.address, count: point.width }, (busConfig as ModbusRtuBusConfig).retries))) as (number | boolean)[];
    const value = isBitTable(block.table) ? decodeBit(data[0] ?? false) : decodeRegisters(block, data as number[], 0);
    out(String(value));
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (isGatewayError(err) && (err.code === 'CONFIG_INVALID' || err.code === 'INVALID_VALUE'))) {
      out(`error: ${(err as Error).message}`);
      return 2;
    }
    out(`error: ${(err as Error).message}`);
    return 1;
  } finally {
    await bus?.stop();
  }
}

async function scan(bus: BusOwner, from: number, to: number, out: (line: string) => void): Promise<number> {
  const found = await scanUnits(bus, from, to, (unit, how) => out(`unit ${unit}: ${how}`));
  out(found.length > 0 ? `found ${found.length} unit(s): ${found.join(', ')}` : `no unit answered between ${from} and ${to}`);
  return found.length > 0 ? 0 : 1;
}
