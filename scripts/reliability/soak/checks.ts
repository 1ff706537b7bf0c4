/** The soak's verdicts from its samples (pure, so a test can feed it a drifting series and see a MISS). */

export interface Sample {
  /** Seconds since the soak load started. */
  t: number;
  rss: number;
  fds: number;
  /** CPU seconds used so far by the gateway, and by this process (the load generator). */
  cpu: number;
  loadCpu: number;
  heapUsed: number;
  heapTotal: number;
  /** The gateway's event-loop delay over its last completed 10 s window, ms (null: not reported). */
  eld: { p99: number; max: number } | null;
  /** The same over the gateway's whole run. */
  eldRun: { p99: number; max: number } | null;
  /** History samples seen so far (recorded + dropped), and dropped. */
  historySamples: number;
  historyDropped: number;
  /** MQTT events + states published by the exporter so far. */
  exported: number;
  /** History seals so far (the store's compactions): what a transient of RSS is set beside. */
  seals?: number;
  /**
   * The gateway's main thread (its event loop) so far, ms: time on a CPU and time ready but waiting for one
   * (/proc/PID/schedstat; null where the kernel does not say).
   */
  sched?: { runMs: number; waitMs: number } | null;
}

/**
 * `eldFloorMs`: p99s of a few ms move by a few ms from window to window (the monitor samples every 20 ms), so
 * "steady" is last ≤ 1.5 × first or within 10 ms of it — a drift that matters on a Pi is tens of ms.
 */
export const GOAL = {
  rssRise: 0.05, rssRiseShort: 0.1, rssTransient: 0.1, rssNoise: 0.02, eldGrowth: 1.5, eldFloorMs: 10, fdSpread: 5, warmup: 0.2, served: 0.95,
} as const;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
};

/** Least-squares slope of y over t (units of y per second of t). */
function slope(ts: number[], ys: number[]): number {
  const n = ts.length;
  if (n < 2) return 0;
  const mt = ts.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (ts[i]! - mt) * (ys[i]! - my);
    den += (ts[i]! - mt) ** 2;
  }
  return den ? num / den : 0;
}

export interface RssVerdict {
  ok: boolean; n: number; mean: number; min: number; max: number; mbPerHour: number;
  /** What the least-squares trend rose over the window (bytes): a leak's figure. */
  rise: number;
  /** Median of the first and of the last fifth: a creeping baseline shows here even between spikes. */
  firstMedian: number; lastMedian: number;
  /** Whether both the trend and the medians rose more than the goal (GOAL.rssRise) of the mean. */
  leak: boolean;
  /** Samples more than GOAL.rssNoise of the mean above the trend, with a history seal beside them or not. */
  transients: RssTransient[];
  /** The highest sample above the trend (bytes); over GOAL.rssTransient of the mean it is a MISS of its own. */
  maxAbove: number;
}
export interface RssTransient { t: number; rss: number; above: number; seal: boolean }
/**
 * `stretchFirst`/`stretchLast`: wall time over CPU time of the gateway's event loop in those windows (1: it never
 * waited for a CPU); `busy`: its own CPU share of the first windows' wall time; `bound`: what `last` was held to.
 */
export interface EldVerdict {
  ok: boolean; n: number; first: number; last: number; maxP99: number; max: number;
  stretchFirst: number; stretchLast: number; busy: number; bound: number;
}
export interface FdVerdict { ok: boolean; min: number; max: number }

/** Samples after the warm-up (the first GOAL.warmup of the run). */
export const afterWarmup = <T extends { t: number }>(xs: readonly T[], durationS: number): T[] => xs.filter((x) => x.t >= durationS * GOAL.warmup);

/**
 * RSS after warm-up, judged for what each figure can show (issue: a ±5% band on every sample failed a flat
 * process whose history seal lands a known 5–7 MB for about a second on a sample now and then):
 * - a leak is a trend: the least-squares line and the last fifth's median both risen more than GOAL.rssRise of
 *   the mean over the window (a spike at one end moves the line but not the medians; a step that stays moves both);
 * - a transient is a sample above that line: reported with whether a history seal fell beside it (between its
 *   neighbours), and a MISS only past GOAL.rssTransient of the mean, the bound on what a seal may take.
 */
/**
 * The rise a soak of `seconds` may show: a short one's window still holds the fleet settling (the reduced 30 s
 * soak rose 2–3.4% in 24 s on a flat gateway), so it is held to what its old ±5% band let through.
 */
export const riseGoal = (seconds: number): number => (seconds < 120 ? GOAL.rssRiseShort : GOAL.rssRise);

export function judgeRss(samples: readonly (Pick<Sample, 't' | 'rss'> & Partial<Pick<Sample, 'seals'>>)[], riseGoal: number = GOAL.rssRise): RssVerdict {
  const rss = samples.map((s) => s.rss);
  const ts = samples.map((s) => s.t);
  const n = rss.length;
  const mean = n ? rss.reduce((a, b) => a + b, 0) / n : NaN;
  const perS = slope(ts, rss);
  const mt = n ? ts.reduce((a, b) => a + b, 0) / n : 0;
  const line = (t: number): number => mean + perS * (t - mt);
  const rise = n >= 2 ? perS * (ts[n - 1]! - ts[0]!) : 0;
  const k = Math.max(1, Math.round(n * 0.2));
  const firstMedian = median(rss.slice(0, k));
  const lastMedian = median(rss.slice(-k));
  const leak = rise > riseGoal * mean && lastMedian - firstMedian > riseGoal * mean;
  const sealed = (i: number): boolean => {
    const before = samples[Math.max(0, i - 1)]!.seals;
    const after = samples[Math.min(n - 1, i + 1)]!.seals;
    return before !== undefined && after !== undefined && after > before;
  };
  const transients: RssTransient[] = [];
  let maxAbove = 0;
  samples.forEach((s, i) => {
    const above = s.rss - line(s.t);
    maxAbove = Math.max(maxAbove, above);
    if (above > GOAL.rssNoise * mean) transients.push({ t: s.t, rss: s.rss, above, seal: sealed(i) });
  });
  return {
    ok: n >= 2 && !leak && maxAbove <= GOAL.rssTransient * mean,
    n, mean, min: Math.min(...rss), max: Math.max(...rss), mbPerHour: (perS * 3600) / 2 ** 20, rise,
    firstMedian, lastMedian, leak, transients, maxAbove,
  };
}

/** The gateway's event-loop window, s (src/runtime/event-loop.ts). */
const ELD_WINDOW_S = 10;

type EldSample = Pick<Sample, 'eld'> & Partial<Pick<Sample, 't' | 'sched'>>;

/** The gateway's loop between two samples: its CPU share of the wall time, and (run + wait) / run. */
export interface LoopLoad { busy: number; stretch: number }

/** `from` → `to` (seconds, schedstat ms); stretch 1 where the kernel does not say or the loop hardly ran. */
export function loopLoad(from: Partial<Pick<Sample, 't' | 'sched'>> | undefined, to: Partial<Pick<Sample, 't' | 'sched'>> | undefined): LoopLoad {
  const wallMs = 1000 * ((to?.t ?? NaN) - (from?.t ?? NaN));
  if (!from?.sched || !to?.sched || !(wallMs > 0)) return { busy: NaN, stretch: 1 };
  const run = to.sched.runMs - from.sched.runMs;
  const wait = to.sched.waitMs - from.sched.waitMs;
  // Under 1% of a core: too little CPU time for a ratio to mean anything.
  return { busy: run / wallMs, stretch: run > wallMs / 100 && wait >= 0 ? (run + wait) / run : 1 };
}

/** The loop's load over the window that ended at `all[i]` (from the last sample a window or more before it). */
function loadAt(all: readonly EldSample[], i: number): LoopLoad {
  const to = all[i];
  if (!to) return { busy: NaN, stretch: 1 };
  let j = i - 1;
  while (j > 0 && all[j]!.t! > to.t! - ELD_WINDOW_S) j--;
  return loopLoad(all[j], to);
}

/** Past this share of the wall time running or waiting to run, a loop's delays are taken as unbounded. */
const SATURATED = 0.95;

/**
 * How much longer the same loop's delays are when the machine stretched it from `stretchFirst` to `stretchLast`
 * (another job, a CI build beside the soak, taking CPU from it; a machine loaded from halfway through turned a
 * 29 ms p99 into 59 ms with no change in the gateway). Every turn lasts that much longer, and a loop busy a
 * share ρ of the time delays a timer by about a turn / (1 − ρ), ρ growing with the stretch: the gateway's own
 * share (`busy`, the first windows') is held fixed, so a gateway that got busier by itself widens nothing.
 */
function machineFactor(busy: number, stretchFirst: number, stretchLast: number): number {
  if (!(stretchLast > stretchFirst) || !Number.isFinite(busy)) return 1;
  const rho = (s: number): number => Math.min(SATURATED, busy * s);
  return (stretchLast / stretchFirst) * ((1 - rho(stretchFirst)) / (1 - rho(stretchLast)));
}

/**
 * The gateway's 10 s windows as sampled (a window read twice counts once). Steady: the last fifth of the
 * windows (at least one) against the first fifth, each as the median of its windows' p99; the bound widened
 * by what the machine took from the loop in the last fifth beyond the first (machineFactor; never narrowed).
 * `all`: every sample, the warm-up's too, to look back a window from the first judged one.
 */
export function judgeEld(samples: readonly EldSample[], all: readonly EldSample[] = samples): EldVerdict {
  const windows: ({ p99: number; max: number } & LoopLoad)[] = [];
  for (const s of samples) {
    const prev = windows.at(-1);
    // max 0: no window completed yet (the gateway reports zeros until its first 10 s are over).
    if (s.eld && s.eld.max > 0 && !(prev && prev.p99 === s.eld.p99 && prev.max === s.eld.max)) windows.push({ ...s.eld, ...loadAt(all, all.indexOf(s)) });
  }
  const n = windows.length;
  const k = Math.max(1, Math.round(n * 0.2));
  const first = median(windows.slice(0, k).map((w) => w.p99));
  const last = median(windows.slice(-k).map((w) => w.p99));
  const stretchFirst = median(windows.slice(0, k).map((w) => w.stretch));
  const stretchLast = median(windows.slice(-k).map((w) => w.stretch));
  const busy = median(windows.slice(0, k).map((w) => w.busy).filter(Number.isFinite)); // NaN: no sample a window before
  const bound = Math.max(GOAL.eldGrowth * first, first + GOAL.eldFloorMs) * machineFactor(busy, stretchFirst, stretchLast);
  return {
    ok: n >= 2 && last <= bound, n, first, last, stretchFirst, stretchLast, busy, bound,
    maxP99: Math.max(...windows.map((w) => w.p99)), max: Math.max(...windows.map((w) => w.max)),
  };
}

export function judgeFds(samples: readonly Pick<Sample, 'fds'>[]): FdVerdict {
  const fds = samples.map((s) => s.fds);
  const min = Math.min(...fds);
  const max = Math.max(...fds);
  return { ok: fds.length >= 2 && max - min <= GOAL.fdSpread, min, max };
}
