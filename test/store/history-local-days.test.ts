/**
 * Day and week aggregates on local midnights in the gateway's time zone (issue 11 item 5): in Berlin,
 * energy used at 00:30 on 1 July counts for 1 July; both DST days (23 h and 25 h) are one bucket each; a
 * half-hour zone (India) and a DST + half-hour zone (Adelaide) work, also where the answer comes from the
 * minute/hour rollups of sealed segments; weeks start on Monday. Each zone is set through process.env.TZ
 * (Node re-reads it), compared with a reference that groups by the local calendar date.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HistoryStore, TimedValue } from '../../src/store/history.js';
import { localTimeText } from '../../src/util/local-time.js';
import { FakeClock, open, rng, withDir, within } from './history-helpers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const savedTz = process.env.TZ;

function inZone<T>(tz: string, fn: () => Promise<T>): Promise<T> {
  process.env.TZ = tz;
  return fn().finally(() => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  });
}

/** Local midnight of the calendar day `days` after the one holding `ts`. */
const localMidnight = (ts: number, days = 0): number => {
  const d = new Date(ts);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() + days).getTime();
};

/** Sums per local calendar day (or per week from Monday), labelled by its local midnight. */
function reference(samples: TimedValue[], start: number, endEx: number, week: boolean): TimedValue[] {
  const sums = new Map<number, number>();
  for (const s of samples) {
    if (s.ts < start || s.ts >= endEx) continue;
    let key = localMidnight(s.ts);
    if (week) key = localMidnight(key, -((new Date(key).getDay() + 6) % 7));
    sums.set(key, (sums.get(key) ?? 0) + (s.value as number));
  }
  return [...sums.entries()].sort((a, b) => a[0] - b[0]).map(([ts, value]) => ({ ts, value }));
}

async function fill(store: HistoryStore, clock: FakeClock, from: number, to: number, seed: number): Promise<TimedValue[]> {
  const rand = rng(seed);
  const samples: TimedValue[] = [];
  let n = 0;
  for (let t = from; t < to; t += 60_000 + Math.floor(rand() * 600_000)) {
    const value = Math.floor(rand() * 400) / 4;
    store.record('meter', 'energy', t, value);
    samples.push({ ts: t, value });
    if (++n % 150 === 0) {
      clock.t = t;
      await within(store.flush());
    }
  }
  clock.t = to + 1000;
  return samples;
}

test('Berlin: 00:30 on 1 July counts for 1 July; the 23 h and 25 h DST days are one bucket each', () =>
  inZone('Europe/Berlin', () => withDir(async (dir) => {
    const clock = new FakeClock(Date.UTC(2026, 5, 29));
    const store = await open(dir, clock, { segmentSpan: DAY });
    try {
      const at0030 = new Date(2026, 6, 1, 0, 30).getTime();
      store.record('meter', 'energy', new Date(2026, 5, 30, 23, 30).getTime(), 1);
      store.record('meter', 'energy', at0030, 10);
      const got = await store.aggregate('meter', 'energy', 'sum', DAY, new Date(2026, 5, 30).getTime(), new Date(2026, 6, 2).getTime());
      assert.equal(got.map((r) => [localTimeText(r.ts), r.value]), [['2026-06-30 00:00:00', 1], ['2026-07-01 00:00:00', 10]]);

      for (const [y, m, d, hours] of [[2026, 2, 29, 23], [2026, 9, 25, 25]] as const) {
        const day = new Date(y, m, d).getTime();
        const next = new Date(y, m, d + 1).getTime();
        assert.is(next - day, hours * HOUR, 'the DST day length');
        clock.t = next + DAY; // within the retention of the samples below
        store.record('meter', 'energy', day + 30 * 60_000, 2);
        store.record('meter', 'energy', next - 30 * 60_000, 3);
        const rows = await store.aggregate('meter', 'energy', 'sum', DAY, day - DAY, next + DAY);
        assert.equal(rows.map((r) => [localTimeText(r.ts), r.value]), [[localTimeText(day), 5]], `${hours} h day`);
      }
    } finally {
      await store.close();
    }
  })));

for (const tz of ['Europe/Berlin', 'Asia/Kolkata', 'Australia/Adelaide', 'America/New_York']) {
  test(`${tz}: day and week sums over sealed segments, logs and memory equal a local-calendar reference`, () =>
    inZone(tz, () => withDir(async (dir) => {
      // Across the spring DST change of the zone's hemisphere (Adelaide: first Sunday of April goes back).
      const from = tz === 'Australia/Adelaide' ? Date.UTC(2026, 2, 30) : Date.UTC(2026, 2, 24);
      const to = from + 12 * DAY;
      const clock = new FakeClock(from);
      const store = await open(dir, clock, { segmentSpan: DAY, bufferSamples: 100_000 });
      try {
        const samples = await fill(store, clock, from, to, tz.length);
        assert.ok(store.stats().compactions >= 2, 'sealed segments with rollups take part');
        for (const [interval, week] of [[DAY, false], [7 * DAY, true]] as const) {
          for (const [start, endEx] of [[from, to], [from + 5 * HOUR + 17 * 60_000, to - 7 * HOUR], [localMidnight(from, 1), localMidnight(to, -1)]]) {
            const got = await store.aggregate('meter', 'energy', 'sum', interval, start!, endEx!);
            assert.equal(got, reference(samples, start!, endEx!, week), `${week ? 'weeks' : 'days'} over [${start}, ${endEx})`);
            for (const r of got) {
              const d = new Date(r.ts);
              assert.ok(d.getHours() === 0 && d.getMinutes() === 0, `bucket ${localTimeText(r.ts)} starts at local midnight`);
              if (week) assert.is(d.getDay(), 1, 'weeks start on Monday');
            }
          }
        }
      } finally {
        await store.close();
      }
    })));
}

test.run();
