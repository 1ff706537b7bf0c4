/**
 * What a trial's line allowed the gateway, read from the wire's log of frames (wire.ts): a second master that
 * takes its share of a 9600-baud line leaves the gateway's units less line time, so the gateway is judged by the
 * cycles the rest could carry, not by a share of an undisturbed baseline (which would measure the other master's
 * appetite as much as the gateway's fairness). Pure: frames in, figures out.
 *
 * - The other master's line time: each of its requests from its first byte to the end of its answer (the
 *   slave's next frame, before anyone else's request), then t3.5; unanswered, to the end of the answer window
 *   the gateway leaves it (a master waits that long before it takes the line again).
 * - The gateway's transactions the others destroyed: a request or its answer garbled by a frame someone else
 *   began (the other master talking into it, or a start together with the gateway's, which no master avoids: the
 *   wire's judge marks those `together`), or an answer the rig cut in two (it waited for a CPU while handing it on).
 *   Such a transaction's time, up to its answer or its timeout, is the other master's too, and its cycle is
 *   counted as that unit's cycle hit, as a fault's hits are.
 * - What is left is the window less the union of those spans; it carries `left / cycleMs` cycles, where a
 *   cycle costs the gateway's own transaction (request to the end of the answer, as measured in the baseline)
 *   and the silence a shared line asks before the next frame (2 × t3.5, rtu-line.ts).
 */
import type { Sender, Tx } from './wire.js';

export interface LineTime {
  windowMs: number;
  /** Line time the other master's transactions took, and the gateway's transactions they destroyed. */
  othersMs: number;
  /** What the others left: the window less those spans. */
  leftMs: number;
  /** The gateway's own transactions' line time (request to the end of its answer, or of the request). */
  gatewayMs: number;
  /** The gateway's transactions by unit, and those of them the others destroyed. */
  transactions: Map<number, number>;
  hits: Map<number, number>;
  /** The median of the gateway's transactions that were answered whole (request start to answer end), ms. */
  transactionMs: number;
}

export interface LineRules {
  t35: number;
  /** How long the gateway waits for an answer: its own, and another master's request's (rtu-line.ts answerWaitMs). */
  timeoutMs: number;
}

interface Span {
  from: number;
  to: number;
}

const others = (s: Sender | null): boolean => s !== null && s !== 'gateway';

/** The answer to the request at `i`: the slave's next frame, begun before any other request and within `wait`. */
function answerOf(frames: readonly Tx[], i: number, wait: number): Tx | null {
  const req = frames[i]!;
  for (let k = i + 1; k < frames.length; k++) {
    const f = frames[k]!;
    if (f.start > req.end + wait) return null;
    if (f.from === 'slave') return f.start >= req.end ? f : null;
    return null; // another request came first
  }
  return null;
}

function union(spans: Span[], from: number, to: number): number {
  const clipped = spans.map((s) => ({ from: Math.max(from, s.from), to: Math.min(to, s.to) })).filter((s) => s.to > s.from).sort((a, b) => a.from - b.from);
  let total = 0;
  let end = -Infinity;
  for (const s of clipped) {
    if (s.to <= end) continue;
    total += s.to - Math.max(s.from, end);
    end = s.to;
  }
  return total;
}

/** The line time of [from, to) in `frames` (in order of their start). */
export function lineTime(frames: readonly Tx[], from: number, to: number, rules: LineRules): LineTime {
  const taken: Span[] = [];
  const transactions = new Map<number, number>();
  const hits = new Map<number, number>();
  const answered: number[] = [];
  let gatewayMs = 0;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i]!;
    if (f.start < from || f.start >= to || f.from === 'slave') continue;
    if (f.from === 'master2') {
      const answer = answerOf(frames, i, rules.timeoutMs);
      taken.push({ from: f.start, to: answer ? answer.end + rules.t35 : f.end + rules.timeoutMs });
      continue;
    }
    const unit = f.bytes[0]!;
    const answer = answerOf(frames, i, rules.timeoutMs);
    const end = answer ? answer.end : f.end;
    gatewayMs += end - f.start;
    transactions.set(unit, (transactions.get(unit) ?? 0) + 1);
    // The gateway never talks inside its own transaction: an answer garbled was garbled by someone else (or cut
    // by the rig that plays the line, waiting for a CPU in the middle of handing it over: not the gateway's either).
    const hit = others(f.hitBy) || (f.hitBy !== null && f.together === true) || (answer !== null && (answer.garbledFrom !== null || answer.splitByRelay === true));
    if (hit) {
      hits.set(unit, (hits.get(unit) ?? 0) + 1);
      taken.push({ from: f.start, to: answer ? answer.end + rules.t35 : f.end + rules.timeoutMs });
    } else if (answer && answer.garbledFrom === null && f.garbledFrom === null) {
      answered.push(answer.end - f.start);
    }
  }
  const windowMs = Math.max(0, to - from);
  const othersMs = union(taken, from, to);
  answered.sort((a, b) => a - b);
  return {
    windowMs, othersMs, leftMs: windowMs - othersMs, gatewayMs, transactions, hits,
    transactionMs: answered.length ? answered[answered.length >> 1]! : NaN,
  };
}

/**
 * The share of the configured cycles (`demandPerS`, every device's together) the left line time could carry,
 * at most 1: each cycle costing `transactionMs` (the baseline's) and the 2 × t3.5 a shared line leaves after it.
 */
export function carryShare(line: LineTime, transactionMs: number, t35: number, demandPerS: number): number {
  if (!(transactionMs > 0) || line.windowMs <= 0) return 1;
  const carried = line.leftMs / (transactionMs + 2 * t35);
  return Math.min(1, carried / ((demandPerS * line.windowMs) / 1000));
}
