/**
 * Bad input against the real gateway (issue 15 item 4): seeded REST fuzzing (every route of docs/rest.md,
 * mutated methods, paths, queries, bodies, headers, lying lengths, slow bodies), many connections at once
 * and slowloris ones, bad MQTT `set` payloads from a writer, malformed MQTT packets over raw TCP, malformed
 * and oversized WebSocket frames. Goals: 0 crashes, every HTTP answer an envelope, nothing written by a
 * refused set, every malformed connection closed, RSS growth < 10 % (the full run; the reduced one judges the
 * growth over a third round, see trendRow), and the shadow still right afterwards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorSummary, escapedLines, fatalLines, healthProblems, versionCount, writeMarks } from './bad-input/checks.js';
import { demoConfig, makeSecrets, startGateway, unitRuntime, type Gateway, type Secrets } from './bad-input/gateway.js';
import { malformedPackets, runBadSets, sendMalformed } from './bad-input/mqtt-bad.js';
import { burst, runFuzz, slowloris, type Slow } from './bad-input/rest-phase.js';
import { sendWsCase, wsCases } from './bad-input/ws-bad.js';
import type { Campaign, Row } from './table.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export interface Mem { rss: number; heap: number }
/**
 * RSS and the V8 heap's used bytes after a full collection (through the inspector: V8's own idle collection
 * comes 8–20 s after the load stops, at no predictable moment) and a moment for freed pages to go.
 */
async function settled(gw: Gateway): Promise<Mem> {
  const heap = await gw.gc();
  await sleep(500);
  return { rss: gw.rss(), heap };
}
/**
 * Bounds on the growth over the last round, above what noise reaches. Measured on 2 cores, 12 reduced runs
 * (6 of them two at a time, load 13): RSS after round 1 vs. the warm-up +0.2% to +6.0% (the old single-round
 * check's figure; a fresh-clone CI run read +10.8%), but round 2 → 3 −0.2 to +0.4 MiB in 11 runs and +2.5 MiB
 * in one; the V8 heap used −0.2 to +0.2 MiB. Over 8 rounds the heap settles (+0.6, then +0.1 or less per
 * round; idle, +0.02 MiB per 15 s): the gateway keeps no memory per bad input. RSS: ~10% of the ~80 MiB base,
 * 3× the largest step seen; heap: 5× its largest step, so a leak of 1 MiB per 1,000 bad requests fails.
 */
const TREND_RSS_MIB = 8;
const TREND_HEAP_MIB = 1;
/** The growth over the last round (MiB) and whether it stays under the bounds. */
export function memoryTrend(mems: readonly Mem[]): { rssStep: number; heapStep: number; ok: boolean } {
  if (mems.length < 2) return { rssStep: NaN, heapStep: NaN, ok: false };
  const [a, b] = mems.slice(-2) as [Mem, Mem];
  const rssStep = (b.rss - a.rss) / 2 ** 20;
  const heapStep = (b.heap - a.heap) / 2 ** 20;
  return { rssStep, heapStep, ok: rssStep < TREND_RSS_MIB && heapStep < TREND_HEAP_MIB };
}
const MiB = (b: number): string => (b / 2 ** 20).toFixed(1);
const pct = (a: number, b: number): string => `${b >= a ? '+' : ''}${((b / a - 1) * 100).toFixed(1)}%`;

/** Runs tasks with at most `width` in flight. */
async function pool<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  }));
  return out;
}

/** The MQTT and WebSocket phases together (independent of each other; the REST fuzz is over: no write races). */
async function mqttAndWs(gw: Gateway, s: Secrets, seed: number, n: Sizes): Promise<Row[]> {
  const before = await writeMarks(gw.http);
  const packets = malformedPackets(seed, n.garbage);
  const ws = Array.from({ length: n.wsRepeat }, () => wsCases()).flat();
  const [sets, closed, wsOut] = await Promise.all([
    runBadSets(gw.mqtt, s.writer, seed, n.sets),
    pool(packets, 3, (m) => sendMalformed(gw.mqtt, m)),
    pool(ws, 3, (c) => sendWsCase(c.target === 'mqtt' ? gw.mqttWs : gw.http, c.target === 'mqtt' ? '/mqtt' : '/api/v1/ws', c)),
  ]);
  const written = before === await writeMarks(gw.http) ? 0 : 1;
  const open = packets.filter((_, i) => !closed[i]!.closed).map((m) => m.what);
  const wsBad = ws.filter((c, i) => !wsOut[i]!.closed || (c.upgrade !== undefined) === wsOut[i]!.upgraded).map((c) => c.what);
  return [{
    test: `MQTT: bad set payloads (seed ${seed})`, trials: n.sets, survived: sets.refused, lost: written ? 'write values changed' : '0 writes',
    figure: `${sets.refused}/${n.sets} answered success false on set/result`, goal: 'every one refused, nothing written',
    ok: sets.refused === n.sets && written === 0 && gw.alive(), ...(sets.problems.length ? { note: sets.problems.join('; ') } : {}),
  }, {
    test: 'MQTT: malformed packets (raw TCP)', trials: packets.length, survived: packets.length - open.length, lost: `${open.length} left open`,
    figure: `${packets.length - open.length}/${packets.length} closed by the broker ≤ 5 s`, goal: 'each connection closed, broker alive',
    ok: open.length === 0 && gw.alive(), ...(open.length ? { note: `still open: ${open.slice(0, 6).join(', ')}` } : {}),
  }, {
    test: 'WebSocket: malformed and oversized frames', trials: ws.length, survived: ws.length - wsBad.length, lost: `${wsBad.length} left open`,
    figure: `${ws.length - wsBad.length}/${ws.length} closed by the server ≤ 5 s`, goal: 'each connection closed, process alive',
    ok: wsBad.length === 0 && gw.alive(), ...(wsBad.length ? { note: `not closed: ${[...new Set(wsBad)].join(', ')}; the event stream and MQTT over WebSocket` } : {}),
  }];
}

/** Slowloris: the full run waits for the server to cut them (Node checks its timeouts every 30 s). */
async function slowRow(slow: Slow, reduced: boolean): Promise<Row> {
  if (!reduced) {
    const until = performance.now() + 75_000;
    while (slow.open() > 0 && performance.now() < until) await sleep(500);
  }
  const held = slow.results();
  slow.stop();
  const cut = held.filter((h) => h.closedAfterMs !== null);
  const badAnswer = held.filter((h) => h.answer === 'other').length;
  const slowest = Math.max(0, ...cut.map((h) => h.closedAfterMs!)) / 1000;
  return {
    test: 'REST: slowloris (headers never end, body never comes)', trials: held.length,
    survived: reduced ? held.length - badAnswer : cut.length - badAnswer, lost: `${badAnswer} non-envelope answers`,
    figure: reduced ? `${held.length} held open through the fuzz run; ${cut.length} cut by the server by then`
      : `${cut.length}/${held.length} cut by the server, the last after ${slowest.toFixed(0)} s`,
    goal: reduced ? 'others served meanwhile, answers are envelopes' : 'all cut ≤ 75 s (10 s headers / 30 s request timeout), others served',
    ok: badAnswer === 0 && (reduced || cut.length === held.length),
    note: `${held.filter((h) => h.answer === 'envelope').length} got a 408 envelope before the close`,
  };
}

/**
 * The reduced set's memory check: RSS after one round of bad input against a warm-up says little at this
 * size (the allocators' noise alone, run to run, spans more than 10% of ~80 MiB), so it runs two more plain
 * rounds (fuzz, burst, MQTT, WebSocket; new seeds) and judges the growth from round 2 to round 3, after a
 * full GC each: memory kept per bad input grows every round, allocator and cache sizing does not.
 */
async function trendRow(gw: Gateway, s: Secrets, seed: number, n: Sizes, mems: Mem[], freshNote: string): Promise<Row> {
  const problems: string[] = [];
  const tokens = { write: s.writeToken, read: s.readToken };
  // More rounds for a closer look (SHADOWGATE_BAD_INPUT_ROUNDS=8): the judged step is always the last one.
  const last = Math.max(3, Number(process.env.SHADOWGATE_BAD_INPUT_ROUNDS ?? 3) || 3);
  for (let r = 2; r <= last; r++) {
    const fuzz = await runFuzz(gw.http, seed + 100 * r, n.rest, tokens, 16);
    const many = await burst(gw.http, n.burst);
    const more = await mqttAndWs(gw, s, seed + 100 * r, n);
    if (fuzz.bad) problems.push(`round ${r}: ${fuzz.bad} non-envelope answers`);
    if (many.ok !== n.burst) problems.push(`round ${r}: ${n.burst - many.ok} of the burst unanswered`);
    problems.push(...more.filter((x) => !x.ok).map((x) => `round ${r}: ${x.test}: ${x.figure}`));
    mems.push(gw.alive() ? await settled(gw) : { rss: NaN, heap: NaN });
  }
  const r1 = mems[1]!;
  const { rssStep, heapStep, ok: flat } = memoryTrend(mems);
  const ok = flat && problems.length === 0;
  return {
    test: `Memory over ${last} rounds of bad input (after a full GC each)`, trials: last, survived: ok ? last : 0, lost: '-',
    figure: `RSS ${mems.map((m) => MiB(m.rss)).join(' → ')} MiB (round ${last - 1} → ${last}: ${rssStep >= 0 ? '+' : ''}${rssStep.toFixed(1)} MiB); `
      + `V8 heap used ${mems.map((m) => MiB(m.heap)).join(' → ')} MiB (${heapStep >= 0 ? '+' : ''}${heapStep.toFixed(1)} MiB)`,
    goal: `last round: RSS < +${TREND_RSS_MIB} MiB, heap < +${TREND_HEAP_MIB} MiB`,
    ok,
    note: `${problems.length ? `${problems.join('; ')}; ` : ''}round 1 vs. warm-up ${pct(mems[0]!.rss, r1.rss)} (the full campaign's goal is < +10%); ${freshNote}`,
  };
}

interface Sizes { rest: number; burst: number; slowHeaders: number; slowBodies: number; sets: number; garbage: number; wsRepeat: number }

export const badInput: Campaign = async ({ reduced, log }) => {
  const seed = Number(process.env.SHADOWGATE_FUZZ_SEED ?? Date.now() % 1_000_000);
  const n: Sizes = reduced
    ? { rest: 1000, burst: 100, slowHeaders: 10, slowBodies: 5, sets: 100, garbage: 10, wsRepeat: 1 }
    : { rest: 10_000, burst: 500, slowHeaders: 40, slowBodies: 20, sets: 1000, garbage: 100, wsRepeat: 10 };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bad-input-'));
  const s = makeSecrets('bad');
  let gw: Gateway | undefined;
  let slow: Slow | undefined;
  const rows: Row[] = [];
  const tokens = (): { write: string; read: string } => ({ write: s.writeToken, read: s.readToken });
  try {
    // As the systemd unit runs it (its node flags and environment), plus a loopback inspector for gc().
    const unit = await unitRuntime();
    gw = await startGateway(dir, await demoConfig(dir, s), { ...unit, inspect: true });
    const pid = gw.pid;
    log(`seed ${seed}; gateway pid ${pid}, http ${gw.http}, mqtt ${gw.mqtt}, mqtt-ws ${gw.mqttWs}; ${unit.nodeArgs.join(' ')} ${Object.entries(unit.env).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    // Warm-up: a round of every phase with another seed, so first-use costs — code paged in, JIT, V8 and malloc
    // sizing themselves for megabyte inputs, mqtt-packet's 6 MB number cache on the first MQTT client — are in
    // the baseline (the fresh-start figure is in the note).
    await sleep(1000);
    const fresh = await settled(gw);
    await Promise.all([
      runFuzz(gw.http, seed + 1, reduced ? 500 : 1000, tokens(), 16),
      mqttAndWs(gw, s, seed + 1, { ...n, sets: reduced ? 50 : 100, garbage: 4, wsRepeat: 1 }),
    ]);
    const versions = await versionCount(gw.http, s);
    const mem0 = await settled(gw);

    // REST, with slowloris connections held open meanwhile: the fuzz run must go on regardless.
    slow = slowloris(gw.http, n.slowHeaders, n.slowBodies);
    const t0 = performance.now();
    const fuzz = await runFuzz(gw.http, seed, n.rest, tokens(), 16);
    const fuzzS = (performance.now() - t0) / 1000;
    const many = await burst(gw.http, n.burst);
    const statuses = [...fuzz.statuses].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}×${v}`).join(' ');
    log(`REST: ${fuzz.sent} in ${fuzzS.toFixed(0)} s, ${fuzz.good} good, ${fuzz.unanswered} unanswered, ${fuzz.bad} bad; ${statuses}`);
    rows.push({
      test: `REST fuzz (seed ${seed})`, trials: fuzz.sent, survived: fuzz.good + fuzz.unanswered, lost: `${fuzz.bad} non-envelope answers`,
      figure: `${fuzz.good} envelopes, ${fuzz.unanswered} closed unanswered (garbage, lying lengths)`, goal: '0 crashes, every answer an envelope',
      ok: fuzz.bad === 0 && fuzz.sent === n.rest && gw.alive(),
      note: `statuses ${statuses}; ${fuzzS.toFixed(0)} s${fuzz.problems.length ? `; ${fuzz.problems.join('; ')}` : ''}`,
    }, {
      test: 'REST: connections opened at once', trials: n.burst, survived: many.ok, lost: `${n.burst - many.ok} unanswered`,
      figure: `${many.ok}/${n.burst} answered 200 envelopes`, goal: 'every one answered', ok: many.ok === n.burst,
      ...(many.problems.length ? { note: many.problems.join('; ') } : {}),
    });
    const mqttWs = await mqttAndWs(gw, s, seed, n);
    rows.push(await slowRow(slow, reduced), ...mqttWs);

    // Afterwards: same process, still right, memory back.
    const problems = await healthProblems(gw, s, pid, versions);
    const mem1 = gw.alive() ? await settled(gw) : { rss: NaN, heap: NaN };
    const growth = mem1.rss / mem0.rss - 1;
    const freshNote = `fresh start ${MiB(fresh.rss)} MiB (${pct(fresh.rss, mem1.rss)} vs. that): the warm-up round pays the first-use costs`;
    if (!reduced) {
      rows.push({
        test: 'RSS after all bad input (after a full GC)', trials: 1, survived: growth < 0.1 ? 1 : 0, lost: '-',
        figure: `RSS ${MiB(mem0.rss)} → ${MiB(mem1.rss)} MiB (${pct(mem0.rss, mem1.rss)})`, goal: '< +10% (vs. after a warm-up round)', ok: growth < 0.1,
        note: `${freshNote}; V8 heap used ${MiB(mem0.heap)} → ${MiB(mem1.heap)} MiB`,
      });
    } else {
      rows.push(await trendRow(gw, s, seed, n, [mem0, mem1], freshNote));
    }
    const fatal = [...fatalLines(gw.lines), ...escapedLines(gw.lines)];
    rows.push({
      test: 'gateway after bad input', trials: 1, survived: problems.length === 0 && fatal.length === 0 ? 1 : 0, lost: `${problems.length} problems`,
      figure: `same pid ${gw.alive() && gw.pid === pid ? 'alive' : 'GONE'}, shadow, write read-back, retained state, config ${problems.length ? 'NOT ok' : 'ok'}`,
      goal: '0 crashes, 0 errors escaping a handler, shadow still right', ok: problems.length === 0 && fatal.length === 0,
      note: [...problems, ...fatal.slice(0, 3), errorSummary(gw.lines)].join('; '),
    });
    return rows;
  } catch (err) {
    // What the gateway said last is what a maintainer needs when a phase could not go on.
    const tail = gw ? [...fatalLines(gw.lines), gw.stderr().slice(-1500), `exit ${gw.child.exitCode ?? gw.child.signalCode ?? 'running'}`].join('\n') : '';
    throw new Error(`${(err as Error).message}\n${tail}`, { cause: err });
  } finally {
    slow?.stop();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
