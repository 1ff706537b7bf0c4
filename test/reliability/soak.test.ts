/**
 * The soak campaign, reduced (30 s of fleet F at half the measured REST and MQTT capacity), against the real
 * gateway process; and its verdicts on made-up series, so a drifting RSS or a growing event-loop delay is
 * shown to give a MISS.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeEld, judgeFds, judgeRss, type Sample } from '../../scripts/reliability/soak/checks.js';
import { soakRow, type SoakRun } from '../../scripts/reliability/soak/report.js';
import { unitEnvironment, unitNodeFlags } from '../../scripts/unit.js';
import { soak } from '../../scripts/reliability/soak.js';
import { formatTable } from '../../scripts/reliability/table.js';

const MiB = 2 ** 20;
const series = (f: (i: number) => number, fds = () => 40) => Array.from({ length: 20 }, (_, i) => ({ t: i * 10, rss: f(i) * MiB, fds: fds() }));

test('verdicts: a flat series passes, a drifting one misses', () => {
  assert.ok(judgeRss(series((i) => 100 + (i % 2))).ok);
  const drift = judgeRss(series((i) => 100 + i));
  assert.not.ok(drift.ok);
  assert.ok(drift.leak);
  assert.ok(drift.mbPerHour > 300, `trend ${drift.mbPerHour}`);
  assert.not.ok(judgeFds(series(() => 100, (() => { let n = 40; return () => n++; })())).ok);
  // Each window read twice (sampling faster than the gateway's 10 s windows) counts once.
  const eld = (p99s: number[]) => judgeEld(p99s.flatMap((p99) => [{ eld: { p99, max: p99 } }, { eld: { p99, max: p99 } }]));
  const steady = eld([10, 11, 9, 10, 12, 10, 11, 10, 9, 11]);
  assert.ok(steady.ok);
  assert.is(steady.n, 10);
  assert.not.ok(eld([10, 10, 11, 12, 14, 16, 18, 20, 22, 24]).ok);
  assert.not.ok(judgeEld([{ eld: null }, { eld: null }]).ok, 'no figures is no pass');
  assert.is(judgeEld([{ eld: { p99: 0, max: 0 } }, { eld: { p99: 5, max: 9 } }]).n, 1, 'zeros: no window completed yet');
});

/** A 10-minute soak after its warm-up: 49 samples every 10 s (t = 120..600 s), a history seal every 90 s. */
const tenMinutes = (rss: (t: number) => number) => Array.from({ length: 49 }, (_, i) => {
  const t = 120 + 10 * i;
  return { t, rss: rss(t) * MiB, seals: Math.floor(t / 90) };
});
/** The seal's transient: +7 MB on the sample just after a seal (the footprint profile's 5–7 MB, a second long). */
const sealSpike = (t: number): number => (t % 90 < 10 ? 7 : 0);

test('RSS verdict: the seal transients of a flat run pass and are reported beside their seals; a planted leak misses', () => {
  // The run that went red on a ±5% band: 106.5-115.4 MB around 108.5 MB, flat (-0.2 MB/h), spikes at seals.
  const flat = judgeRss(tenMinutes((t) => 108 + ((t / 10) % 3) * 0.5 + sealSpike(t)));
  assert.ok(flat.ok, JSON.stringify(flat));
  assert.not.ok(flat.leak);
  assert.ok(flat.transients.length >= 4, `${flat.transients.length} transients`);
  assert.ok(flat.transients.every((x) => x.seal), 'each beside a seal');
  // 1 MiB a minute retained, the same spikes on top: 8 MB over the 480 s window (7.4% of 108 MB).
  const leak = judgeRss(tenMinutes((t) => 108 + (t - 120) / 60 + ((t / 10) % 3) * 0.5 + sealSpike(t)));
  assert.not.ok(leak.ok);
  assert.ok(leak.leak);
  assert.ok(Math.abs(leak.mbPerHour - 60) < 10, `trend ${leak.mbPerHour} MB/h`);
  // A spike on the last samples lifts the line but not the last fifth's median: a transient, not a leak.
  const lateSpike = judgeRss(tenMinutes((t) => 108 + (t >= 590 ? 9 : 0)));
  assert.ok(lateSpike.ok, JSON.stringify(lateSpike));
  assert.ok(lateSpike.transients.some((x) => !x.seal), 'reported with no seal beside it');
  // A transient past the bound (10% of the mean) is a MISS of its own.
  const huge = judgeRss(tenMinutes((t) => 108 + (t === 300 ? 14 : 0)));
  assert.not.ok(huge.ok);
  assert.not.ok(huge.leak);
  // A step that stays (a cache that filled and never emptied) moves both the line and the medians.
  assert.not.ok(judgeRss(tenMinutes((t) => 108 + (t >= 360 ? 9 : 0))).ok);
});

test('verdicts: a p99 grown as much as the machine stretched the loop passes; grown beyond that it misses', () => {
  // 10 windows sampled every 5 s; the gateway's loop on a CPU a quarter of the time. From halfway another job
  // takes as much CPU from it as it gets (its loop twice as long on the wall, busy half the time): 29 -> 59 ms,
  // the tracker's case; turns twice as long, and a loop half busy delays a timer 1.5 times as much again.
  const loaded = (i: number): boolean => i >= 10;
  const run = (p99s: (i: number) => number, busy: (i: number) => boolean) => {
    let runMs = 0;
    let waitMs = 0;
    return judgeEld(Array.from({ length: 20 }, (_, i) => {
      runMs += 1250;
      if (busy(i)) waitMs += 1250;
      const p99 = p99s(i >> 1) + (i >> 1) / 100; // each window its own figures (equal ones read as one window)
      return { t: 5 * (i + 1), eld: { p99, max: p99 + 5 }, sched: { runMs, waitMs } };
    }));
  };
  const tracker = (w: number): number => (w < 5 ? 29 : 59);
  assert.ok(run(tracker, loaded).ok, 'doubled with the loop twice as long: the machine, not the gateway');
  assert.not.ok(run(tracker, () => false).ok, 'doubled on a machine at rest: the gateway');
  assert.not.ok(run((w) => (w < 5 ? 29 : 150), loaded).ok, 'more than the stretch explains (bound 3 × 43.5 ms)');
  assert.ok(run((w) => (w < 5 ? 59 : 29), (i) => i < 10).ok, 'a machine quieter at the end never narrows the bound below the goal');
});

test('a soak without its load (a capacity of 0 measured) is a MISS, not a pass', () => {
  const sample = (t: number, k: number): Sample => ({
    t, rss: 200 * MiB, fds: 40, cpu: t / 2, loadCpu: t / 4, heapUsed: 60 * MiB, heapTotal: 70 * MiB, eld: { p99: 5 + (k % 2), max: 9 + k },
    eldRun: { p99: 6, max: 20 }, historySamples: 10_000 * t, historyDropped: 0, exported: 2_000 * t,
  });
  const run = (sets: number): SoakRun => ({
    seconds: 100, intervalS: 10, how: 'test', capacity: { rest: 1000, restP99: 5, sets },
    first: sample(0, 0), samples: Array.from({ length: 10 }, (_, i) => sample(10 * (i + 1), i)), elapsed: 100,
    rest: { ok: 50_000, failed: 0, behind: 0, firstFailure: null },
    sets: { ok: 100 * sets / 2, failed: 0, inFlight: 0, behind: 0, firstFailure: null },
    subscriber: { msgs: 200_000, alive: true }, died: null,
    log: { errors: 0, errorsAtStop: 0, warnings: 0, lines: 10, firstErrors: [], stderrHead: '' },
    stop: { code: 0, signal: null, ms: 200, clean: true },
  });
  assert.ok(soakRow(run(100)).ok, soakRow(run(100)).note);
  const none = soakRow(run(0));
  assert.not.ok(none.ok);
  assert.match(none.note ?? '', 'no load to serve');
  // A low set capacity (16/s: a loaded machine): the window still unanswered at the end is served load...
  const slow = run(16);
  assert.ok(soakRow({ ...slow, sets: { ...slow.sets, ok: 8 * 100 - 23, inFlight: 23 } }).ok);
  // ... but a gateway that stopped answering halfway is not.
  const stuck = soakRow({ ...slow, sets: { ...slow.sets, ok: 400, inFlight: 32, behind: 368 } });
  assert.not.ok(stuck.ok);
  assert.match(stuck.note ?? '', 'load not served');
  // Half the REST target served: a miss on a machine as quiet as when the capacity was taken; served when a job
  // started beside the soak has since doubled the loop's time on the wall (half the CPU left: half owed).
  const withLoop = (r: SoakRun, stretch: number): SoakRun => ({
    ...r, capacity: { ...r.capacity, stretch: 1 },
    first: { ...r.first, sched: { runMs: 0, waitMs: 0 } },
    samples: r.samples.map((x) => ({ ...x, sched: { runMs: 500 * x.t, waitMs: 500 * x.t * (stretch - 1) } })),
  });
  const half = { ...run(100), rest: { ...run(100).rest, ok: 25_000 } };
  assert.not.ok(soakRow(withLoop(half, 1)).ok, 'half the target on a quiet machine');
  assert.ok(soakRow(withLoop(half, 2)).ok, soakRow(withLoop(half, 2)).note);
});

test('the gateway runs with the node flags and the environment of the systemd unit', () => {
  assert.equal(unitNodeFlags('ExecStart=/usr/bin/node --a=1 --b /opt/x/shadowgate.mjs run\n'), ['--a=1', '--b']);
  assert.ok(unitNodeFlags().some((f) => f.startsWith('--max-old-space-size=')));
  assert.equal(unitEnvironment('Environment=NODE_ENV=production\nEnvironment=MALLOC_ARENA_MAX=2\nEnvironment=SHADOWGATE_DATA_DIR=/var/lib/x\n'),
    { NODE_ENV: 'production', MALLOC_ARENA_MAX: '2' }, 'the unit\'s own paths are left to the run');
  assert.is(unitEnvironment().MALLOC_ARENA_MAX, '2');
});

test('soak (reduced): fleet F at half capacity, RSS, log, event loop, fds', async () => {
  const rows = await soak({ reduced: true, log: (line) => console.log(`   ${line}`) });
  console.log(formatTable(rows));
  for (const row of rows) assert.ok(row.ok, `${row.test}: ${row.note ?? row.figure}`);
});

test.run();
