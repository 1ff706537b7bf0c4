/** RTU over TCP framing of a Modbus server (framing.ts), without a socket: how a stream is cut into requests. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RTU_GAP_MS, encodeRtu, rtuFraming } from '../../src/runtime/door/framing.js';

const frame = (unit: number, pdu: number[]): number[] => [...encodeRtu(0, unit, Uint8Array.from(pdu))];
const write6 = (address: number, value: number): number[] => [6, 0, address, value >> 8, value & 0xff];

function setup(): { push(bytes: number[], at: number): Array<[number, number[]]>; dropped(): number } {
  let now = 0;
  let dropped = 0;
  const f = rtuFraming(() => now, (n) => { dropped += n; });
  return {
    push: (bytes, at) => {
      now = at;
      return f.push(Uint8Array.from(bytes)).frames.map((x) => [x.unit, [...x.pdu]]);
    },
    dropped: () => dropped,
  };
}

test('two FC 6 writes back to back are two requests (a write answer is a copy of its request: never taken for one)', () => {
  const s = setup();
  assert.equal(s.push([...frame(3, write6(1, 0x1234)), ...frame(3, write6(2, 0x5678))], 0), [[3, write6(1, 0x1234)], [3, write6(2, 0x5678)]]);
  assert.is(s.dropped(), 0);
});

test('a bad CRC is dropped and counted; the good frame behind it in the same chunk is taken', () => {
  const s = setup();
  const bad = frame(1, [3, 0, 0, 0, 2]);
  bad[7] = bad[7]! ^ 0x55;
  assert.equal(s.push([...bad, ...frame(1, [4, 0, 0, 0, 2])], 0), [[1, [4, 0, 0, 0, 2]]]);
  assert.is(s.dropped(), bad.length);
});

test('a frame over two chunks is one request; half a frame left past the gap is dropped', () => {
  const s = setup();
  const f = frame(2, [3, 0, 10, 0, 1]);
  assert.equal(s.push(f.slice(0, 5), 0), []);
  assert.equal(s.push(f.slice(5), 20), [[2, [3, 0, 10, 0, 1]]]);
  assert.equal(s.push(f.slice(0, 5), 100), []);
  assert.equal(s.push(f, 100 + RTU_GAP_MS + 1), [[2, [3, 0, 10, 0, 1]]], 'the stale half is dropped, the new frame taken');
  assert.is(s.dropped(), 5);
});

test('answers: unit, PDU, CRC low byte first (reference frame from the Modbus serial line spec)', () => {
  // Spec example: unit 1, FC 3, address 0, count 1 -> CRC 0x0A84, sent 84 0A.
  assert.equal(frame(1, [3, 0, 0, 0, 1]), [1, 3, 0, 0, 0, 1, 0x84, 0x0a]);
});

test.run();
