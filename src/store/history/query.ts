/**
 * The GET /api/v1/history and /history/aggregate handlers' logic: parameter checks with errors that
 * name the culprit, then the store query. The REST layer only wraps the result in the envelope.
 */
import { parseDuration } from '../../core/duration.js';
import { badRequest, unknownDevice, unknownPoint } from '../../core/errors.js';
import { AGG_FUNCTIONS, Buckets, type TimedValue, isAggFunction } from './buckets.js';
import { formatLocalMs, parseTimeText } from './time-text.js';
import type { HistoryStore } from './types.js';

export interface HistoryRow {
  /** Local time `YYYY-MM-DD HH:MM:SS.mmm`. */
  time: string;
  /** Epoch ms. */
  ts: number;
  value: number | string;
}

export type KnownPoint = (device: string, point: string) => 'ok' | 'unknown device' | 'unknown point';
export type HistoryParams = Record<string, string | undefined>;

/** Largest `limit` for raw queries (and its default: a day at 1 s is 86,400 samples). */
export const MAX_LIMIT = 100_000;
/** Most buckets one aggregate may return. */
export const MAX_BUCKETS = 100_000;
const DEFAULT_RANGE = 3_600_000;

/** A query string may repeat a key (`?start=a&start=b`): that is the user's error, named, never a crash. */
function single(query: HistoryParams): HistoryParams {
  for (const [key, v] of Object.entries(query)) {
    if (v !== undefined && typeof v !== 'string') throw badRequest(`${key} is given more than once`);
  }
  return query;
}

export async function historyQuery(store: HistoryStore, knownPoint: KnownPoint, raw: HistoryParams,
  now: number): Promise<HistoryRow[]> {
  const query = single(raw);
  const { device, point } = target(knownPoint, query);
  const { start, end } = range(query, now);
  const limit = parseLimit(query.limit);
  return rows(await store.readRaw(device, point, start, end + 1, limit));
}

export async function historyAggregate(store: HistoryStore, knownPoint: KnownPoint, raw: HistoryParams,
  now: number): Promise<HistoryRow[]> {
  const query = single(raw);
  const { device, point } = target(knownPoint, query);
  const fn = present(query.function);
  if (fn === undefined) throw badRequest('function is required (use avg, min, max, sum, count, first, last)');
  if (!isAggFunction(fn)) throw badRequest(`unknown function "${fn}" (use ${AGG_FUNCTIONS.join(', ')})`);
  const interval = parseInterval(query.interval);
  const { start, end } = range(query, now);
  const buckets = Buckets.countFor(start, end + 1, interval);
  if (buckets > MAX_BUCKETS) {
    throw badRequest(`interval ${query.interval} is too small for the range: ${buckets} buckets (max ${MAX_BUCKETS})`);
  }
  return rows(await store.aggregate(device, point, fn, interval, start, end + 1));
}

const present = (v: string | undefined): string | undefined => (v === undefined || v.trim() === '' ? undefined : v.trim());

function target(knownPoint: KnownPoint, query: HistoryParams): { device: string; point: string } {
  const device = present(query.device);
  if (device === undefined) throw badRequest('device is required');
  const point = present(query.point);
  if (point === undefined) throw badRequest('point is required');
  const known = knownPoint(device, point);
  if (known === 'unknown device') throw unknownDevice();
  if (known === 'unknown point') throw unknownPoint(point);
  return { device, point };
}

/** Inclusive [start, end]; default the last hour up to now. */
function range(query: HistoryParams, now: number): { start: number; end: number } {
  const startText = present(query.start);
  const endText = present(query.end);
  const end = endText === undefined ? now : parseTime('end', endText);
  const start = startText === undefined ? end - DEFAULT_RANGE : parseTime('start', startText);
  if (end < start) throw badRequest('end is before start');
  return { start, end };
}

function parseTime(name: string, text: string): number {
  const t = parseTimeText(text);
  if (t === null) throw badRequest(`invalid ${name} "${text}" (use YYYY-MM-DD HH:MM:SS, ISO 8601 or epoch ms)`);
  return t;
}

function parseLimit(text: string | undefined): number {
  const s = present(text);
  if (s === undefined) return MAX_LIMIT;
  const n = Number(s);
  if (!/^\d+$/.test(s) || n < 1 || n > MAX_LIMIT) throw badRequest(`limit must be 1..${MAX_LIMIT}`);
  return n;
}

function parseInterval(text: string | undefined): number {
  const s = present(text);
  if (s === undefined) throw badRequest('interval is required (a duration such as 1m, 1h, 1d)');
  let ms: number;
  try {
    ms = parseDuration(s);
  } catch {
    throw badRequest(`invalid interval "${s}" (examples: 30s, 5m, 1h, 1d)`);
  }
  if (!(ms > 0)) throw badRequest('interval must be > 0');
  return ms;
}

const rows = (values: TimedValue[]): HistoryRow[] => values.map(({ ts, value }) => ({ time: formatLocalMs(ts), ts, value }));
