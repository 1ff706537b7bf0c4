/**
 * Issue 15 item 3 — bus faults. The real gateway (dist/main.js) polls three units on a 9600-baud RTU line
 * that this process plays (bus-faults/wire.ts), between the gateway's pty and two pymodbus truth slaves.
 * After a fault-free baseline, each fault gets a window: CRC noise, dropped and extra bytes, replies from
 * the wrong unit, a second master, a slave that dies and comes back, the pty unplugged and re-plugged.
 * Per fault: healthy units keep ≥ 90% of their baseline poll rate (of the cycles the fault did not hit themselves, and
 * beside a second master of those the line time it left could carry: bus-faults/line-time.ts); a dead unit goes offline by the rules and
 * is back within two poll cycles; no corrupted value reaches the shadow (every reported cycle is checked
 * against what the slave served); no collision is caused by the gateway (judged at the wire).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BAUD, Bench, DEVICES, HEALTHY } from './bus-faults/bench.js';
import { carryShare, type LineTime } from './bus-faults/line-time.js';
import { silenceMs } from '../../src/protocol/modbus/wire-cost.js';
import { drop, extra, noise, wrongUnit, type FrameFault } from './bus-faults/faults.js';
import { SecondMaster } from './bus-faults/master2.js';
import { raise, restore, rigPriority } from './bus-faults/priority.js';
import { sleep, unavailable } from './bus-faults/procs.js';
import { RelayProbe } from './bus-faults/relay-probe.js';
import { dieTrial, lineTrial, unplugTrial, type Trial } from './bus-faults/trials.js';
import { selfCheck, verify } from './bus-faults/truth.js';
import type { Campaign, Row } from './table.js';

/**
 * The share of its fault-free poll rate a healthy unit keeps. The reduced set (`make test`) holds 32 cycles a unit in
 * its 8 s window, so one cycle is 3%; on a loaded CI the same code read 86–100%: it checks what noise cannot
 * cross (a schedule that drops cycles read 65%), and the full campaign judges the 90% goal.
 */
const RATE_GOAL = 0.9;
const REDUCED_RATE_GOAL = 0.8;
/** Every device's configured cycles a second, together: what the line must carry for every poll to keep its rate. */
const DEMAND_PER_S = DEVICES.reduce((n, d) => n + 1000 / d.pollMs, 0);
/** Relay latency (p99 over a trial) past which the relay, not the gateway, set the pace: 6 × t3.5 at 9600 baud. */
const RELAY_HELD_MS = 24;
const pct = (x: number): string => `${Math.round(x * 100)}%`;

interface Kind {
  test: string;
  goal: string;
  run: () => Promise<Trial>;
}

export const busFaults: Campaign = async ({ reduced, log, trials }) => {
  const why = unavailable();
  if (why) return [{ test: 'bus faults', trials: 0, survived: 0, lost: '?', figure: 'not run', goal: 'runs', ok: false, note: `cannot run here: ${why}` }];
  // Reduced: long enough that a trial's first second (a second master starting up, a slave warming up) is not a
  // quarter of the figure: at 4 s one transient of a few timeouts halved a healthy unit's measured rate in CI.
  const windowMs = reduced ? 8000 : 40_000;
  const rateGoal = reduced ? REDUCED_RATE_GOAL : RATE_GOAL;
  const repeats = reduced ? 1 : 2;
  const bench = new Bench();
  const probe = new RelayProbe();
  const probeDir = await mkdtemp(path.join(os.tmpdir(), 'sg-relay-probe-'));
  let ours: number | null = null;
  try {
    const t0 = performance.now();
    await bench.start();
    // The relay (priority.ts), once the gateway runs: a child started from a raised process would be raised too.
    // Lowered back at the end: the rest of a test run is not the rig.
    ours = raise(process.pid);
    await probe.start(probeDir);
    log(`line up, every unit polled, in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${rigPriority()}`);
    const wire = bench.wire;
    const trace = wire.trace;
    if (trace) {
      bench.observer.onReport = (r) => {
        const why = selfCheck(r.unit, r.values);
        if (why) console.error(`corrupted report of unit ${r.unit} at ${r.at.toFixed(2)}: ${why}:\n${trace.slice(-150).join('\n')}`);
      };
    }
    const frameFault = (fault: FrameFault, on: 'all' | 'request' = 'all') => () =>
      lineTrial(bench, windowMs, () => Object.assign(wire, { fault, faultOn: on }), () => (wire.fault = null));
    const master2 = new SecondMaster(wire, [1, 2], 150);
    const goalAt = (rate: number): string => `healthy ≥ ${pct(rate)} of baseline poll rate, 0 corrupted, 0 collisions by the gateway`;
    const lineGoal = goalAt(rateGoal);
    const sharedGoal = `healthy ≥ ${pct(rateGoal)} of the cycles the line time the other master left could carry at the configured poll ` +
      `(its requests and their answers, and the gateway's transactions it garbled, are its time; a cycle costs the baseline's transaction and 2 × t3.5), ` +
      `0 corrupted, 0 collisions by the gateway`;
    const kinds: Kind[] = [
      { test: 'CRC noise on 1 frame in 20', goal: lineGoal, run: frameFault(noise) },
      { test: 'a byte dropped from 1 frame in 20', goal: lineGoal, run: frameFault(drop) },
      { test: '1-3 extra bytes in 1 frame in 20', goal: lineGoal, run: frameFault(extra) },
      { test: '1 request in 20 answered by the wrong unit', goal: lineGoal, run: frameFault(wrongUnit(DEVICES.map((d) => d.unit)), 'request') },
      // The other master's share of the line is its own, not the gateway's to keep: judged by what it left.
      { test: 'second master on the line (~5 requests/s)', goal: sharedGoal, run: () => lineTrial(bench, windowMs, () => master2.start(), () => master2.stop()) },
      { test: 'slave dies and comes back (unit 3, poll 1 s)', goal: `offline by the rules, back ≤ 2 cycles; ${lineGoal}`, run: () => dieTrial(bench, Math.max(windowMs, 5000)) },
      { test: 'pty unplugged and re-plugged', goal: 'every unit offline by the rules, back ≤ 2 cycles; 0 corrupted, 0 collisions by the gateway', run: () => unplugTrial(bench, Math.max(windowMs, 4000)) },
    ].filter((k) => !trials || trials.test(k.test));

    await sleep(1500); // past the start's first cycles (all due at once): the schedules' phase is plain to see
    const baseline = await lineTrial(bench, windowMs, () => {}, () => {});
    log(`baseline: ${HEALTHY.map((id, i) => `${id} ${baseline.rates[i]!.toFixed(2)}/s`).join(', ')}`);
    const results = new Map<Kind, Trial[]>();
    for (let r = 0; r < repeats; r++) {
      for (const kind of kinds) {
        let mark = probe.mark();
        let trial = await kind.run();
        log(`${kind.test}: ${describe(trial, baseline).join('; ')}; ${probe.summary(mark)}`);
        // The relay is this process: beside a busy job it can itself sit without a CPU (its latency p99 past
        // RELAY_HELD_MS, up to 430 ms seen), and a healthy unit's rate then measures the relay. Such a miss is
        // tried once more (make test's reduced set only; a collision, a rule broken or a corrupted value never is);
        // a second miss counts, whatever the relay did.
        const rateOnly = trial.violations.length === 0 && trial.problems.length === 0;
        if (reduced && rateOnly && judge(trial, baseline, 0, rateGoal).length > 0 && probe.quantile(mark, 0.99) > RELAY_HELD_MS) {
          log(`${kind.test}: missed with the relay held up (latency p99 ${probe.quantile(mark, 0.99).toFixed(0)} ms > ${RELAY_HELD_MS} ms): once more`);
          mark = probe.mark();
          trial = await kind.run();
          log(`${kind.test} (again): ${describe(trial, baseline).join('; ')}; ${probe.summary(mark)}`);
        }
        results.set(kind, [...(results.get(kind) ?? []), trial]);
      }
    }

    await sleep(500); // the slaves' last "served" lines
    const bad = verify(bench.observer.reports, bench.truth);
    const corruptIn = (t: Trial): typeof bad => bad.filter((b) => b.report.at >= t.from && b.report.at <= t.to);
    const inTrials = new Set([...results.values()].flat().flatMap(corruptIn));
    const elsewhere = bad.filter((b) => !inTrials.has(b));

    const rows: Row[] = [];
    const baseBad = elsewhere.length; // the baseline, the warm-up and the settling between trials
    rows.push({
      test: 'no fault (baseline, same run)', trials: 1, survived: baseBad === 0 && baseline.violations.length === 0 ? 1 : 0,
      lost: `${baseBad} corrupted values`,
      figure: `${HEALTHY.map((id, i) => `${id} ${baseline.rates[i]!.toFixed(2)}`).join(', ')} polls/s (configured ${(1000 / DEVICES[0].pollMs).toFixed(2)}); ${bench.observer.reports.length} cycles checked in all; ${baseline.violations.length} collisions by the gateway`,
      goal: '0 corrupted, 0 collisions by the gateway',
      ok: baseBad === 0 && baseline.violations.length === 0,
      ...(elsewhere.length ? { note: `corrupted outside the trials: ${elsewhere.slice(0, 3).map((b) => b.why).join('; ')}` } : {}),
    });
    for (const [kind, trials] of results) {
      const verdicts = trials.map((t) => judge(t, baseline, corruptIn(t).length, rateGoal));
      const corrupt = trials.reduce((n, t) => n + corruptIn(t).length, 0);
      const notes = [...new Set(verdicts.flat())];
      const examples = trials.flatMap(corruptIn).slice(0, 3).map((b) => b.why);
      rows.push({
        test: kind.test, trials: trials.length, survived: verdicts.filter((v) => v.length === 0).length,
        lost: `${corrupt} corrupted values`, figure: summarize(trials, baseline), goal: kind.goal,
        ok: verdicts.every((v) => v.length === 0),
        ...(notes.length || examples.length ? { note: [...notes, ...examples].join('; ') } : {}),
      });
    }
    wire.confirm();
    const gaps = [...wire.stats.gaps].sort((a, b) => a - b);
    const relay = wire.stats.relayGaps.map((g) => g.toFixed(1));
    const q = (f: number): string => (gaps[Math.floor(f * (gaps.length - 1))] ?? NaN).toFixed(1);
    log(`wire: ${wire.stats.gatewayFrames} gateway frames, ${wire.stats.otherCollisions} simultaneous starts or collisions caused by others; ` +
      `silence before a gateway frame (t3.5 ${wire.t35.toFixed(1)} ms): min ${q(0)}, p1 ${q(0.01)}, median ${q(0.5)} ms; ` +
      `${relay.length} starts within t3.5 of a byte by the wire's clock, by the hop's own times ${relay.length ? relay.slice(0, 12).join(', ') : '-'} ms ` +
      `(${wire.stats.hopHeld} put on the pty after the frame); ${probe.summary()}`);
    return rows;
  } finally {
    await probe.stop();
    await rm(probeDir, { recursive: true, force: true });
    await bench.stop();
    restore(process.pid, ours);
  }
};

/** Why a trial missed its goal (empty when it met it). */
function judge(t: Trial, baseline: Trial, corrupt: number, rateGoal: number): string[] {
  const out = [...t.problems];
  // The goal is of the window the gateway and the relay had a CPU for (beside another job they wait for one; on
  // a machine at rest `lost` is ~0 and the goal is the plain one), widened by what the baseline had beyond it.
  // A cycle whose own frame the fault destroyed is the fault's cost (its retry can fail too: pymodbus drops the
  // retry with the broken request's bytes still in its buffer), not a poll the gateway failed to keep: the goal is
  // of the cycles the fault left alone.
  // Beside another master, of the cycles the line time it left could carry (line-time.ts; 1 on a line of our own).
  const machine = rateGoal * (1 - Math.max(0, t.lost - baseline.lost));
  const carry = carryOf(t.line, baseline);
  t.rates.forEach((r, i) => {
    const ratio = r / baseline.rates[i]!;
    const goal = machine * carry * (1 - (t.hitShare[i] ?? 0));
    if (ratio < goal) {
      out.push(`${HEALTHY[i]} kept ${pct(ratio)} of its poll rate (${r.toFixed(2)}/s vs ${baseline.rates[i]!.toFixed(2)}/s; goal ${pct(goal)}` +
        `${machine < rateGoal ? `, the machine kept the gateway or the relay from a CPU ${pct(t.lost)} of the window vs ${pct(baseline.lost)} in the baseline` : ''}` +
        `${carry < 1 ? `, the line time left carried ${pct(carry)} of the configured cycles` : ''}` +
        `${t.hitShare[i] ? `, ${pct(t.hitShare[i]!)} of its cycles hit by the fault` : ''})`);
    }
  });
  if (t.violations.length) {
    out.push(`the gateway started ${t.violations.length} frames on a frame or within t3.5 of it (${t.violations.slice(0, 5).map((v) => `${v.gapMs.toFixed(1)} ms ` +
      `${v.relayGapMs !== undefined ? `(${v.relayGapMs.toFixed(1)} ms by the hop's times) ` : ''}after byte ${v.bytes} of a ${v.other} frame begun ${v.sinceFirstMs.toFixed(1)} ms before`).join(', ')})`);
  }
  if (corrupt) out.push(`${corrupt} corrupted values reached the shadow`);
  return out;
}

function describe(t: Trial, baseline: Trial): string[] {
  return [
    ...(t.rates.length ? [`${HEALTHY.map((id, i) => `${id} ${pct(t.rates[i]! / baseline.rates[i]!)}${t.hitShare[i] ? ` (${pct(t.hitShare[i]!)} of its cycles hit)` : ''}`).join(', ')} of baseline rate ` +
      `(gateway or relay waiting for a CPU ${pct(t.lost)} of the window, baseline ${pct(baseline.lost)})`] : []),
    ...t.facts,
    ...(t.line.othersMs > 0 ? [lineFacts(t.line, baseline)] : []),
    `${t.faulted} frames hit, bus ${Object.entries(t.metrics).map(([k, v]) => `${k} +${v}`).join(' ')}`,
    `${t.violations.length} collisions by the gateway`,
    ...t.problems.map((p) => `PROBLEM ${p}`),
  ];
}

/** The worst of the trials, in words. */
function summarize(trials: readonly Trial[], baseline: Trial): string {
  const parts: string[] = [];
  if (trials.some((t) => t.rates.length)) {
    parts.push(`healthy ≥ ${pct(Math.min(...trials.flatMap((t) => t.rates.map((r, i) => r / baseline.rates[i]!))))} of baseline rate`);
  }
  const last = trials.at(-1)!;
  parts.push(...last.facts);
  const shared = trials.filter((t) => t.line.othersMs > 0);
  if (shared.length) parts.push(shared.map((t) => lineFacts(t.line, baseline)).join(' / '));
  const hit = trials.reduce((n, t) => n + t.faulted, 0);
  if (hit) parts.push(`${hit} frames hit`);
  const crc = trials.reduce((n, t) => n + (t.metrics['crc_errors'] ?? 0), 0);
  const timeouts = trials.reduce((n, t) => n + (t.metrics['timeouts'] ?? 0), 0);
  parts.push(`${crc} CRC errors, ${timeouts} timeouts seen by the gateway`);
  const others = trials.reduce((n, t) => n + t.others, 0);
  const heldOff = trials.reduce((n, t) => n + t.heldOff, 0);
  const hopHeld = trials.reduce((n, t) => n + t.hopHeld, 0);
  parts.push(`${trials.reduce((n, t) => n + t.violations.length, 0)} collisions by the gateway${others ? ` (${others} simultaneous starts or caused by others)` : ''}` +
    `${heldOff ? `; ${heldOff} more starts while the machine kept the gateway's loop from a CPU, not counted` : ''}` +
    `${hopHeld ? `; ${hopHeld} starts on a byte the socat hop put on the gateway's pty only after its frame, not counted` : ''}`);
  return parts.join('; ');
}

/** The line time another master took, what it left and the gateway's use of it, in words. */
function lineFacts(line: LineTime, baseline: Trial): string {
  const transactionMs = baseline.line.transactionMs;
  const hits = [...line.hits.values()].reduce((a, b) => a + b, 0);
  const carry = carryOf(line, baseline);
  return `others took ${(line.othersMs / 1000).toFixed(2)} s of the ${(line.windowMs / 1000).toFixed(2)} s line (${pct(line.othersMs / line.windowMs)}: ` +
    `another master's transactions, and ${hits} of the gateway's that others garbled), left ${(line.leftMs / 1000).toFixed(2)} s: room for ${pct(carry)} of the configured cycles ` +
    `at ${transactionMs.toFixed(0)} ms + 2 × t3.5 each; the gateway's transactions took ${(line.gatewayMs / 1000).toFixed(2)} s, ${pct(line.gatewayMs / Math.max(1, line.leftMs))} of what was left`;
}

/** The share of the configured cycles `line`'s room carries, a cycle costing the baseline's transaction (line-time.ts). */
const carryOf = (line: LineTime, baseline: Trial): number => carryShare(line, baseline.line.transactionMs, silenceMs(BAUD), DEMAND_PER_S);
