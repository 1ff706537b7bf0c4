/**
 * `shadowgate doctor --port DEV`: what is on an RS-485 line nobody has configured yet — its serial settings
 * (tried, most likely first), every unit that answers, and which library model each one is — or, with
 * `--listen S`, what another master on the line asks and gets, sending nothing. Progress goes to stderr,
 * the report to stdout (text, or JSON with --json). Exit codes: 0 a unit answered (or, listening, a valid
 * frame was heard), 1 nothing did or the port did not open, 2 usage error.
 */
import { parseArgs } from 'node:util';
import { ConfigError, validateConfig } from '../config/load.js';
import { readModelLibrary } from '../config/models.js';
import type { ModelConfig } from '../config/types.js';
import { runDoctor } from '../drivers/modbus/doctor/doctor.js';
import { listenReport } from '../drivers/modbus/doctor/listen.js';
import { openSerialDoctorIo } from '../drivers/modbus/doctor/serial-io.js';
import { candidateSettings, describeSetting } from '../drivers/modbus/doctor/settings.js';
import type { DoctorOptions, DoctorProgress, DoctorReport, LineSettings } from '../protocol/modbus/doctor-types.js';
import { openFailure } from './serial-port.js';

export const DOCTOR_USAGE = `usage: shadowgate doctor --port /dev/ttyUSB0 [--baud auto|N] [--parity auto|none|even|odd] [--stop-bits auto|1|2]
                        [--from 1 --to 247] [--listen SECONDS] [--json]`;

class UsageError extends Error {}

const FLAGS = {
  port: { type: 'string' }, baud: { type: 'string' }, parity: { type: 'string' }, 'stop-bits': { type: 'string' },
  from: { type: 'string' }, to: { type: 'string' }, listen: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
} as const;

export interface DoctorOutput {
  out(line: string): void;
  /** Progress and errors. `progress` lines are rewritten in place on a terminal. */
  err(line: string): void;
  progress?(line: string): void;
}

const whole = (text: string, flag: string, min: number, max: number): number => {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) throw new UsageError(`--${flag} must be a whole number ${min}..${max}, not "${text}"`);
  return n;
};

export function parseDoctorFlags(args: readonly string[]): { port: string; options: DoctorOptions; json: boolean } {
  let values;
  try {
    ({ values } = parseArgs({ args: [...args], options: FLAGS, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (!values.port) throw new UsageError('--port is required');
  const baud = values.baud ?? 'auto';
  const parity = values.parity ?? 'auto';
  const stop = values['stop-bits'] ?? 'auto';
  if (!['auto', 'none', 'even', 'odd'].includes(parity)) throw new UsageError(`--parity must be auto, none, even or odd, not "${parity}"`);
  if (!['auto', '1', '2'].includes(stop)) throw new UsageError(`--stop-bits must be auto, 1 or 2, not "${stop}"`);
  const options: DoctorOptions = {
    baud: baud === 'auto' ? 'auto' : whole(baud, 'baud', 50, 4_000_000),
    parity: parity as DoctorOptions['parity'],
    stopBits: stop === 'auto' ? 'auto' : (Number(stop) as 1 | 2),
    from: whole(values.from ?? '1', 'from', 1, 247),
    to: whole(values.to ?? '247', 'to', 1, 247),
    listenS: values.listen === undefined ? 0 : whole(values.listen, 'listen', 1, 3600),
  };
  if (options.from > options.to) throw new UsageError('--from must not be above --to');
  return { port: values.port, options, json: values.json === true };
}

/** The library's Modbus models, each validated on its own: one broken file costs only its own model. */
export function libraryModels(): { models: ModelConfig[]; problems: string[] } {
  const library = readModelLibrary();
  const models: ModelConfig[] = [];
  const problems = [...library.problems];
  for (const [name, entry] of Object.entries(library.models)) {
    try {
      const model = validateConfig({ buses: [] }, { models: { [name]: entry.raw } }).models[name];
      if (model?.points.some((p) => p.modbus)) models.push(model);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      problems.push(`${entry.label}: not used (${e.problems[0] ?? 'invalid'})`);
    }
  }
  return { models, problems };
}

export function formatDoctor(report: DoctorReport): string[] {
  const lines: string[] = [];
  lines.push(report.line ? `line: ${describeSetting(report.line)}${report.line.echo ? ', adapter echoes' : ''}` : 'line: no setting gave a valid answer');
  for (const u of report.units) {
    lines.push(`unit ${u.unit}: answers ${u.answers === 'data' ? 'with data' : 'with an exception at register 0'}`);
    if (u.candidates.length === 0) lines.push('  no library model fits');
    for (const c of u.candidates) lines.push(`  ${c.model}  ${Math.round(c.score * 100)} %  ${c.why}`);
  }
  for (const t of report.traffic) lines.push(`heard unit ${t.unit}: functions ${t.functions.join(', ')}, ${t.answered} answered, ${t.exceptions} exceptions, ${t.unanswered} unanswered`);
  for (const h of report.hints) lines.push(`hint: ${h}`);
  lines.push(`doctor took ${(report.elapsed_ms / 1000).toFixed(1)} s, sent ${report.sent_bytes} bytes`);
  return lines;
}

/** Runs the command; returns the exit code. */
export async function runDoctorCommand(args: readonly string[], output: DoctorOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseDoctorFlags(args);
  } catch (e) {
    output.err(`error: ${(e as Error).message}\n${DOCTOR_USAGE}`);
    return 2;
  }
  const { port, options, json } = parsed;
  const progress = (p: DoctorProgress): void => output.progress?.(`[${p.phase}] ${Math.round(p.done * 100)} % ${p.note}`);
  try {
    let report: DoctorReport;
    if (options.listenS > 0) report = await listenReport(port, candidateSettings(options), options.listenS, progress);
    else {
      const { models, problems } = libraryModels();
      for (const p of problems) output.err(`warning: ${p}`);
      const open = (settings: LineSettings): ReturnType<typeof openSerialDoctorIo> => openSerialDoctorIo(port, settings).catch((e: Error) => {
        throw new Error(openFailure(port, e.message, 'doctor'));
      });
      report = await runDoctor({ open }, options, models, progress);
    }
    output.progress?.('');
    if (json) output.out(JSON.stringify(report));
    else for (const line of formatDoctor(report)) output.out(line);
    return report.units.length > 0 || (options.listenS > 0 && report.line !== null) ? 0 : 1;
  } catch (e) {
    const message = (e as Error).message;
    output.progress?.('');
    if (json) output.out(JSON.stringify({ error: message }));
    output.err(`error: ${message}`);
    return 1;
  }
}
