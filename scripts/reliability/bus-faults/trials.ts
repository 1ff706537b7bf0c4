/**
 * One trial of each kind of bus fault on the bench, measured from outside the gateway: poll rates of the
 * healthy units from the data events, offline/online from the offline events and the first report after a
 * unit is back, collisions at the wire. Each trial ends once every device is polled again.
 */
import { Bench, DEVICES, HEALTHY, TIMEOUT_MS } from './bench.js';
import { sleep, waitFor } from './procs.js';
import { lineTime, type LineTime } from './line-time.js';
import type { Violation } from './wire.js';
import { schedOf } from '../soak/sampler.js';

export interface Trial {
  /** Span the trial's reports belong to (for corrupted values), ms on this process's clock. */
  from: number;
  to: number;
  /** Each healthy unit's poll rate during the fault, per second. */
  rates: number[];
  /** Gateway frames that started on (or within t3.5 of) a frame it had heard. */
  violations: Violation[];
  faulted: number;
  /**
   * Each healthy unit's own frames hit, as a share of the cycles its schedule holds in the window: a cycle
   * whose request or answer the fault (or another master's frame) destroyed is the fault's cost, not a poll the
   * gateway failed to keep.
   */
  hitShare: number[];
  /** What the line allowed the gateway in the window (line-time.ts): another master's time and what it left. */
  line: LineTime;
  /** Simultaneous starts and collisions another sender caused, at the wire. */
  others: number;
  /** Starts on a heard frame while the gateway's loop waited for a CPU (wire.ts): the machine's load, not counted. */
  heldOff: number;
  /** Starts the wire saw on a byte the socat hop put on the gateway's pty only after its frame (wire.ts): not counted. */
  hopHeld: number;
  /**
   * Share of the fault's window the machine kept the gateway's event loop or the relay (this process's loop)
   * from a CPU, the larger of the two: polls it could not run or relay, through no fault of the gateway.
   */
  lost: number;
  metrics: Record<string, number>;
  /** What went wrong with the rules (offline, back online); empty when they held. */
  problems: string[];
  /** Figures in words for the row. */
  facts: string[];
}

const SETTLE_MS = 40_000;

/** ms the gateway's loop and the relay's (this process) have waited for a CPU so far (0 where the kernel does not say). */
const cpuWaits = (bench: Bench): number[] => [bench.wire.gatewayPid, process.pid].map((pid) => (pid ? schedOf(pid)?.waitMs ?? 0 : 0));

async function measure(bench: Bench, fault: () => Promise<{ from: number; to: number; facts?: string[]; problems?: string[] }>): Promise<Trial> {
  const m0 = await bench.metrics();
  const v0 = bench.wire.stats.gatewayViolations.length;
  const f0 = bench.wire.stats.faulted;
  const hits = (): number[] => HEALTHY.map((id) => bench.wire.stats.hitsOf.get(DEVICES.find((d) => d.id === id)!.unit) ?? 0);
  const hit0 = hits();
  const o0 = bench.wire.stats.otherCollisions;
  const h0 = bench.wire.stats.heldOff;
  const hh0 = bench.wire.stats.hopHeld;
  // ms each loop has waited for a CPU so far (0 where the kernel does not say): the gateway's, and the relay's (ours).
  const w0 = cpuWaits(bench);
  const start = performance.now();
  const { from, to, facts = [], problems = [] } = await fault();
  const w1 = cpuWaits(bench);
  const hit1 = hits();
  const m1 = await bench.metrics();
  await bench.settle(SETTLE_MS).catch(() => problems.push(`not every device polled again ${SETTLE_MS / 1000} s after the fault`));
  await sleep(500); // cycles made up after the fault stay out of the next trial's window
  bench.wire.confirm(); // the hop's times of this window have come in by now
  const metrics = Object.fromEntries(Object.entries(m1).map(([k, v]) => [k, v - (m0[k] ?? 0)]));
  const line = lineTime(bench.wire.frames, from, to, { t35: bench.wire.t35, timeoutMs: TIMEOUT_MS });
  const lineHits = (id: string): number => line.hits.get(DEVICES.find((d) => d.id === id)!.unit) ?? 0;
  return {
    from: start, to: performance.now(), rates: to > from ? HEALTHY.map((id) => bench.observer.rate(id, pollOf(id), from, to)) : [],
    violations: bench.wire.stats.gatewayViolations.slice(v0), faulted: bench.wire.stats.faulted - f0,
    hitShare: HEALTHY.map((id, i) => (to > from ? Math.min(1, (hit1[i]! - hit0[i]! + lineHits(id)) / ((to - from) / pollOf(id))) : 0)), line,
    others: bench.wire.stats.otherCollisions - o0,
    heldOff: bench.wire.stats.heldOff - h0, hopHeld: bench.wire.stats.hopHeld - hh0, lost: to > from ? Math.min(1, Math.max(0, ...w1.map((w, i) => w - w0[i]!)) / (to - from)) : 0,
    metrics, problems, facts,
  };
}

/** A fault on the line for `ms`: `on` starts it, `off` ends it. */
export function lineTrial(bench: Bench, ms: number, on: () => void, off: () => void): Promise<Trial> {
  return measure(bench, async () => {
    const from = performance.now();
    on();
    await sleep(ms);
    off();
    return { from, to: performance.now() };
  });
}

const pollOf = (id: string): number => DEVICES.find((d) => d.id === id)!.pollMs;

/**
 * Offline by the rules: an offline event with reason "failures" (three failed cycles, docs/shadow.md),
 * not before the second failed cycle could have run and not later than three cycles that each ran into
 * a timeout and its retry.
 */
function offlineByRules(bench: Bench, id: string, since: number, until: number): { problem?: string; fact: string } {
  const poll = pollOf(id);
  const off = bench.observer.offline.find((o) => o.device === id && o.at >= since && o.at <= until);
  if (!off) return { problem: `${id} never went offline`, fact: `${id} stayed online` };
  const after = off.at - since;
  const latest = 3 * (poll + 2 * (TIMEOUT_MS + 50)) + 1000;
  const fact = `${id} offline (${off.reason}) after ${(after / 1000).toFixed(1)} s`;
  if (off.reason !== 'failures') return { problem: `${id} went offline by ${off.reason}, not by its failures`, fact };
  if (after < poll || after > latest) return { problem: `${id} offline after ${Math.round(after)} ms (rules: ${poll}..${latest} ms)`, fact };
  return { fact };
}


/**
 * Back within two cycles: the first report after `since` comes at most two poll intervals later — plus what
 * the machine kept the gateway, the relay or a slave from a CPU meanwhile (beside another job; ~0 at rest).
 */
async function backWithinTwoCycles(bench: Bench, id: string, since: number): Promise<{ problem?: string; fact: string; at: number }> {
  const poll = pollOf(id);
  // The answer's path holds the slaves too: a slave just started is a Python process that beside a hog waits
  // for a CPU before its first answer like the gateway does.
  const waits = (): number[] => [...cpuWaits(bench), ...bench.slavePids().map((pid) => (pid ? schedOf(pid)?.waitMs ?? 0 : 0))];
  const w0 = waits();
  let first = null as ReturnType<typeof bench.observer.firstReport>;
  await waitFor(`${id} back`, () => (first = bench.observer.firstReport(id, since)) !== null, SETTLE_MS + 30_000).catch(() => {});
  if (!first) return { problem: `${id} not back after ${(SETTLE_MS + 30_000) / 1000} s`, fact: `${id} not back`, at: performance.now() };
  const waited = Math.max(0, ...waits().map((w, i) => w - w0[i]!));
  const after = first.at - since;
  const fact = `${id} back ${(after / 1000).toFixed(2)} s (${(after / poll).toFixed(1)} cycles) after`;
  const late = after > 2 * poll + waited;
  return { ...(late ? { problem: `${id} back after ${(after / poll).toFixed(1)} cycles (${Math.round(after)} ms, poll ${poll} ms; ${Math.round(waited)} ms waiting for a CPU)` } : {}), fact, at: first.at };
}

/** Unit 3's slave process is killed, stays dead for `ms`, and is started again. */
export function dieTrial(bench: Bench, ms: number): Promise<Trial> {
  return measure(bench, async () => {
    const killed = await bench.killSlave3();
    await sleep(ms);
    const revived = await bench.startSlave3();
    const off = offlineByRules(bench, 'u3', killed, revived);
    const back = await backWithinTwoCycles(bench, 'u3', revived);
    return {
      from: killed, to: Math.max(back.at, revived + 1000),
      facts: [off.fact, `${back.fact} revival`],
      problems: [off.problem, back.problem].filter((p): p is string => p !== undefined),
    };
  });
}

/** The gateway's pty vanishes for `ms` and comes back under the same name. */
export function unplugTrial(bench: Bench, ms: number): Promise<Trial> {
  return measure(bench, async () => {
    const out = await bench.unplug();
    await sleep(ms);
    const back = await bench.replug();
    const offs = DEVICES.map((d) => offlineByRules(bench, d.id, out, back));
    const ons = await Promise.all(DEVICES.map((d) => backWithinTwoCycles(bench, d.id, back)));
    return {
      from: out, to: out, // no healthy unit while the line is gone: no poll rate to keep
      facts: [...offs.map((o) => o.fact), ...ons.map((o) => `${o.fact} re-plug`)],
      problems: [...offs, ...ons].map((o) => o.problem).filter((p): p is string => p !== undefined),
    };
  });
}
