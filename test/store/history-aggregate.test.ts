// Day buckets follow the local time zone (buckets.ts): this reference groups on the epoch, so pin UTC.
process.env.TZ = 'UTC';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AGG_FUNCTIONS, type AggFunction, type HistoryStore, type TimedValue } from '../../src/store/history.js';
import { FakeClock, open, rng, withDir, within } from './history-helpers.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const MIN = 60_000;
const T0 = Date.UTC(2024, 2, 10, 0, 0, 0) - 7 * HOUR - 13 * MIN - 1234; // deliberately unaligned

/** The obvious implementation: group every sample by floor(ts / interval). */
function reference(samples: TimedValue[], fn: AggFunction, interval: number, start: number, endEx: number): TimedValue[] {
  const groups = new Map<number, number[]>();
  for (const s of [...samples].sort((a, b) => a.ts - b.ts)) {
    if (s.ts < start || s.ts >= endEx || typeof s.value !== 'number') continue;
    const b = Math.floor(s.ts / interval) * interval;
    if (!groups.has(b)) groups.set(b, []);
    groups.get(b)!.push(s.value);
  }
  const out: TimedValue[] = [];
  for (const b of [...groups.keys()].sort((x, y) => x - y)) {
    const v = groups.get(b)!;
    const sum = v.reduce((a, x) => a + x, 0);
    const value = { avg: sum / v.length, min: Math.min(...v), max: Math.max(...v), sum, count: v.length,
      first: v[0]!, last: v[v.length - 1]! }[fn];
    out.push({ ts: b, value });
  }
  return out;
}

async function fill(store: HistoryStore, clock: FakeClock, seed: number): Promise<TimedValue[]> {
  const rand = rng(seed);
  const samples: TimedValue[] = [];
  const used = new Set<number>();
  let t = T0;
  const end = T0 + 3 * DAY + 5 * HOUR;
  let sinceFlush = 0;
  while (t < end) {
    t += 1 + Math.floor(rand() * 30_000);
    // Land often on bucket edges: the classic off-by-one.
    let ts = rand() < 0.15 ? Math.ceil(t / MIN) * MIN + (rand() < 0.5 ? 0 : -1) : t;
    // A few late arrivals (out of order), as a slow poll can deliver.
    if (rand() < 0.02) ts -= Math.floor(rand() * 120_000);
    if (used.has(ts)) continue;
    used.add(ts);
    // Quarter steps keep sums exact in binary, so sums compare exactly.
    const value = Math.floor(rand() * 8000 - 4000) / 4;
    store.record('dev', 'temp', ts, value);
    samples.push({ ts, value });
    if (rand() < 0.05) store.record('dev', 'temp-text', ts, `v${value}`);
    if (++sinceFlush >= 200 && t < end - HOUR) {
      clock.t = t;
      await within(store.flush());
      sinceFlush = 0;
    }
  }
  clock.t = end + 1000; // the last hour stays in memory: sealed segments, log and buffer all take part
  return samples;
}

test('aggregates equal a brute-force reference over random data (all functions, several intervals, edges)', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { segmentSpan: DAY, bufferSamples: 100_000 });
    try {
      const samples = await fill(store, clock, 42);
      const st = store.stats();
      assert.ok(st.compactions >= 2 && st.bufferedSamples > 0, JSON.stringify(st));
      const rand = rng(7);
      const lo = T0 - HOUR;
      const hi = clock.t;
      const intervals = [1000, 7000, MIN, 5 * MIN, 7 * MIN, HOUR, 90 * MIN, 2 * HOUR, DAY];
      let checked = 0;
      for (const interval of intervals) {
        const ranges: [number, number][] = [
          [lo, hi],
          [Math.ceil(T0 / HOUR) * HOUR, Math.floor(hi / HOUR) * HOUR], // aligned to hours
          [Math.ceil(T0 / MIN) * MIN + 1, Math.floor(hi / MIN) * MIN - 1], // one ms off the edges
        ];
        for (let k = 0; k < 3; k++) {
          const a = lo + Math.floor(rand() * (hi - lo));
          ranges.push([a, a + Math.floor(rand() * (hi - a))]);
        }
        for (const [start, endEx] of ranges) {
          if ((endEx - start) / interval > 60_000) continue; // keeps the reference cheap
          for (const fn of AGG_FUNCTIONS) {
            const got = await store.aggregate('dev', 'temp', fn, interval, start, endEx);
            const want = reference(samples, fn, interval, start, endEx);
            assert.equal(got, want, `${fn} every ${interval} ms over [${start}, ${endEx})`);
            checked++;
          }
        }
      }
      assert.ok(checked > 150, `checked ${checked}`);
      const text = await store.aggregate('dev', 'temp-text', 'count', HOUR, lo, hi);
      assert.equal(text, [], 'text samples are not aggregated');
    } finally {
      await store.close();
    }
  }));

test('aggregates after a restart still use the rollups and agree with raw data', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    let store = await open(dir, clock, { segmentSpan: DAY });
    try {
      const samples = await fill(store, clock, 3);
      await store.close();
      store = await open(dir, clock, { segmentSpan: DAY });
      for (const fn of AGG_FUNCTIONS) {
        const got = await store.aggregate('dev', 'temp', fn, HOUR, T0, clock.t);
        assert.equal(got, reference(samples, fn, HOUR, T0, clock.t), fn);
      }
    } finally {
      await store.close();
    }
  }));

test.run();
