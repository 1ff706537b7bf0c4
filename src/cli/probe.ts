/**
 * `shadowgate probe`: one read of every readable point of one Modbus device through the bus's own driver
 * (one-off mode, like scan/read/write), the values with their units, and a flag on each implausible one
 * (core/plausibility.ts) — so an integrator knows in one command whether the model, the unit id and the
 * wiring are right. The bus comes from the config (`--bus`) or from the command line (`--port`, before any
 * config exists). Exit codes: 0 every point read and plausible, 1 a point failed or is implausible or the
 * device did not answer, 2 usage or config error (nothing sent).
 */
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigChecker } from '../config/load.js';
import { readModelLibrary } from '../config/models.js';
import type { BusConfig, GatewayConfig, ModbusRtuBusConfig, ModelConfig, ResolvedDevice } from '../config/types.js';
import { systemClock } from '../core/clock.js';
import { isGatewayError } from '../core/errors.js';
import { classifyPoints, summarize, type ProbePoint, type ProbeSummary } from '../core/point-report.js';
import { createModbusRtuDriverWith } from '../drivers/modbus-rtu.js';
import { createModbusTcpDriverWith } from '../drivers/modbus-tcp.js';
import type { Driver, DriverContext } from '../drivers/types.js';
import { silentLogger } from '../util/logger.js';
import { adhocRtuBus, openFailure, serialOnly } from './serial-port.js';

export const PROBE_USAGE = `usage: shadowgate probe --bus ID --unit N --model NAME [--config FILE] [--json] [--timeout MS]
       shadowgate probe --port /dev/ttyUSB0 [--baud 9600 --parity none|even|odd --stop-bits 1|2 --data-bits 8]
                        --unit N --model NAME [--json] [--timeout MS]`;

class UsageError extends Error {
  /** Also print the usage text (a flag is missing or unknown). */
  constructor(message: string, readonly showUsage = false) {
    super(message);
  }
}

const FLAGS = {
  bus: { type: 'string' }, unit: { type: 'string' }, model: { type: 'string' }, config: { type: 'string', short: 'c' },
  json: { type: 'boolean' }, port: { type: 'string' }, baud: { type: 'string' }, parity: { type: 'string' },
  'stop-bits': { type: 'string' }, 'data-bits': { type: 'string' }, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const;

export interface ProbeHooks {
  /** The config of `--config FILE` (undefined: the default file); undefined back when it is invalid (problems already printed). */
  loadConfig(file: string | undefined): Promise<GatewayConfig | undefined>;
  /** Driver checks for the ad-hoc config of `--port`. */
  checkers?: readonly ConfigChecker[];
}

export interface ProbeReport {
  /** The config's bus id; null for a `--port` bus. */
  bus: string | null;
  link: string;
  unit: number;
  model: string;
  points: ProbePoint[];
  summary: ProbeSummary;
  /** False when every request timed out. */
  answered: boolean;
  /** The no-answer explanation (with the model's factory serial settings when it declares them). */
  message?: string;
}

function parseFlags(args: readonly string[]): Map<string, string | boolean> {
  try {
    const { values } = parseArgs({ args: [...args], options: FLAGS, strict: true, allowPositionals: false });
    return new Map(Object.entries(values).filter((e): e is [string, string | boolean] => e[1] !== undefined));
  } catch (err) {
    throw new UsageError((err as Error).message, true);
  }
}

function str(flags: Map<string, string | boolean>, key: string): string | undefined {
  const v = flags.get(key);
  return typeof v === 'string' ? v : undefined;
}

function int(flags: Map<string, string | boolean>, key: string): number | undefined {
  const text = str(flags, key);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) throw new UsageError(`--${key} must be a whole number, not "${text}"`);
  return n;
}

/** "9600 8N1" */
function lineSettings(s: { baud_rate?: unknown; data_bits?: unknown; parity?: unknown; stop_bits?: unknown }): string {
  const parity = typeof s.parity === 'string' ? s.parity.charAt(0).toUpperCase() : 'N';
  return `${String(s.baud_rate ?? '?')} ${String(s.data_bits ?? 8)}${parity}${String(s.stop_bits ?? 1)}`;
}

/** The link as the no-answer message names it: "/dev/ttyUSB0 at 9600 8N1" or "host:502". */
function describeLink(bus: BusConfig): string {
  if (bus.driver === 'modbus-rtu') return `${String(bus.port)} at ${lineSettings(bus as ModbusRtuBusConfig)}`;
  return `${String(bus.host)}:${String(bus.port)}`;
}

/** The model's factory serial settings (model-level `serial`, docs/model-fields.md), as text; undefined when it declares none. */
export function factorySetting(model: ModelConfig): string | undefined {
  const serial = model.serial;
  if (!serial) return undefined;
  const parts: string[] = [];
  if (serial.baud_rate !== undefined) parts.push(lineSettings(serial));
  if (serial.unit_id !== undefined) parts.push(`unit ${String(serial.unit_id)}`);
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/**
 * The bus and the model. `--bus`: a bus of the config file (validated whole, like scan/read/write). `--port`: an
 * ad-hoc modbus-rtu bus validated like a config (schema defaults apply), with the models of `--config` when
 * given, else the one library model asked for — a broken unrelated file in board/models does not stop a probe.
 */
async function busAndModel(flags: Map<string, string | boolean>, modelName: string, hooks: ProbeHooks, err: (line: string) => void): Promise<{ bus: BusConfig; adhoc: boolean; model: ModelConfig } | undefined> {
  const busId = str(flags, 'bus');
  const port = str(flags, 'port');
  if (busId !== undefined && port !== undefined) throw new UsageError('give --bus (a bus of the config) or --port (a serial port), not both');
  if (busId === undefined && port === undefined) throw new UsageError('--bus or --port is required', true);
  const serialFlags = ['baud', 'parity', 'stop-bits', 'data-bits'].filter((k) => flags.has(k));
  if (busId !== undefined && serialFlags.length > 0) throw new UsageError(`--${serialFlags[0]!} goes with --port; a --bus has its settings in the config`);
  const withConfig = port === undefined || flags.has('config');
  const config = withConfig ? await hooks.loadConfig(str(flags, 'config')) : undefined;
  if (withConfig && !config) return undefined;
  if (busId !== undefined) {
    const bus = config!.buses.find((b) => b.id === busId);
    if (!bus) throw new UsageError(`unknown bus "${busId}" (buses: ${config!.buses.map((b) => b.id).join(', ') || 'none'})`);
    if (bus.driver !== 'modbus-rtu' && bus.driver !== 'modbus-tcp') throw new UsageError(`bus ${bus.id} is a ${bus.driver} bus, not modbus-rtu or modbus-tcp`);
    return { bus, adhoc: false, model: findModel(config!.models, modelName) };
  }
  let models: Record<string, unknown> = {};
  if (!config) {
    const library = readModelLibrary();
    const entry = Object.hasOwn(library.models, modelName) ? library.models[modelName] : undefined;
    if (!entry) {
      const unreadable = library.problems.find((p) => p.startsWith(`board/models/${modelName}.json:`));
      if (unreadable) throw new UsageError(unreadable);
      const hasModbus = (raw: unknown): boolean => isObj(raw) && Array.isArray(raw.points) && raw.points.some((p) => isObj(p) && p.modbus !== undefined);
      throw unknownModel(modelName, Object.keys(library.models).filter((n) => hasModbus(library.models[n]!.raw)));
    }
    models = { [modelName]: entry.raw };
  }
  try {
    const adhoc = adhocRtuBus({
      port: port!, baud: int(flags, 'baud'), parity: str(flags, 'parity'), stopBits: int(flags, 'stop-bits'), dataBits: int(flags, 'data-bits'),
    }, models, hooks.checkers ?? []);
    return { bus: adhoc.bus, adhoc: true, model: findModel(config?.models ?? adhoc.models, modelName) };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    err(`error: ${serialOnly(e) ? 'invalid serial settings' : 'invalid configuration'}\n${e.problems.map((p) => `  ${p}`).join('\n')}`);
    return undefined;
  }
}

function unknownModel(name: string, modbusModels: string[]): UsageError {
  const sorted = [...modbusModels].sort();
  const tokens = name.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length >= 3);
  const near = sorted.filter((n) => tokens.some((t) => n.toLowerCase().includes(t)));
  return new UsageError(`unknown model "${name}" (${near.length > 0 ? 'did you mean' : 'Modbus models'}: ${(near.length > 0 ? near : sorted).join(', ') || 'none'})`);
}

function findModel(models: Record<string, ModelConfig>, name: string): ModelConfig {
  const model = Object.hasOwn(models, name) ? models[name] : undefined;
  if (model) return model;
  throw unknownModel(name, Object.keys(models).filter((n) => models[n]!.points.some((p) => p.modbus)));
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The bus's own driver in one-off mode (no polling), with the probed device so its per-unit counters show. */
function oneOffDriver(bus: BusConfig, device: ResolvedDevice, timeoutMs: number | undefined): Driver {
  const cfg = timeoutMs === undefined ? bus : { ...bus, timeout: timeoutMs };
  const ctx: DriverContext = { sink: { data() {}, failure() {} }, clock: systemClock, log: silentLogger, lastValue: () => null, lastWrite: () => null };
  const create = bus.driver === 'modbus-rtu' ? createModbusRtuDriverWith : createModbusTcpDriverWith;
  return create(cfg, [device], ctx, { oneOff: true });
}

/** Whether every request to the unit timed out (nothing at all came back). */
function noAnswer(driver: Driver, deviceId: string, answeredAny: boolean, errors: Record<string, string>): boolean {
  if (answeredAny) return false;
  const stats = driver.stats?.() as { devices?: Record<string, { requests?: number; timeouts?: number }> } | undefined;
  const unit = stats?.devices?.[deviceId];
  if (unit && typeof unit.requests === 'number' && typeof unit.timeouts === 'number') return unit.requests > 0 && unit.timeouts === unit.requests;
  const messages = Object.values(errors);
  return messages.length > 0 && messages.every((m) => /^timeout/.test(m));
}

function valueText(p: ProbePoint): string {
  if (p.error !== undefined) return `error: ${p.error}`;
  if (p.value === null) return `null (${p.reason ?? 'not available'})`;
  return p.unit && typeof p.value === 'number' ? `${p.value} ${p.unit}` : String(p.value);
}

/**
 * The text report: a header, one line per point (name, value with unit, `! reason` when implausible), the
 * summary; when the unit answered nothing, the no-answer explanation instead of the point lines.
 */
export function formatReport(report: ProbeReport): string[] {
  const lines = [`unit ${report.unit} on ${report.bus === null ? report.link : `bus ${report.bus} (${report.link})`}, model ${report.model}: ${report.points.length} readable points`];
  const nameWidth = Math.max(4, ...report.points.map((p) => p.name.length));
  const texts = report.points.map(valueText);
  // The flag column lines up behind the value texts (error texts are long and carry no flag).
  const valueWidth = Math.min(32, Math.max(5, ...texts.filter((_, i) => report.points[i]!.error === undefined).map((t) => t.length)));
  // No answer at all: the same timeout on every line would hide the one line that matters.
  if (!report.answered) return [...lines, `${report.points.length} points: no answer to any request`, report.message ?? ''];
  report.points.forEach((p, i) => {
    const flag = p.implausible !== undefined ? `  ! ${p.implausible}` : '';
    lines.push(`${p.name.padEnd(nameWidth)}  ${flag ? texts[i]!.padEnd(valueWidth) : texts[i]!}${flag}`);
  });
  const s = report.summary;
  lines.push(`${s.points} points: ${s.ok} ok, ${s.implausible} implausible, ${s.not_available} not available, ${s.failed} failed`);
  if (report.message) lines.push(report.message);
  return lines;
}

export async function runProbe(args: string[], hooks: ProbeHooks, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let driver: Driver | null = null;
  let json = false;
  try {
    const flags = parseFlags(args);
    json = flags.get('json') === true;
    if (flags.get('help') === true) {
      out(PROBE_USAGE);
      return 0;
    }
    const unit = int(flags, 'unit');
    if (unit === undefined) throw new UsageError('--unit is required', true);
    if (unit < 1 || unit > 247) throw new UsageError(`--unit must be 1..247, not ${unit}`);
    const modelName = str(flags, 'model');
    if (!modelName) throw new UsageError('--model is required', true);
    const timeoutMs = int(flags, 'timeout');
    if (timeoutMs !== undefined && (timeoutMs < 10 || timeoutMs > 60_000)) throw new UsageError('--timeout must be 10..60000 ms');
    const found = await busAndModel(flags, modelName, hooks, err);
    if (!found) return 2;
    const { bus, adhoc, model } = found;
    const noBlock = model.points.filter((p) => !p.modbus).map((p) => p.name);
    if (noBlock.length > 0) throw new UsageError(`model ${modelName} is not a Modbus model: no modbus block on ${noBlock.join(', ')}`);
    const device: ResolvedDevice = {
      config: { id: 'probe', model: modelName, bus: bus.id, unit_id: unit, poll: 60_000 },
      model, points: new Map(model.points.map((p) => [p.name, p])), ttl: 60_000,
    };
    driver = oneOffDriver(bus, device, timeoutMs);
    await driver.start();
    const { bus: link } = driver.stats!() as { bus: { open: boolean; link: string; lastError: string | null } };
    if (!link.open) throw new Error(openFailure(link.link, link.lastError, 'probe'));
    const { values: raw, errors } = await driver.probe!(device);
    const readable = model.points.filter((p) => p.access !== 'W');
    const points = classifyPoints(readable, raw, errors);
    const answered = !noAnswer(driver, device.config.id, Object.keys(raw).length > 0, errors);
    const report: ProbeReport = { bus: adhoc ? null : bus.id, link: describeLink(bus), unit, model: modelName, points, summary: summarize(points), answered };
    if (!answered) {
      const factory = factorySetting(model);
      report.message = `no answer from unit ${unit} on ${describeLink(bus)}` + (factory
        ? `; this model's factory setting is ${factory}`
        : ': check the unit id, the line settings and the A/B wiring');
    }
    if (json) out(JSON.stringify(report));
    else for (const line of formatReport(report)) out(line);
    const s = report.summary;
    return answered && s.failed === 0 && s.implausible === 0 ? 0 : 1;
  } catch (e) {
    const usage = e instanceof UsageError || (isGatewayError(e) && e.code === 'CONFIG_INVALID');
    const message = (e as Error).message;
    if (json && !usage) out(JSON.stringify({ error: message }));
    else err(`error: ${message}${e instanceof UsageError && e.showUsage ? `\n${PROBE_USAGE}` : ''}`);
    return usage ? 2 : 1;
  } finally {
    await driver?.stop();
  }
}
