/** The soak's one table row: verdicts, the figure (configuration, capacity, what was served, what was measured) and a note. */
import os from 'node:os';
import type { Row } from '../table.js';
import { afterWarmup, GOAL, judgeEld, judgeFds, judgeRss, loopLoad, riseGoal, type RssVerdict, type Sample } from './checks.js';
import { fleetLabel } from './fleet.js';
import type { LogCounts } from './gateway.js';

export interface SoakRun {
  seconds: number;
  intervalS: number;
  /** Entry and flags, in words. */
  how: string;
  /** `stretch`: the gateway's loop while the capacity was measured, (run + wait) / run (soak/checks.ts loopLoad). */
  capacity: { rest: number; restP99: number; sets: number; stretch?: number };
  /** Sample taken just before the load started, and those taken during it. */
  first: Sample;
  samples: Sample[];
  elapsed: number;
  rest: { ok: number; failed: number; behind: number; firstFailure: string | null };
  /** inFlight: sent, unanswered when the soak ended and the stop began. */
  sets: { ok: number; failed: number; inFlight: number; behind: number; firstFailure: string | null };
  subscriber: { msgs: number; alive: boolean };
  died: string | null;
  log: LogCounts;
  stop: { code: number | null; signal: string | null; ms: number; clean: boolean };
}

const MB = (b: number): string => (b / 2 ** 20).toFixed(1);
const int = (x: number): string => Math.round(x).toLocaleString('en');
const span = (s: number): string => (s >= 3600 ? `${s / 3600} h` : s >= 60 ? `${s / 60} min` : `${s} s`);

export const soakTest = (seconds: number): string => `soak ${span(seconds)}, fleet F at ½ REST + ½ MQTT capacity`;
export const soakGoal = (seconds: number): string => `after ${GOAL.warmup * 100}% warm-up: RSS trend and last-fifth median each risen ≤ ${riseGoal(seconds) * 100}% of mean, ` +
  `no sample > ${GOAL.rssTransient * 100}% above the trend (transients reported with the history seals beside them), 0 error lines, event-loop p99 last ≤ ${GOAL.eldGrowth}× first (or + ${GOAL.eldFloorMs} ms; ` +
  'times as much as the machine stretched the loop more than in the first), ' +
  `fds max−min ≤ ${GOAL.fdSpread}; ≥ ${GOAL.served * 100}% of both targets served (of the share of them the machine still left CPU for) and of the exports at the # subscriber, 0 failed; ` +
  'stops cleanly under the load (exit 0 in the unit\'s 20 s)';

/** A soak that never got to its load (no gateway, no subscriber tool, died early). */
export const missRow = (seconds: number, figure: string, note: string): Row =>
  ({ test: soakTest(seconds), trials: 1, survived: 0, lost: '?', figure: `${fleetLabel()}; ${figure}`, goal: soakGoal(seconds), ok: false, note });

/** The transients above the RSS trend, as `t=… s +… MB (seal)` (the first 6). */
function transients(rss: RssVerdict): string {
  const out = rss.transients;
  if (!out.length) return 'none';
  return out.slice(0, 6).map((x) => `t=${x.t.toFixed(0)} s +${MB(x.above)} MB (${x.seal ? 'a history seal beside it' : 'no seal beside it'})`).join(', ') +
    (out.length > 6 ? ` and ${out.length - 6} more` : '');
}

/** The trend's rise over the window, `+… MB (…%)`. */
const rise = (rss: RssVerdict): string => `${rss.rise >= 0 ? '+' : ''}${MB(rss.rise)} MB (${((100 * rss.rise) / rss.mean).toFixed(1)}%)`;

export function soakRow(r: SoakRun): Row {
  const settled = afterWarmup(r.samples, r.seconds);
  const rss = judgeRss(settled, riseGoal(r.seconds));
  const eld = judgeEld(settled, [r.first, ...r.samples]);
  const fds = judgeFds(settled);
  const restTarget = r.capacity.rest / 2;
  const setTarget = r.capacity.sets / 2;
  // The targets are half of a capacity the gateway had with the CPU the machine left it then; a job started
  // beside the soak since (the loop stretched more) leaves it less, and a half it can no longer serve.
  const soakStretch = loopLoad(r.first, r.samples.at(-1)).stretch;
  const share = Math.min(1, (r.capacity.stretch ?? 1) / soakStretch);
  const restRate = r.rest.ok / r.elapsed;
  // The paced sets keep at most a window unanswered (soak/mqtt-load.ts), so up to a window is legitimately in
  // flight when the soak ends: at a low capacity (a loaded machine: 16 sets/s) that window alone was 10% of
  // the sets sent, and a gateway that kept up read as not served. A gateway that stops answering still fails:
  // the window is full and nothing more is sent (`behind` grows).
  const setRate = (r.sets.ok + r.sets.inFlight) / r.elapsed;
  // No capacity measured is no load to serve: a soak without its REST or set load must not pass.
  const loaded = restTarget > 0 && setTarget > 0;
  const served = loaded && restRate >= GOAL.served * share * restTarget && setRate >= GOAL.served * share * setTarget;
  const failed = r.rest.failed + r.sets.failed;
  const last = r.samples.at(-1) ?? r.first;
  const dt = Math.max(last.t, 1);
  // The `#` subscriber gets every state and event the exporter publishes (and the sets and their results).
  const exported = last.exported - r.first.exported;
  const fed = r.subscriber.alive && r.subscriber.msgs >= GOAL.served * exported;
  const ok = !r.died && rss.ok && eld.ok && fds.ok && served && fed && failed === 0 && r.log.errors === 0 && r.stop.clean;

  const changes = (last.historySamples - r.first.historySamples) / dt;
  const measured = settled.length >= 2
    ? `RSS ${MB(rss.min)}–${MB(rss.max)} MB (trend ${rss.mbPerHour.toFixed(1)} MB/h, ${rise(rss)} over the window; median ${MB(rss.firstMedian)} → ${MB(rss.lastMedian)} MB first → last fifth; ` +
      `transients above the trend: ${transients(rss)}); ` +
      `event-loop p99 ${eld.first.toFixed(1)} → ${eld.last.toFixed(1)} ms (max p99 ${eld.maxP99.toFixed(1)}, max ${eld.max.toFixed(0)} ms; ` +
      `loop ${Math.round(eld.busy * 100)}% busy, stretched ${eld.stretchFirst.toFixed(2)} → ${eld.stretchLast.toFixed(2)}× by the machine: bound ${eld.bound.toFixed(1)} ms); ` +
      `fds ${fds.min}–${fds.max}`
    : `${settled.length} samples after warm-up (RSS last ${MB(last.rss)} MB, heap ${MB(last.heapUsed)} MB)`;
  const figure = `${fleetLabel()}; ${r.how}. Capacity (both at once): REST devicePoint ${int(r.capacity.rest)} req/s, MQTT set ${int(r.capacity.sets)}/s. ` +
    `Served: REST ${int(restRate)}/${int(restTarget)} req/s, set ${int(setRate)}/${int(setTarget)}/s, # subscriber ${int(r.subscriber.msgs / r.elapsed)} msg/s, ` +
    `history ${int(changes)} samples/s. ${measured}; ${r.log.errors} error lines`;

  const why = [
    r.died,
    settled.length >= 2 && rss.leak && `RSS grows: the least-squares trend rose ${rise(rss)} over the window (${rss.mbPerHour.toFixed(1)} MB/h, ${rss.n} samples) and ` +
      `the median ${MB(rss.firstMedian)} → ${MB(rss.lastMedian)} MB first → last fifth, both over ${riseGoal(r.seconds) * 100}% of ${MB(rss.mean)} MB`,
    settled.length >= 2 && rss.maxAbove > GOAL.rssTransient * rss.mean && `RSS ${MB(rss.maxAbove)} MB above its trend, over the ${GOAL.rssTransient * 100}% ` +
      `bound on a transient (${MB(GOAL.rssTransient * rss.mean)} MB): ${transients(rss)}`,
    settled.length >= 2 && !eld.ok && `event-loop p99 ${eld.first.toFixed(1)} → ${eld.last.toFixed(1)} ms (${(eld.last / eld.first).toFixed(2)}×, ${eld.n} windows; ` +
      `bound ${eld.bound.toFixed(1)} ms with the machine's stretch ${eld.stretchFirst.toFixed(2)} → ${eld.stretchLast.toFixed(2)}×)`,
    settled.length >= 2 && !fds.ok && `fds spread ${fds.min}–${fds.max}`,
    !loaded && `no load to serve: capacity measured REST ${int(r.capacity.rest)} req/s, MQTT set ${int(r.capacity.sets)}/s`,
    loaded && !served && `load not served: REST ${int(restRate)} of ${int(restTarget)} req/s (${int(r.rest.behind)} behind), set ${int(setRate)} of ${int(setTarget)}/s (${int(r.sets.behind)} behind, ${r.sets.inFlight} in flight)` +
      (share < 1 ? `; ${Math.round(share * 100)}% of each owed, the machine stretching the loop ${(r.capacity.stretch ?? 1).toFixed(2)} → ${soakStretch.toFixed(2)}×` : ''),
    !fed && `# subscriber ${r.subscriber.alive ? 'connected' : 'gone'}, got ${int(r.subscriber.msgs)} messages while the exporter published ${int(exported)}`,
    failed > 0 && `${r.rest.failed} REST failed (${r.rest.firstFailure}), ${r.sets.failed} sets failed (${r.sets.firstFailure})`,
    !r.died && r.log.errors > 0 && `${r.log.errors} error lines (${r.log.errorsAtStop} after SIGTERM), first: ${r.log.firstErrors.join(' | ')}`,
    !r.died && !r.stop.clean && `stop: exit ${r.stop.code ?? r.stop.signal} after ${(r.stop.ms / 1000).toFixed(1)} s`,
  ].filter(Boolean);
  const range = (xs: number[]): string => (xs.length ? `${MB(Math.min(...xs))}–${MB(Math.max(...xs))} MB` : '?');
  const cpu = (key: 'cpu' | 'loadCpu'): string => `${Math.round((100 * (last[key] - r.first[key])) / dt)}%`;
  const info = `${r.samples.length} samples every ${r.intervalS} s, ${settled.length} after warm-up, ${eld.n} event-loop windows; ` +
    `whole-run event-loop p99 ${last.eldRun?.p99 ?? '?'} ms (max ${last.eldRun?.max ?? '?'}); ` +
    `CPU of one core: gateway ${cpu('cpu')}, load generator ${cpu('loadCpu')} (loadavg ${os.loadavg()[0]!.toFixed(1)}, ${os.cpus().length} cores); ` +
    `the gateway's loop stretched ${(r.capacity.stretch ?? 1).toFixed(2)}× by the machine while its capacity was taken, ${soakStretch.toFixed(2)}× over the soak; ` +
    `V8 heap used ${range(settled.map((s) => s.heapUsed))} of ${range(settled.map((s) => s.heapTotal))}; ` +
    `${r.log.warnings} warnings logged; history dropped ${int((last.historyDropped - r.first.historyDropped) / dt)} of ${int(changes)} samples/s; ` +
    `MQTT exporter ${int(exported / dt)} events+states/s; SIGTERM under the load (${r.sets.inFlight} sets in flight), stopped in ${(r.stop.ms / 1000).toFixed(1)} s`;
  return {
    test: soakTest(r.seconds), trials: 1, survived: ok ? 1 : 0, lost: `${failed} requests, ${r.log.errors} error lines`,
    figure, goal: soakGoal(r.seconds), ok, note: [...why, info].join('; '),
  };
}
