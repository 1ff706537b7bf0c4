/** RTU framing on bytes: CRC, the length of every request and response, the splitter's resync. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  checkFrame, crc16, crcOk, expectedRequestLength, expectedResponseLength, FrameSplitter, MAX_FRAME, NEED_MORE, UNKNOWN,
} from '../../../src/protocol/modbus/frame.js';
import { rng } from '../../helpers/rng.js';

/** `body` with its CRC appended, low byte first (computed bit by bit here, not by the table under test). */
function frame(...body: number[]): Uint8Array {
  let crc = 0xffff;
  for (const b of body) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return Uint8Array.from([...body, crc & 0xff, crc >>> 8]);
}
const cat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(parts.flatMap((p) => [...p]));

test('crc16 is the Modbus CRC: known frames from the specification and a range inside a buffer', () => {
  // Modbus over serial line, Appendix B: 02 07 → CRC 41 12; a read of 10 holding registers from unit 1.
  assert.equal([...frame(2, 7)], [2, 7, 0x41, 0x12]);
  assert.is(crc16(Uint8Array.from([2, 7])), 0x1241);
  assert.is(crc16(Uint8Array.from([1, 3, 0, 0, 0, 10])), 0xcdc5);
  assert.is(crc16(Uint8Array.from([9, 9, 1, 3, 0, 0, 0, 10, 9]), 2, 8), 0xcdc5, 'only the range counts');
  assert.ok(crcOk(frame(1, 3, 0, 0, 0, 10), 0, 8));
  const bad = frame(1, 3, 0, 0, 0, 10);
  bad[3] = bad[3]! ^ 1;
  assert.not.ok(crcOk(bad, 0, 8));
  assert.not.ok(crcOk(Uint8Array.from([0xff, 0xff, 0xff]), 0, 3), 'three bytes are no frame');
});

test('request lengths by function code; byte counts make FC 15, 16 and 23 wait until they are in', () => {
  for (const fc of [1, 2, 3, 4, 5, 6, 8]) assert.is(expectedRequestLength(Uint8Array.from([1, fc])), 8, `fc ${fc}`);
  for (const fc of [7, 11, 12, 17]) assert.is(expectedRequestLength(Uint8Array.from([1, fc])), 4, `fc ${fc}`);
  assert.is(expectedRequestLength(Uint8Array.from([1, 22])), 10);
  const fc16 = frame(1, 16, 0, 0, 0, 2, 4, 0, 1, 0, 2);
  assert.is(expectedRequestLength(fc16), 13);
  assert.is(expectedRequestLength(fc16, 0, 6), NEED_MORE, 'byte count not in yet');
  assert.is(expectedRequestLength(frame(1, 15, 0, 0, 0, 9, 2, 0xff, 1)), 11);
  const fc23 = frame(1, 23, 0, 0, 0, 2, 0, 10, 0, 1, 2, 0, 7);
  assert.is(expectedRequestLength(fc23), 15);
  assert.is(expectedRequestLength(fc23, 0, 10), NEED_MORE);
  assert.is(expectedRequestLength(frame(1, 43, 14, 1, 0)), 7);
  assert.is(expectedRequestLength(Uint8Array.from([1, 43, 13])), UNKNOWN, 'MEI 13 (CANopen) is not sized');
  assert.is(expectedRequestLength(Uint8Array.from([1, 43])), NEED_MORE);
  assert.is(expectedRequestLength(Uint8Array.from([1])), NEED_MORE);
  assert.is(expectedRequestLength(Uint8Array.from([1, 99])), UNKNOWN);
  assert.is(expectedRequestLength(Uint8Array.from([1, 16, 0, 0, 0, 127, 254])), UNKNOWN, '9 + 254 bytes is past 256');
  assert.is(expectedRequestLength(Uint8Array.from([7, 7, 1, 3]), 2), 8, 'at an offset');
});

test('response lengths by function code; exceptions are 5 bytes; a request FC filters what answers it', () => {
  assert.is(expectedResponseLength(frame(1, 3, 4, 0, 1, 0, 2)), 9);
  assert.is(expectedResponseLength(Uint8Array.from([1, 3])), NEED_MORE, 'byte count not in yet');
  assert.is(expectedResponseLength(frame(1, 1, 1, 0x55)), 6);
  for (const fc of [2, 4, 12, 17, 23]) assert.is(expectedResponseLength(Uint8Array.from([1, fc, 6])), 11, `fc ${fc}`);
  for (const fc of [5, 6, 8, 11, 15, 16]) assert.is(expectedResponseLength(Uint8Array.from([1, fc])), 8, `fc ${fc}`);
  assert.is(expectedResponseLength(Uint8Array.from([1, 7])), 5);
  assert.is(expectedResponseLength(Uint8Array.from([1, 22])), 10);
  assert.is(expectedResponseLength(Uint8Array.from([1, 0x83])), 5);
  assert.is(expectedResponseLength(Uint8Array.from([1, 0x80])), UNKNOWN);
  assert.is(expectedResponseLength(Uint8Array.from([1, 0x83]), 0, 2, 3), 5, 'the exception of the request');
  assert.is(expectedResponseLength(Uint8Array.from([1, 0x84]), 0, 2, 3), UNKNOWN, 'another function\'s exception');
  assert.is(expectedResponseLength(Uint8Array.from([1, 4, 2]), 0, 3, 3), UNKNOWN, 'another function');
  assert.is(expectedResponseLength(Uint8Array.from([1, 99, 2])), UNKNOWN);
  assert.is(expectedResponseLength(Uint8Array.from([1, 3, 252])), UNKNOWN, '5 + 252 bytes is past 256');
  assert.is(expectedResponseLength(Uint8Array.from([1, 3, 251])), 256);
});

test('FC 43/14 answers are sized object by object', () => {
  // unit, 43, 14, code 1, conformity, more follows 0, next id 0, 2 objects: 0 "AB", 1 "XYZ"
  const answer = frame(1, 43, 14, 1, 0x81, 0, 0, 2, 0, 2, 65, 66, 1, 3, 88, 89, 90);
  assert.is(expectedResponseLength(answer), answer.length);
  assert.is(checkFrame(answer, 0, answer.length, 'response', 43), 'ok');
  for (const cut of [2, 7, 8, 9, 12, 13]) assert.is(expectedResponseLength(answer, 0, cut), NEED_MORE, `cut at ${cut}`);
  assert.is(expectedResponseLength(answer, 0, 14), answer.length, 'known once the last length byte is in');
  assert.is(expectedResponseLength(Uint8Array.from([1, 43, 13, 0, 0, 0, 0, 0])), UNKNOWN);
  const huge = Uint8Array.from([1, 43, 14, 1, 0, 0, 0, 2, 0, 200, ...new Array<number>(200).fill(0), 1, 100]);
  assert.is(expectedResponseLength(huge), UNKNOWN, 'objects past 256 bytes');
});

test('checkFrame says what is wrong with a frame', () => {
  const req = frame(1, 3, 0, 0, 0, 10);
  assert.is(checkFrame(req, 0, 8, 'request'), 'ok');
  assert.is(checkFrame(req, 0, 7, 'request'), 'short');
  assert.is(checkFrame(cat(req, Uint8Array.from([0])), 0, 9, 'request'), 'long');
  assert.is(checkFrame(Uint8Array.from([1, 99, 0, 0]), 0, 4, 'request'), 'unknown');
  const bad = req.slice();
  bad[7] = bad[7]! ^ 0x10;
  assert.is(checkFrame(bad, 0, 8, 'request'), 'crc');
  assert.is(checkFrame(frame(1, 0x83, 2), 0, 5, 'response', 3), 'ok');
  assert.is(checkFrame(frame(1, 3, 2, 0, 7), 0, 7, 'response', 4), 'unknown', 'not an answer to FC 4');
});

/** A splitter that records what it hands on. */
function splitter(gapMs = 4, answerWindowMs = 100): { s: FrameSplitter; requests: number[][]; responses: number[][]; dropped: () => number } {
  const requests: number[][] = [];
  const responses: number[][] = [];
  let dropped = 0;
  const s = new FrameSplitter({ gapMs, answerWindowMs }, {
    request: (b, start, end) => requests.push([...b.subarray(start, end)]),
    response: (b, start, end) => responses.push([...b.subarray(start, end)]),
    discard: (n) => (dropped += n),
  });
  return { s, requests, responses, dropped: () => dropped };
}

const readReq = frame(2, 3, 0, 10, 0, 2);
const readAnswer = frame(2, 3, 4, 0xa0, 0x2a, 0xa0, 0x2b);
const writeReq = frame(2, 6, 0, 5, 0, 7);

test('splitter: a request and its answer, byte by byte, come out whole once each', () => {
  const { s, requests, responses, dropped } = splitter();
  let t = 0;
  for (const b of readReq) s.push(Uint8Array.of(b), (t += 1));
  assert.equal(requests, [[...readReq]]);
  for (const b of readAnswer) s.push(Uint8Array.of(b), (t += 1));
  assert.equal(responses, [[...readAnswer]]);
  assert.is(dropped(), 0);
  assert.is(s.pending(), 0);
});

test('splitter: an FC 6 answer (a copy of its request) is an answer right after the request, a request later', () => {
  const { s, requests, responses } = splitter(4, 100);
  s.push(writeReq, 0);
  s.push(writeReq, 30);
  assert.is(requests.length, 1);
  assert.is(responses.length, 1, 'the echo is the answer');
  s.push(writeReq, 60);
  s.push(writeReq, 300);
  assert.is(requests.length, 3, 'past the answer window the same bytes are a new request');
  assert.is(responses.length, 1);
});

test('splitter: back-to-back frames in one chunk; noise before a request is skipped', () => {
  const { s, requests, responses, dropped } = splitter();
  s.push(cat(readReq, readAnswer, Uint8Array.of(0x00, 0xff), readReq), 0);
  assert.is(requests.length, 2);
  assert.is(responses.length, 1);
  assert.is(dropped(), 2);
});

test('splitter: a frame cut short by a lost byte is dropped at the next silence; what follows is whole', () => {
  const { s, requests, dropped } = splitter(4);
  s.push(readReq.subarray(0, 5), 0);
  s.push(readReq, 50); // silence longer than the gap: the 5 bytes were a frame of their own
  assert.equal(requests, [[...readReq]]);
  assert.is(dropped(), 5);
});

test('splitter: noise that reads as a long frame\'s start does not swallow a good frame behind it', () => {
  const { s, requests, dropped } = splitter();
  // 0x01 0x10 … looks like the start of an FC16 request with a byte count of 200.
  s.push(cat(Uint8Array.of(0x01, 0x10, 0, 0, 0, 100, 200), readReq), 0);
  assert.equal(requests, [[...readReq]]);
  assert.is(dropped(), 7);
});

test('splitter fuzz: good frames survive random noise between them (separated by silence or not)', () => {
  const seed = Number(process.env.FUZZ_SEED ?? 0x5eed22);
  const rand = rng(seed);
  const int = (n: number): number => Math.floor(rand() * n);
  const makeRequest = (): Uint8Array => {
    const unit = 1 + int(247);
    switch (int(4)) {
      case 0: return frame(unit, 1 + int(6), int(256), int(256), 0, 1 + int(100));
      case 1: { const n = 1 + int(20); return frame(unit, 16, 0, int(256), 0, n, 2 * n, ...Array.from({ length: 2 * n }, () => int(256))); }
      case 2: { const n = 1 + int(8); return frame(unit, 15, 0, 0, 0, 8 * n, n, ...Array.from({ length: n }, () => int(256))); }
      default: return frame(unit, 43, 14, 1, 0);
    }
  };
  for (let round = 0; round < 300; round++) {
    const { s, requests } = splitter(4, 0); // no answer window: every frame here is a request
    const sent: number[][] = [];
    let t = 0;
    for (let k = 0; k < 20; k++) {
      const req = makeRequest();
      sent.push([...req]);
      // Noise, then silence (the noise is dropped) — or noise that runs straight into the frame.
      const noise = Uint8Array.from({ length: int(6) }, () => int(256));
      const spaced = rand() < 0.5;
      if (noise.length) s.push(noise, (t += 10));
      // Chunks as an adapter hands them over.
      let at = spaced ? (t += 10) : t;
      for (let i = 0; i < req.length;) {
        const n = 1 + int(req.length - i);
        s.push(req, at, i, i + n);
        i += n;
        at += rand();
      }
      t = at + 10;
    }
    // Noise glued to a frame can, rarely, make a frame of its own; every request sent must come out.
    let found = 0;
    for (const r of requests) if (found < sent.length && r.join() === sent[found]!.join()) found++;
    assert.is(found, sent.length, `seed ${seed} round ${round}: ${found} of ${sent.length} requests came out in order`);
  }
});

test('splitter fuzz: random bytes never throw, never emit a frame with a bad CRC or past 256 bytes', () => {
  const rand = rng(0xf00d);
  let emitted = 0;
  const check = (b: Uint8Array, start: number, end: number): void => {
    emitted++;
    assert.ok(end - start <= MAX_FRAME && crcOk(b, start, end));
  };
  const s = new FrameSplitter({ gapMs: 2, answerWindowMs: 50 }, { request: check, response: check });
  let t = 0;
  for (let i = 0; i < 20_000; i++) {
    const chunk = Uint8Array.from({ length: 1 + Math.floor(rand() * 40) }, () => Math.floor(rand() * 256));
    s.push(chunk, (t += rand() * 4));
    assert.ok(s.pending() < 2 * MAX_FRAME);
  }
  assert.ok(emitted < 200, `${emitted} frames from noise: a 16-bit CRC lets few through`);
});

test.run();
