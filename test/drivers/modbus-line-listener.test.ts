/** What the gateway makes of another master's traffic heard between its own transactions. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LineListener } from '../../src/drivers/modbus/line-listener.js';
import { crc16, endsWithFrame, endsWithRequest } from '../../src/protocol/modbus/frame.js';

const frame = (...body: number[]): Buffer => {
  const out = Buffer.alloc(body.length + 2);
  out.set(body);
  out.writeUInt16LE(crc16(Buffer.from(body)), body.length);
  return out;
};
const readReq = frame(2, 3, 0, 10, 0, 10);
const readAnswer = frame(2, 3, 4, 0xa0, 0x2a, 0xa0, 0x2b);
const writeReq = frame(2, 6, 0, 5, 0, 7);

test('crc16 is the Modbus one', () => {
  assert.equal([...frame(1, 3, 0, 0, 0, 10)], [1, 3, 0, 0, 0, 10, 0xc5, 0xcd]);
});

test('requests are recognised at the end of what was heard (FC 1-6 and 15/16), answers are not', () => {
  assert.ok(endsWithRequest(readReq));
  assert.ok(endsWithRequest(Buffer.concat([readAnswer, readReq])), 'a request right after an answer, no gap between');
  assert.ok(endsWithRequest(frame(2, 16, 0, 0, 0, 2, 4, 0, 1, 0, 2)));
  assert.ok(endsWithRequest(frame(2, 15, 0, 0, 0, 9, 2, 0xff, 0x01)));
  assert.not.ok(endsWithRequest(readAnswer));
  assert.not.ok(endsWithRequest(readReq.subarray(0, 7)), 'not before its last byte');
});

test('a request heard holds the line until its answer begins, or its timeout passed', () => {
  const l = new LineListener(4);
  l.heard(readReq.subarray(0, 3), 100, 300);
  assert.is(l.answerPendingUntil(), 0);
  l.heard(readReq.subarray(3), 101, 300);
  assert.is(l.answerPendingUntil(), 401, 'pending until the response timeout');
  l.heard(readAnswer.subarray(0, 5), 140, 300);
  assert.is(l.answerPendingUntil(), 0, 'its answer has begun: t3.5 after its last byte is enough again');
  l.heard(readAnswer.subarray(5), 141, 300);
  assert.is(l.answerPendingUntil(), 0);
  // An FC6 answer echoes the request: it is the answer, not a new request.
  l.heard(writeReq, 200, 300);
  assert.is(l.answerPendingUntil(), 500);
  l.heard(writeReq, 230, 300);
  assert.is(l.answerPendingUntil(), 0);
  // A request nobody answers: pending until its timeout; what comes after that is a new frame.
  l.heard(readReq, 300, 300);
  l.heard(readReq, 700, 300);
  assert.is(l.answerPendingUntil(), 1000);
  l.reset();
  assert.is(l.answerPendingUntil(), 0, 'our own transaction takes the line');
});

test('bytes that do not end a whole frame hold the line (a frame handed over in bursts); a whole one does not', () => {
  assert.ok(endsWithFrame(readAnswer));
  assert.ok(endsWithFrame(readReq));
  assert.not.ok(endsWithFrame(readAnswer.subarray(0, 6)));
  const l = new LineListener(4, 50);
  l.heard(readAnswer.subarray(0, 4), 100, 300);
  assert.is(l.busyUntil(), 150, 'mid-frame: held for 50 ms after the last byte');
  // More than t3.5 later the next burst comes, and the frame is still not whole.
  l.heard(readAnswer.subarray(4, 7), 110, 300);
  assert.is(l.busyUntil(), 160);
  l.heard(readAnswer.subarray(7), 120, 300);
  assert.is(l.busyUntil(), 0, 'the bursts make a whole frame: t3.5 after it is enough');
  l.heard(readAnswer, 200, 300);
  assert.is(l.busyUntil(), 0, 'a whole frame: t3.5 after it is enough');
  // Noise that never ends a frame holds the line until 50 ms of silence, then what comes is a new frame.
  l.heard(Buffer.from([0xff, 0x13]), 300, 300);
  assert.is(l.busyUntil(), 350);
  l.heard(readReq, 360, 300);
  assert.is(l.answerPendingUntil(), 660);
  assert.is(new LineListener(4).busyUntil(), 0);
  const off = new LineListener(4);
  off.heard(readAnswer.subarray(0, 4), 100, 300);
  assert.is(off.busyUntil(), 0, 'no hold unless asked for');
});

test('another master asking again before an answer came: its new request holds the line; a late answer from another unit does not free it', () => {
  const l = new LineListener(4, 50);
  const unit1Req = frame(1, 3, 0, 10, 0, 2);
  const unit1Answer = frame(1, 3, 4, 0xa0, 0x1a, 0xa0, 0x1b);
  l.heard(unit1Req, 100, 300);
  assert.is(l.answerPendingUntil(), 400);
  l.heard(readReq, 220, 300); // unit 2 asked: not unit 1's answer
  assert.is(l.answerPendingUntil(), 520, 'pending for the new request');
  l.heard(unit1Answer, 330, 300); // unit 1's answer, late: not what is pending now
  assert.is(l.answerPendingUntil(), 520);
  l.heard(readAnswer, 340, 300); // unit 2 answers
  assert.is(l.answerPendingUntil(), 0);
});

test('a request handed over in bursts with more than t3.5 between them still holds the line for its answer', () => {
  const l = new LineListener(4, 50);
  l.heard(readReq.subarray(0, 4), 100, 300);
  l.heard(readReq.subarray(4), 112, 300); // a relay or an adapter held the rest back 12 ms
  assert.is(l.answerPendingUntil(), 412, 'recognised as a request');
  l.heard(readAnswer, 150, 300);
  assert.is(l.answerPendingUntil(), 0);
  assert.is(l.busyUntil(), 0);
});

test('a late answer to our own timed-out request: counted, dropped, never another master (whole, in bursts, an FC 6 echo, an exception)', () => {
  const l = new LineListener(4, 50);
  l.expectLate(2, 3, 1000);
  l.heard(readAnswer.subarray(0, 3), 100, 300);
  assert.is(l.lastHeardAt(), -Infinity, 'a part of it: not yet taken for anyone');
  l.heard(readAnswer.subarray(3), 110, 300);
  assert.is(l.lateAnswers, 1);
  assert.is(l.lastHeardAt(), -Infinity, 'the line is not shared by our own late answer');
  assert.is(l.answerPendingUntil(), 0);
  assert.is(l.busyUntil(), 0);
  // An FC 6 answer is the request's echo: ours, late, it holds nothing as a request would.
  l.expectLate(2, 6, 1000);
  l.heard(writeReq, 200, 300);
  assert.is(l.lateAnswers, 2);
  assert.is(l.answerPendingUntil(), 0);
  l.expectLate(2, 3, 1000);
  l.heard(frame(2, 0x83, 2), 300, 300);
  assert.is(l.lateAnswers, 3, 'an exception answer');
  assert.is(l.lastHeardAt(), -Infinity);
});

test('what is not our late answer is another master: another unit or function, a bad CRC, past the window, or nothing expected', () => {
  const cases: [string, (l: LineListener) => void][] = [
    ['another unit', (l) => { l.expectLate(5, 3, 1000); l.heard(readAnswer, 100, 300); }],
    ['another function', (l) => { l.expectLate(2, 4, 1000); l.heard(readAnswer, 100, 300); }],
    ['a bad CRC', (l) => { l.expectLate(2, 3, 1000); l.heard(Buffer.from([...readAnswer.subarray(0, 7), 0, 0]), 100, 300); }],
    ['past the window', (l) => { l.expectLate(2, 3, 50); l.heard(readAnswer, 100, 300); }],
    ['nothing expected', (l) => { l.heard(readAnswer, 100, 300); }],
    ['a request from another master', (l) => { l.expectLate(2, 3, 1000); l.heard(readReq, 100, 300); }],
  ];
  for (const [name, run] of cases) {
    const l = new LineListener(4, 50);
    run(l);
    assert.is(l.lateAnswers, 0, name);
    assert.is(l.lastHeardAt(), 100, name);
  }
  // A part that never became the answer (silence, then another frame): heard, at its last byte.
  const l = new LineListener(4, 50);
  l.expectLate(2, 3, 1000);
  l.heard(readAnswer.subarray(0, 3), 100, 300);
  l.heard(readReq, 400, 300);
  assert.is(l.lateAnswers, 0);
  assert.is(l.lastHeardAt(), 400);
});

test.run();
