/**
 * Which serial settings the doctor tries, most likely first, and how long it waits at each. Pure.
 *
 * The order is what installed RS-485 devices ship with: 9600 and 19200 cover most meters and sensors, 8N1
 * is the Modbus default of most vendors and 8E1 the spec's default (Modbus over serial line §2.5.1), so
 * those four come first; then the other rates with 8N1/8E1, then the rarer 8O1 and 8N2 at every rate.
 */
import type { DoctorOptions, LineSettings } from '../../../protocol/modbus/doctor-types.js';

/** Common rates, most likely first. */
export const COMMON_BAUDS = [9600, 19200, 38400, 4800, 2400, 115200] as const;

type Frame = Pick<LineSettings, 'parity' | 'stop_bits'>;
const COMMON_FRAMES: readonly Frame[] = [
  { parity: 'none', stop_bits: 1 }, { parity: 'even', stop_bits: 1 }, { parity: 'odd', stop_bits: 1 }, { parity: 'none', stop_bits: 2 },
];
/** How many of COMMON_FRAMES are likely (tried at every rate before the rest). */
const LIKELY_FRAMES = 2;
/** How many of COMMON_BAUDS are likely (their likely frames first of all). */
const LIKELY_BAUDS = 2;

const setting = (baud: number, frame: Frame): LineSettings => ({ baud_rate: baud, parity: frame.parity, data_bits: 8, stop_bits: frame.stop_bits });
const key = (s: LineSettings): string => `${s.baud_rate} ${s.parity} ${s.stop_bits}`;

/** "19200 8O1" */
export const describeSetting = (s: LineSettings): string => `${s.baud_rate} ${s.data_bits}${s.parity.charAt(0).toUpperCase()}${s.stop_bits}`;

/**
 * The settings to try, in order. A value given (not `auto`) is the only one tried for its field, even one
 * outside the common lists. `first` (a configured bus's setting, a model's factory setting) goes first
 * when it fits the given values.
 */
export function candidateSettings(options: Pick<DoctorOptions, 'baud' | 'parity' | 'stopBits'>, first?: LineSettings): LineSettings[] {
  const bauds = options.baud === 'auto' ? [...COMMON_BAUDS] : [options.baud];
  const frames = COMMON_FRAMES.filter((f) => (options.parity === 'auto' || f.parity === options.parity) && (options.stopBits === 'auto' || f.stop_bits === options.stopBits));
  // A frame given that is not among the common ones (8E2, 8O2) is still tried.
  if (frames.length === 0 && options.parity !== 'auto' && options.stopBits !== 'auto') frames.push({ parity: options.parity, stop_bits: options.stopBits });
  const ordered: LineSettings[] = [];
  const add = (s: LineSettings): void => { if (!ordered.some((o) => key(o) === key(s))) ordered.push(s); };
  if (first && bauds.includes(first.baud_rate) && frames.some((f) => f.parity === first.parity && f.stop_bits === first.stop_bits)) add({ ...first, data_bits: 8 });
  const likely = frames.filter((f) => COMMON_FRAMES.indexOf(f) < LIKELY_FRAMES);
  for (const baud of bauds.slice(0, LIKELY_BAUDS)) for (const f of likely) add(setting(baud, f));
  for (const baud of bauds) for (const f of likely) add(setting(baud, f));
  for (const baud of bauds) for (const f of frames) add(setting(baud, f));
  return ordered;
}

/** Bits on the wire per character: start, 8 data, parity, stop. */
export const charBits = (s: LineSettings): number => 1 + s.data_bits + (s.parity === 'none' ? 0 : 1) + s.stop_bits;

/**
 * How long to wait for one answer: the request's and the longest answer's wire time, plus a device's turn-
 * around (`marginMs`: most answer within 10-20 ms; 50 ms leaves room for a slow one without making a scan
 * of 247 ids at 9600 take over 20 s).
 */
export function answerTimeoutMs(s: LineSettings, requestBytes: number, answerBytes: number, marginMs = 50): number {
  return Math.ceil(((requestBytes + answerBytes) * charBits(s) * 1000) / s.baud_rate) + marginMs;
}
