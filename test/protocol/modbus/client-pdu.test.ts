/** The client's requests decode as the server reads them; an answer is taken only when it fits its request. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeAnswer, encodeRequest } from '../../../src/protocol/modbus/client-pdu.js';
import { decodeRequest, encodeBits, encodeException, encodeRegisters, encodeWriteAnswer, type ServerRequest } from '../../../src/protocol/modbus/pdu.js';

const requests: ServerRequest[] = [
  { fc: 1, address: 7, count: 19 },
  { fc: 2, address: 0, count: 8 },
  { fc: 3, address: 40000, count: 125 },
  { fc: 4, address: 0xfffe, count: 2 },
  { fc: 5, address: 3, value: true },
  { fc: 6, address: 9, value: 0xbeef },
  { fc: 15, address: 20, values: [true, false, true, true, false, false, false, false, true, true] },
  { fc: 16, address: 100, values: [1, 0xffff, 0x8000] },
];

test('every request decodes, as a server reads it, to itself', () => {
  for (const req of requests) assert.equal(decodeRequest(encodeRequest(req)), { ok: true, req }, `fc ${req.fc}`);
});

test('answers the server encodes decode to the data; an exception to its code', () => {
  const bits = [true, false, false, true, true, false, true, false, false, false, true, false, false, false, false, false, false, false, true];
  assert.equal(decodeAnswer(requests[0]!, encodeBits(1, bits)), { ok: true, data: bits });
  const words = Array.from({ length: 125 }, (_, i) => (i * 517) & 0xffff);
  assert.equal(decodeAnswer(requests[2]!, encodeRegisters(3, words)), { ok: true, data: words });
  for (const req of requests.slice(4)) {
    assert.equal(decodeAnswer(req, encodeWriteAnswer(req as Exclude<ServerRequest, { count: number }>)), { ok: true, data: undefined }, `fc ${req.fc}`);
  }
  assert.equal(decodeAnswer(requests[3]!, encodeException(4, 2)), { ok: false, exception: 2 });
});

test('an answer that does not fit its request is malformed, never data', () => {
  const two: ServerRequest = { fc: 3, address: 0, count: 2 };
  const bad = (pdu: number[]): boolean => 'malformed' in decodeAnswer(two, Uint8Array.from(pdu));
  assert.ok(bad([4, 4, 0, 1, 0, 2]), 'another function');
  assert.ok(bad([3, 2, 0, 1]), 'one register where two were asked');
  assert.ok(bad([3, 4, 0, 1, 0]), 'short of its byte count');
  assert.ok(bad([3, 4, 0, 1, 0, 2, 0]), 'longer than its byte count');
  assert.ok(bad([0x83, 2, 0]), 'an exception answer of three bytes');
  assert.ok(bad([0x84, 2]), 'an exception to another function');
  const write: ServerRequest = { fc: 6, address: 9, value: 5 };
  assert.ok('malformed' in decodeAnswer(write, Uint8Array.of(6, 0, 9, 0, 6)), 'an echo of another value');
});

test.run();
