/**
 * The bus-fault campaign's judges on made-up frames: what the line left the gateway beside a second master
 * (line-time.ts), and the socat hop's own transfer times read from its log (hop-log.ts). Pure; no line runs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { carryShare, lineTime } from '../../scripts/reliability/bus-faults/line-time.js';
import { HopLog } from '../../scripts/reliability/bus-faults/hop-log.js';
import type { Sender, Tx } from '../../scripts/reliability/bus-faults/wire.js';

const CHAR = 11_000 / 9600;
const T35 = 3.5 * CHAR;
const RULES = { t35: T35, timeoutMs: 300 };

/** A frame of `n` bytes for `unit` from `from`, begun at `start` ms. */
function frame(from: Sender, unit: number, start: number, n: number, more: Partial<Tx> = {}): Tx {
  const bytes = Buffer.alloc(n, 0);
  bytes[0] = unit;
  return { from, bytes, start, end: start + n * CHAR, garbledFrom: null, hitBy: null, ...more };
}

/** A read of 10 registers and its answer: 8 bytes, a 5 ms turnaround, 25 bytes (~43 ms in all). */
function cycle(from: Sender, unit: number, at: number, answer: Partial<Tx> = {}, request: Partial<Tx> = {}): Tx[] {
  const req = frame(from, unit, at, 8, request);
  return [req, frame('slave', unit, req.end + 5, 25, answer)];
}

test('alone on the line: nothing taken, every transaction the gateway\'s, the median transaction measured', () => {
  const frames = [0, 250, 500, 750].flatMap((t) => cycle('gateway', 1, t));
  const line = lineTime(frames, 0, 1000, RULES);
  assert.is(line.othersMs, 0);
  assert.is(line.leftMs, 1000);
  assert.is(line.transactions.get(1), 4);
  assert.is(line.hits.size, 0);
  assert.ok(Math.abs(line.transactionMs - (33 * CHAR + 5)) < 1e-9, `${line.transactionMs}`);
  assert.is(carryShare(line, line.transactionMs, T35, 9), 1, 'a line of our own carries every configured cycle');
});

test('a second master\'s requests and their answers are its time; an unanswered one holds the line its answer window', () => {
  const answered = cycle('master2', 2, 100);
  const unanswered = frame('master2', 1, 600, 8);
  const line = lineTime([...answered, unanswered], 0, 1000, RULES);
  const first = answered[1]!.end + T35 - 100;
  const second = 8 * CHAR + 300;
  assert.ok(Math.abs(line.othersMs - (first + second)) < 1e-9, `${line.othersMs} vs ${first + second}`);
  assert.ok(Math.abs(line.leftMs - (1000 - first - second)) < 1e-9);
});

test('the gateway\'s transactions the other master garbled are its time and that unit\'s hits; those the gateway garbled are not', () => {
  const byOther = cycle('gateway', 1, 0, { garbledFrom: 30, hitBy: 'master2' });
  const together = cycle('gateway', 2, 200, {}, { garbledFrom: 200, hitBy: 'gateway', together: true });
  const byGateway = cycle('gateway', 1, 400, {}, { garbledFrom: 400, hitBy: 'gateway' }); // it talked into a frame
  const cut = cycle('gateway', 2, 600, { splitByRelay: true });
  const line = lineTime([...byOther, ...together, ...byGateway, ...cut], 0, 1000, RULES);
  assert.is(line.hits.get(1), 1, 'unit 1: the other master\'s only');
  assert.is(line.hits.get(2), 2, 'unit 2: the start together and the answer the rig cut');
  assert.ok(line.othersMs > 3 * 40 && line.othersMs < 3 * 50, `three transactions taken: ${line.othersMs}`);
});

test('the cycles the left line time carries: a share of the configured ones, at most all', () => {
  // 1,000 ms, 700 taken: 300 ms carries 300 / (43 + 8) = 5.9 cycles of the 9 configured.
  const line = { windowMs: 1000, othersMs: 700, leftMs: 300, gatewayMs: 0, transactions: new Map(), hits: new Map(), transactionMs: 43 };
  const share = carryShare(line, 43, T35, 9);
  assert.ok(Math.abs(share - 300 / (43 + 2 * T35) / 9) < 1e-9, `${share}`);
  assert.is(carryShare({ ...line, othersMs: 0, leftMs: 1000 }, 43, T35, 9), 1);
  assert.is(carryShare(line, NaN, T35, 9), 1, 'no baseline transaction measured: no widening');
});

test('frames outside the window do not count', () => {
  const frames = [...cycle('master2', 2, -500), ...cycle('gateway', 1, 100), ...cycle('master2', 1, 2000)];
  const line = lineTime(frames, 0, 1000, RULES);
  assert.is(line.othersMs, 0);
  assert.is(line.transactions.get(1), 1);
});

test('socat\'s transfer headers: direction, length and time on this process\'s clock, in µs (1.7) or ns (1.8) digits', () => {
  const log = new HopLog();
  const wall = Math.floor(performance.timeOrigin + performance.now() - 2000); // two seconds ago, whole ms
  const d = new Date(wall);
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const head = `${d.getFullYear()}/${p2(d.getMonth() + 1)}/${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  const ms = d.getMilliseconds();
  const micro = `000${String(ms * 1000 + 250).padStart(6, '0')}`; // socat 1.7.4: microseconds in nine digits
  const nano = String(ms * 1_000_000 + 250_000).padStart(9, '0');
  const want = wall - performance.timeOrigin;
  // Received a millisecond after socat wrote it, in two pieces that split a header.
  log.feed(`> ${head}.${micro}  length=2 from=0 to=1\n 01 02\n--\n< ${head}.${nano}  length=`, want + 1);
  log.feed('1 from=2 to=2\n 03\n--\n', want + 1);
  assert.is(log.transfers.length, 2);
  const [out, into] = log.transfers;
  assert.is(out!.dir, '>');
  assert.is(out!.length, 2);
  assert.is(into!.dir, '<');
  assert.is(into!.length, 1);
  assert.ok(Math.abs(out!.at - (want + 0.25)) < 0.01, `µs digits: ${out!.at} vs ${want}`);
  assert.ok(Math.abs(into!.at - (want + 0.25)) < 0.01, `ns digits: ${into!.at} vs ${want}`);
  assert.is(log.lastBefore('>', want + 1), out);
  assert.is(log.firstAfter('<', want), into);
  assert.is(log.lastBefore('<', want), null);
});

test.run();
