/**
 * The master's answer finder on bytes, with no port: what it makes of each transaction's bytes and when they
 * came — an answer whole or in pieces, noise before it, another master's frames before it, our own late
 * answer, our adapter's echo, a bad CRC ended by silence — and what it hands back as line traffic after.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AnswerFinder } from '../../src/drivers/modbus/answer-finder.js';
import { rtuFrame } from '../../src/protocol/modbus/frame.js';
import { charMs, silenceMs } from '../../src/protocol/modbus/wire-cost.js';

/** Unit, PDU and CRC (the CRC itself is checked against the spec's in modbus-line-listener.test.ts). */
const frame = (unit: number, ...pdu: number[]): Buffer => Buffer.from(rtuFrame(unit, Uint8Array.from(pdu)));
const request = frame(1, 3, 0, 0, 0, 2);
const answer = frame(1, 3, 4, 0, 7, 0, 8);
const t35 = silenceMs(9600);

interface Seen { answers: number[][]; refusals: string[]; echoes: string[] }

/** A finder in a transaction for `request`, and what it told. */
function transaction(options: { echo?: boolean | 'auto'; ownLate?: (bytes: Uint8Array) => boolean; answerIsLate?: (n: number) => boolean } = {}): { f: AnswerFinder; seen: Seen; feed: (bytes: Uint8Array, at: number) => void } {
  const f = new AnswerFinder('/dev/ttyTEST', { t35, charMs: charMs(9600), frameGapMs: 50 }, options.echo);
  const seen: Seen = { answers: [], refusals: [], echoes: [] };
  f.onAnswer = (buf, start, end) => {
    seen.answers.push([...buf.subarray(start, end)]);
    return options.answerIsLate?.(seen.answers.length) ? false : undefined;
  };
  f.onRefused = (reason) => void seen.refusals.push(reason);
  f.onEcho = (note) => void seen.echoes.push(note);
  if (options.ownLate) f.ownLate = options.ownLate;
  f.begin(request, request.length);
  const feed = (bytes: Uint8Array, at: number): void => {
    assert.ok(f.room() >= bytes.length);
    f.rx.set(bytes, f.rxLen);
    f.took(bytes.length, at);
  };
  return { f, seen, feed };
}

test('an answer in one piece, and an exception, are handed on whole and once', () => {
  const { seen, feed } = transaction();
  feed(answer, 10);
  assert.equal(seen.answers, [[...answer]]);
  const ex = transaction();
  const exception = frame(1, 0x83, 2);
  ex.feed(exception, 10);
  assert.equal(ex.seen.answers, [[...exception]]);
});

test('an answer split across reads waits for its rest (the time it needs known), then is handed on', () => {
  const { f, seen, feed } = transaction();
  feed(answer.subarray(0, 3), 10);
  assert.equal(seen.answers, []);
  assert.ok(f.restMs > 0, `the rest's wire time known: ${f.restMs} ms`);
  feed(answer.subarray(3, 6), 13);
  assert.equal(seen.answers, []);
  feed(answer.subarray(6), 15);
  assert.equal(seen.answers, [[...answer]]);
  assert.equal(seen.refusals, []);
});

test('a noise byte before the answer (a transceiver switching on) is skipped', () => {
  const { seen, feed } = transaction();
  feed(Buffer.concat([Buffer.from([0x00]), answer]), 10);
  assert.equal(seen.answers, [[...answer]]);
});

test('another master\'s request and answer before ours: the answer is refused as maybe someone else\'s', () => {
  // Read in one piece (a held-up loop): whole frames before it tell what they are by length and CRC. (A request
  // byte for byte ours would be taken for our adapter's echo.)
  const other = Buffer.concat([frame(1, 3, 0, 10, 0, 2), frame(1, 3, 4, 0, 9, 0, 9)]);
  const { seen, feed } = transaction();
  feed(Buffer.concat([other, answer]), 10);
  assert.equal(seen.answers, []);
  assert.is(seen.refusals.length, 1);
  assert.match(seen.refusals[0]!, /someone else's request/);
  // Silence of t3.5 after bytes that are not a frame: they were a frame of their own too.
  const gap = transaction();
  gap.feed(Buffer.from([7, 7, 7]), 10);
  gap.feed(answer, 10 + t35 + 1);
  assert.match(gap.seen.refusals[0] ?? '', /someone else's request/);
});

test('our own late answer before the answer is dropped, and the answer after it is ours', () => {
  const late = frame(1, 3, 4, 0, 1, 0, 1);
  const { seen, feed } = transaction({ ownLate: (bytes) => Buffer.compare(Buffer.from(bytes), late) === 0 });
  feed(late, 10);
  // The finder first offers it as the answer (same unit and function): the transport tells it is late.
  assert.is(seen.answers.length, 1);
  const strict = transaction({ ownLate: (bytes) => Buffer.compare(Buffer.from(bytes), late) === 0, answerIsLate: (n) => n === 1 });
  strict.feed(late, 10);
  strict.feed(answer, 10 + t35 + 2);
  assert.equal(strict.seen.answers, [[...late], [...answer]]);
  assert.equal(strict.seen.refusals, []);
});

test('an echoing adapter: our request\'s copy is dropped; "auto" turns echo on and says so once', () => {
  const { f, seen, feed } = transaction({ echo: 'auto' });
  feed(request, 1);
  feed(answer, 20);
  assert.equal(seen.answers, [[...answer]]);
  assert.ok(f.echo);
  assert.is(seen.echoes.length, 1);
  // The copy handed back in pieces (an adapter's USB packets): the rest of it is waited for, then the answer.
  const split = transaction({ echo: true });
  split.feed(request.subarray(0, 3), 1);
  assert.equal(split.seen.answers, []);
  assert.equal(split.seen.refusals, []);
  split.feed(request.subarray(3), 4);
  split.feed(answer, 20);
  assert.equal(split.seen.answers, [[...answer]]);
  // A write's copy is byte for byte its answer: with echo on, the copy is dropped and the slave's copy is the answer.
  const write = frame(1, 6, 0, 5, 0, 7);
  const on = new AnswerFinder('/dev/ttyTEST', { t35, charMs: charMs(9600), frameGapMs: 50 }, true);
  const got: number[][] = [];
  on.onAnswer = (buf, s, e) => void got.push([...buf.subarray(s, e)]);
  on.begin(write, write.length);
  on.rx.set(write, 0);
  on.took(write.length, 1);
  assert.equal(got, [], 'the copy is not the answer');
  on.rx.set(write, on.rxLen);
  on.took(write.length, 20);
  assert.equal(got, [[...write]]);
});

test('a bad CRC then silence: refused once the frame gap passed, naming the CRC; nothing at all is left to the timeout', () => {
  const bad = Buffer.from(answer);
  bad[bad.length - 1]! ^= 0xff;
  const { f, seen, feed } = transaction();
  feed(bad, 10);
  assert.is(f.quiet(30), 'early');
  assert.is(f.quiet(61), 'refused');
  assert.match(seen.refusals[0]!, /bad CRC/);
  const none = transaction();
  assert.is(none.f.quiet(1000), 'none');
});

test('bytes after the answer in the same read are handed back, with when they came, as line traffic', () => {
  const next = frame(2, 3, 0, 0, 0, 1);
  const { f, seen, feed } = transaction();
  feed(Buffer.concat([answer, next]), 42);
  assert.equal(seen.answers, [[...answer]]);
  const after = f.end();
  assert.ok(after);
  assert.equal([...after!.rest], [...next]);
  assert.is(after!.at, 42);
  assert.is(f.end(), null, 'handed back once');
});

test.run();
