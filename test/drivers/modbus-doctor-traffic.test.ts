/** The doctor's traffic map, fed bytes and the times they were read, as listening to another master's line would. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TrafficMap } from '../../src/drivers/modbus/doctor/traffic.js';
import { crc16 } from '../../src/protocol/modbus/frame.js';

const frame = (...body: number[]): Uint8Array => {
  const out = new Uint8Array(body.length + 2);
  out.set(body);
  const crc = crc16(out, 0, body.length);
  out[body.length] = crc & 0xff;
  out[body.length + 1] = crc >> 8;
  return out;
};
const BAUD = 9600;
const C = 11_000 / BAUD; // one character, ms

/** A line at 9600 baud: each frame's last byte read `n` characters after its first began (one chunk per frame). */
class Line {
  readonly map = new TrafficMap({ baudRate: BAUD, answerWindowMs: 500, jitterMs: 1 });
  t = 1000;
  /** `silence` ms after the last frame ended, `f` is on the wire; read once whole. */
  send(f: Uint8Array, silence: number): void {
    this.t += silence + f.length * C;
    this.map.push(f, this.t);
  }
}

const read3 = (unit: number, address: number, count: number): Uint8Array => frame(unit, 3, address >> 8, address & 0xff, 0, count);
const words = (unit: number, fc: number, ...values: number[]): Uint8Array =>
  frame(unit, fc, 2 * values.length, ...values.flatMap((v) => [v >> 8, v & 0xff]));

test('two units polled: units, function codes, address ranges with rates, answers and the last values', () => {
  const line = new Line();
  for (let cycle = 0; cycle < 10; cycle++) {
    line.send(read3(1, 100, 2), 1000 - (line.t % 1000) + 5); // one cycle per second
    line.send(words(1, 3, 0x1234, cycle), 15);
    line.send(frame(2, 4, 0, 0, 0, 3), 10);
    line.send(words(2, 4, 7, 8, 9), 12);
    line.send(frame(2, 1, 0, 0, 0, 10), 10);
    line.send(frame(2, 1, 2, 0b0000_0101, 0b10), 12);
  }
  const units = line.map.report(10_000, line.t);
  assert.equal(units.map((u) => u.unit), [1, 2]);
  const [u1, u2] = units as [typeof units[0], typeof units[0]];
  assert.equal(u1.functions, [3]);
  assert.equal(u1.ranges, [{ fc: 3, from: 100, to: 101, per_minute: 60 }]);
  assert.equal([u1.answered, u1.exceptions, u1.unanswered], [10, 0, 0]);
  assert.equal(u1.last_values, { '3:100': 0x1234, '3:101': 9 }, 'the last answer, at its request\'s addresses');
  assert.equal(u2.functions, [1, 4]);
  assert.equal(u2.ranges.map((r) => [r.fc, r.from, r.to]), [[1, 0, 9], [4, 0, 2]]);
  assert.is(u2.answered, 20);
  assert.is(u2.last_values['4:2'], 9);
  assert.equal([0, 1, 2, 3, 8, 9].map((a) => u2.last_values[`1:${a}`]), [1, 0, 1, 0, 0, 1], 'coils LSB first');
  assert.is(line.map.counts.t35Violations, 0);
  assert.is(line.map.counts.garbledBytes, 0);
  assert.equal(line.map.hints(), []);
});

test('a write answered by its echo is one exchange, not a second request; exceptions and silence are counted per unit', () => {
  const line = new Line();
  const write = frame(1, 6, 0, 10, 0, 42);
  line.send(write, 20);
  line.send(write, 20); // FC6's answer is a copy of its request
  line.send(read3(1, 9999, 1), 20);
  line.send(frame(1, 0x83, 2), 20);
  line.send(read3(3, 0, 1), 20); // nobody answers
  line.send(read3(3, 0, 1), 600);
  const units = line.map.report(2000, line.t + 600);
  const u1 = units.find((u) => u.unit === 1)!;
  const u3 = units.find((u) => u.unit === 3)!;
  assert.equal(u1.functions, [3, 6]);
  assert.equal([u1.answered, u1.exceptions, u1.unanswered], [1, 1, 0]);
  assert.equal([u3.answered, u3.unanswered], [0, 2], 'the second one\'s window has passed at report time');
  assert.is(line.map.counts.requests, 4);
  const hints = line.map.hints(line.t + 600).join('\n');
  assert.match(hints, /unit 3 never answered \(2 request/);
  assert.match(hints, /unit 1 answered with exception 2 \(illegal data address\)/);
});

test('an answer less than 3.5 characters after its request breaks t3.5; one 10 ms after does not; a pty-fast chunk is not judged', () => {
  const line = new Line();
  line.send(read3(1, 0, 1), 50);
  line.send(words(1, 3, 5), 0.5 * C);
  assert.is(line.map.counts.t35Violations, 1);
  line.send(read3(1, 0, 1), 50);
  line.send(words(1, 3, 5), 10);
  assert.is(line.map.counts.t35Violations, 1);
  line.send(read3(1, 0, 1), 50);
  line.t += 1; // the whole answer read 1 ms after the request: faster than its 7 characters can come over a wire
  line.map.push(words(1, 3, 5), line.t);
  assert.is(line.map.counts.t35Violations, 1, 'stamps that say nothing about the wire are not judged');
  assert.is(line.map.report()[0]!.answered, 3);
  assert.match(line.map.hints().join('\n'), /1 frame\(s\) began less than 3\.5 characters \(4\.01 ms at 9600 baud\)/);
});

test('a pause of more than 1.5 characters inside a frame breaks t1.5; the frame still decodes', () => {
  const line = new Line();
  const req = read3(1, 0, 1);
  line.t += 50 + 4 * C;
  line.map.push(req.subarray(0, 4), line.t);
  line.t += 10 + 4 * C; // 10 ms of silence after the 4th byte
  line.map.push(req.subarray(4), line.t);
  line.send(words(1, 3, 5), 20);
  assert.is(line.map.counts.t15Violations, 1);
  assert.is(line.map.report()[0]!.answered, 1);
  assert.match(line.map.hints().join('\n'), /pause longer than 1\.5 characters/);
});

test('a collision (two frames on top of each other: a bad CRC) is counted as garbled bytes; the frames around it still decode', () => {
  const line = new Line();
  line.send(read3(1, 0, 1), 50);
  line.send(words(1, 3, 5), 20);
  const a = read3(2, 0, 1);
  const b = read3(7, 0, 1);
  line.send(a.map((x, i) => x | b[i]!), 50); // two drivers on the bus at once: the line shows neither
  line.send(read3(1, 0, 1), 600);
  line.send(words(1, 3, 6), 20);
  assert.ok(line.map.counts.garbledBytes >= 8, `garbled ${line.map.counts.garbledBytes}`);
  assert.is(line.map.report().find((u) => u.unit === 1)!.answered, 2);
  assert.match(line.map.hints().join('\n'), /byte\(s\) in \d+ run\(s\) were no valid frame/);
});

test('nothing heard: no units, no frames', () => {
  const map = new TrafficMap({ baudRate: BAUD });
  assert.equal(map.report(), []);
  assert.not.ok(map.heardFrames());
});

test.run();
