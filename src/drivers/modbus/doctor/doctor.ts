/**
 * The bus doctor's core, free of any transport: find the line's settings (when the line is ours to open
 * at each setting), every unit that answers, and which library model each one is. The CLI, and the REST
 * path's settings search on a bus whose line it took, hand it an opener that opens the serial port at a
 * setting; the REST path at a bus's own settings hands it a DoctorIo bound to the bus (no search, the polls
 * keep their share of the line).
 */
import type { ModelConfig } from '../../../config/types.js';
import { encodeRequest } from '../../../protocol/modbus/client-pdu.js';
import { scoreModels } from './identify.js';
import { answerTimeoutMs, candidateSettings, describeSetting } from './settings.js';
import type { DoctorIo, DoctorOptions, DoctorProgress, DoctorReport, DoctorUnit, LineSettings } from '../../../protocol/modbus/doctor-types.js';
import { UnitReader } from './unit-reads.js';

/** A DoctorIo the doctor opened itself, closed when it moves on. */
export interface OwnedIo extends DoctorIo {
  close(): Promise<void>;
}

/** How the doctor reaches the line: an open one at known settings, or an opener it calls per setting tried. */
export type DoctorLink =
  | { io: DoctorIo; settings: LineSettings }
  | { open: (settings: LineSettings) => Promise<OwnedIo>; first?: LineSettings };

export interface DoctorDeps {
  /** ms, monotonic; injectable so the report's elapsed time is testable. */
  now?: () => number;
  /** Extra wait per answer on top of its wire time (settings.ts answerTimeoutMs). */
  marginMs?: number;
}

/** Unit ids tried at each setting while searching: factory defaults first (1), then the usual first few, then 247. */
const SETTINGS_UNITS = [1, 2, 3, 4, 5, 10, 247];
/** The unit scan's probe: FC 3, one register at 0 (an exception proves the unit as well as data). */
const SCAN_PDU = encodeRequest({ fc: 3, address: 0, count: 1 });
const SCAN_ANSWER_BYTES = 7;
/**
 * The least wait when a unit that answered late is asked again: it is known to be there, so a long wait costs
 * one unit's time, not the scan's (some meters take hundreds of ms; a busy machine adds its own).
 */
const LATE_WAIT_MS = 1000;

type Found = Map<number, DoctorUnit['answers']>;

/** Asks `unit` the scan probe; records what proved it. Returns the bytes of garbage heard (0: none). */
async function probeUnit(io: DoctorIo, unit: number, timeoutMs: number, found: Found): Promise<number> {
  const got = await io.ask(unit, SCAN_PDU, timeoutMs);
  if (got.kind === 'answer') found.set(unit, 'data');
  else if (got.kind === 'exception') found.set(unit, 'exception');
  return got.kind === 'garbage' ? got.bytes : 0;
}

/** Tries each candidate setting until one yields a valid answer; the io at that setting stays open. */
async function searchSettings(link: Extract<DoctorLink, { open: unknown }>, options: DoctorOptions, deps: Required<DoctorDeps>, found: Found, hints: string[], tally: { sent: number }, progress: (p: DoctorProgress) => void): Promise<{ io: OwnedIo; settings: LineSettings } | null> {
  const candidates = candidateSettings(options, link.first);
  const units = SETTINGS_UNITS.filter((u) => u >= options.from && u <= options.to);
  if (units.length === 0) units.push(options.from);
  const garbled: string[] = [];
  for (const [i, settings] of candidates.entries()) {
    progress({ phase: 'settings', done: i / candidates.length, note: `trying ${describeSetting(settings)}` });
    const io = await link.open(settings);
    const timeout = answerTimeoutMs(settings, 8, SCAN_ANSWER_BYTES, deps.marginMs);
    let garbage = 0;
    // A good frame from a unit proves the setting, also one that came after its own short wait, in the next ask
    // (a slow device, or a busy machine): the unit scan asks such units again with a longer wait.
    const proven = (): boolean => found.size > 0 || (io.lateUnits?.().length ?? 0) > 0;
    for (const unit of units) {
      garbage += await probeUnit(io, unit, timeout, found);
      if (proven()) break;
    }
    if (proven()) {
      if (garbled.length > 0) hints.push(garbageHint(garbled));
      return { io, settings };
    }
    if (garbage > 0) garbled.push(describeSetting(settings));
    tally.sent += io.sentBytes();
    await io.close();
  }
  if (garbled.length > 0) hints.push(garbageHint(garbled));
  return null;
}

const garbageHint = (settings: readonly string[]): string =>
  `bytes came back at ${settings.join(', ')} but no valid frame: something transmits at another baud rate or parity, or A and B are swapped`;

function scanHints(found: Found, garbage: number, echo: boolean, options: DoctorOptions): string[] {
  const hints: string[] = [];
  if (echo) hints.push('the adapter echoes what it sends (a converter without echo suppression): set the bus option "echo": true');
  if (garbage > 0) hints.push(`${garbage} bytes during the unit scan were no valid frame: another master on the line, collisions or noise`);
  if (found.size === 0) hints.push(`no unit between ${options.from} and ${options.to} answered at this setting`);
  return hints;
}

/**
 * Runs the doctor. With `{ open }` the settings are searched (options' baud/parity/stop bits, `auto` for
 * every common one); with `{ io, settings }` the line is used as it is. Never throws for what the line did;
 * an opener's error (a port that does not open) is thrown to the caller.
 */
export async function runDoctor(link: DoctorLink, options: DoctorOptions, models: readonly ModelConfig[], onProgress: (p: DoctorProgress) => void = () => {}, deps: DoctorDeps = {}): Promise<DoctorReport> {
  const d: Required<DoctorDeps> = { now: deps.now ?? (() => performance.now()), marginMs: deps.marginMs ?? 50 };
  const started = d.now();
  const found: Found = new Map();
  const hints: string[] = [];
  // Bytes sent at the settings tried and left behind.
  const tally = { sent: 0 };
  let line: { io: DoctorIo; settings: LineSettings; owned?: OwnedIo } | null;
  if ('io' in link) line = link;
  else {
    const searched = await searchSettings(link, options, d, found, hints, tally, onProgress);
    line = searched && { io: searched.io, settings: searched.settings, owned: searched.io };
  }
  if (!line) {
    hints.push(`no valid answer at any of the settings tried (${candidateSettings(options, 'open' in link ? link.first : undefined).length}): check the wiring (A/B), the termination and that the devices are powered`);
    return { line: null, units: [], traffic: [], hints, sent_bytes: tally.sent, elapsed_ms: Math.round(d.now() - started) };
  }
  const { io, settings } = line;
  try {
    const timeout = answerTimeoutMs(settings, 8, SCAN_ANSWER_BYTES, d.marginMs);
    let garbage = 0;
    const total = options.to - options.from + 1;
    for (let unit = options.from; unit <= options.to; unit++) {
      if (!found.has(unit)) garbage += await probeUnit(io, unit, timeout, found);
      onProgress({ phase: 'units', done: (unit - options.from + 1) / total, note: `unit ${unit}: ${found.size} found` });
    }
    // A unit slower than the short scan timeout answered into a later ask: it is there, ask it again slowly.
    for (const unit of io.lateUnits?.() ?? []) {
      if (found.has(unit) || unit < options.from || unit > options.to) continue;
      await probeUnit(io, unit, Math.max(4 * timeout, LATE_WAIT_MS), found);
    }
    hints.push(...scanHints(found, garbage, io.echo?.() ?? false, options));
    // Units that answered late answer the identity reads late too: give those reads more time.
    const margin = ((io.lateUnits?.().length ?? 0) > 0 ? 8 : 2) * d.marginMs;
    const units: DoctorUnit[] = [];
    const ids = [...found.keys()].sort((a, b) => a - b);
    for (const [i, unit] of ids.entries()) {
      onProgress({ phase: 'identity', done: i / ids.length, note: `identifying unit ${unit}` });
      const reader = new UnitReader(io, unit, (answerBytes) => answerTimeoutMs(settings, 8, answerBytes, margin));
      const candidates = await scoreModels(reader, models, await reader.identity());
      units.push({ unit, answers: found.get(unit)!, candidates });
    }
    onProgress({ phase: 'identity', done: 1, note: `${units.length} unit(s) identified` });
    return { line: { ...settings, echo: io.echo?.() ?? false }, units, traffic: [], hints, sent_bytes: tally.sent + io.sentBytes(), elapsed_ms: Math.round(d.now() - started) };
  } finally {
    await line.owned?.close();
  }
}
