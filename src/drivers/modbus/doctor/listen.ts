/**
 * The doctor's listening (`shadowgate doctor --listen S`): the port is opened read-only in effect — nothing
 * is ever written, so a line with another master on it is not disturbed — at each candidate setting in turn
 * for a slice of the time, until one hears frames with a good CRC (at a wrong baud or parity no CRC comes
 * out right); under that setting it listens out the rest of the time and maps the traffic (traffic.ts).
 */
import { SerialPort } from 'serialport';
import { TrafficMap } from './traffic.js';
import type { DoctorProgress, DoctorReport, LineSettings, TrafficUnit } from '../../../protocol/modbus/doctor-types.js';

/** At least this long per candidate: a master polling once a second is heard at least once. */
const MIN_SLICE_MS = 2500;
/** How late a chunk may be stamped when read through serialport's stream (the event loop, a USB adapter). */
const JITTER_MS = 3;

export interface ListenResult { line: LineSettings | null; traffic: TrafficUnit[]; hints: string[] }

const describe = (s: LineSettings): string => `${s.baud_rate} ${s.data_bits}${s.parity[0]!.toUpperCase()}${s.stop_bits}`;

/** Opens `path` at `settings`; bytes go to `onBytes` with when they were read. */
function openPort(path: string, settings: LineSettings, onBytes: (b: Buffer, at: number) => void): Promise<SerialPort> {
  return new Promise((resolve, reject) => {
    const port = new SerialPort({
      path, baudRate: settings.baud_rate, parity: settings.parity, dataBits: settings.data_bits, stopBits: settings.stop_bits, autoOpen: false,
    });
    port.on('data', (b: Buffer) => onBytes(b, performance.now()));
    port.on('error', () => {}); // a port that goes away ends the slice like silence would; the caller closes it
    port.open((err) => (err ? reject(err) : resolve(port)));
  });
}

const closePort = (port: SerialPort): Promise<void> => new Promise((resolve) => (port.isOpen ? port.close(() => resolve()) : resolve()));

/**
 * Listens until `untilMs` (performance.now()), or (`stopOnFrame`) until the first good frame; progress every
 * second. Resolves early if the port closes.
 */
function listenUntil(port: SerialPort, map: TrafficMap, untilMs: number, stopOnFrame: boolean, tick: () => void): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearInterval(timer);
      clearTimeout(end);
      port.off('close', done);
      resolve();
    };
    const timer = setInterval(() => {
      tick();
      if (stopOnFrame && map.heardFrames()) done();
    }, stopOnFrame ? 100 : 1000);
    const end = setTimeout(done, Math.max(0, untilMs - performance.now()));
    port.once('close', done);
  });
}

/**
 * Listens on `path` for `seconds` without sending a byte: the first candidate setting under which a frame with a
 * good CRC is heard is kept (null: none), and the traffic of the other master(s) heard under it is mapped.
 * `signal` ends it early (the gateway stops): the port open now closes and no other setting is tried.
 */
export async function listenLine(path: string, candidates: LineSettings[], seconds: number, onProgress?: (p: DoctorProgress) => void, signal?: AbortSignal): Promise<ListenResult> {
  const start = performance.now();
  const totalMs = Math.max(0, seconds) * 1000;
  const deadline = start + totalMs;
  const sliceMs = candidates.length > 1 ? Math.max(MIN_SLICE_MS, totalMs / candidates.length) : totalMs;
  const progress = (note: string): void => onProgress?.({ phase: 'listen', done: Math.min(1, (performance.now() - start) / Math.max(1, totalMs)), note });
  const tried: string[] = [];
  let garbled = 0;
  for (const [k, settings] of candidates.entries()) {
    if ((k > 0 && performance.now() >= deadline) || signal?.aborted) break;
    const map = new TrafficMap({ baudRate: settings.baud_rate, jitterMs: JITTER_MS });
    const port = await openPort(path, settings, (b, at) => map.push(b, at));
    const openedAt = performance.now();
    const abort = (): void => void closePort(port);
    signal?.addEventListener('abort', abort, { once: true });
    try {
      const note = (): void => progress(`listening at ${describe(settings)}: ${map.counts.requests} requests heard`);
      note();
      // Several candidates: this one's slice, cut short by the first good frame. One: all the time is its.
      if (candidates.length > 1) await listenUntil(port, map, Math.min(deadline, openedAt + sliceMs), true, note);
      if (candidates.length === 1 || map.heardFrames()) await listenUntil(port, map, deadline, false, note); // the port kept open: no byte missed
      tried.push(describe(settings));
      garbled += map.counts.garbledBytes;
      if (!map.heardFrames()) continue;
      const now = performance.now();
      const traffic = map.report(now - openedAt, now);
      onProgress?.({ phase: 'listen', done: 1, note: `${describe(settings)}: ${traffic.length} unit(s) heard` });
      return { line: settings, traffic, hints: map.hints(now) };
    } finally {
      signal?.removeEventListener('abort', abort);
      await closePort(port);
    }
  }
  onProgress?.({ phase: 'listen', done: 1, note: 'no valid frame heard' });
  const why = garbled > 0
    ? `${garbled} byte(s) were heard but no frame with a good CRC at ${tried.join(', ')}: another baud rate or parity, or A and B swapped.`
    : `nothing was heard at ${tried.join(', ')}: no other master polls this line, or the adapter is not on the bus (wiring, termination).`;
  return { line: null, traffic: [], hints: [why] };
}

/** listenLine as the doctor's report: the line heard (an adapter's echo cannot be told without sending), the traffic, 0 bytes sent. */
export async function listenReport(path: string, candidates: LineSettings[], seconds: number, onProgress?: (p: DoctorProgress) => void, signal?: AbortSignal): Promise<DoctorReport> {
  const started = performance.now();
  const heard = await listenLine(path, candidates, seconds, onProgress, signal);
  return {
    line: heard.line && { ...heard.line, echo: false }, units: [], traffic: heard.traffic, hints: heard.hints, sent_bytes: 0,
    elapsed_ms: Math.round(performance.now() - started),
  };
}
