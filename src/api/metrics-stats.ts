/**
 * Turning a part's stats() object into metrics by a table of its keys: each known key has its metric
 * name, kind and HELP. A key a part adds before it is described here is still exported, as a gauge named
 * after the key (milliseconds keys as seconds), so no figure silently disappears.
 */
import type { Labels, MetricSink } from './metrics-types.js';

/** `counter`: a running total (`_total` added); `ms`: a duration in ms, exported in seconds; `skip`: not a metric. */
export type Kind = 'counter' | 'gauge' | 'ms' | 'skip';
export type StatTable = Readonly<Record<string, readonly [suffix: string, kind: Kind, help: string] | 'skip'>>;

export const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `lastRttMs` → `last_rtt_ms`. */
export const snake = (key: string): string =>
  key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[^a-zA-Z0-9_]/g, '_').toLowerCase();

const numberOf = (v: unknown): number | undefined =>
  typeof v === 'boolean' ? (v ? 1 : 0) : typeof v === 'number' && Number.isFinite(v) ? v : undefined;

/** Writes the numeric and boolean leaves of `stats` under `prefix` (nested objects: their own tables). */
export function fromStats(sink: MetricSink, prefix: string, stats: unknown, table: StatTable, labels: Labels = {}): void {
  if (!isRecord(stats)) return;
  const labelNames = Object.keys(labels);
  for (const [key, raw] of Object.entries(stats)) {
    const spec = table[key];
    if (spec === 'skip') continue;
    const value = numberOf(raw);
    if (value === undefined) continue;
    if (spec === undefined) {
      const ms = /Ms$/.test(key);
      const name = `${prefix}_${snake(ms ? key.slice(0, -2) : key)}${ms ? '_seconds' : ''}`;
      sink.gauge(name, `${prefix.replace(/^shadowgate_/, '')} figure ${key}${ms ? ' (seconds)' : ''}`, labelNames)(ms ? value / 1000 : value, labels);
      continue;
    }
    const [suffix, kind, help] = spec;
    if (kind === 'skip') continue;
    const name = `${prefix}_${suffix}`;
    if (kind === 'counter') sink.counter(`${name}_total`, help, labelNames)(value, labels);
    else if (kind === 'ms') sink.gauge(name, help, labelNames)(value / 1000, labels);
    else sink.gauge(name, help, labelNames)(value, labels);
  }
}
