import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MbapParser, encodeMbap } from '../../../src/protocol/modbus/mbap.js';
import { decodeRequest, encodeBits, encodeException, encodeRegisters, encodeWriteAnswer } from '../../../src/protocol/modbus/pdu.js';

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
// The spec's own example (Modbus Application Protocol §6.3): read holding 108..110 = 0x022B 0x0000 0x0064.
const readHolding = bytes(0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x11, 0x03, 0x00, 0x6b, 0x00, 0x03);

test('MBAP: a frame split anywhere, and two frames in one chunk, come out whole and in order', () => {
  for (let cut = 1; cut < readHolding.length; cut++) {
    const p = new MbapParser();
    assert.equal(p.push(readHolding.slice(0, cut)).frames, []);
    const { frames, error } = p.push(readHolding.slice(cut));
    assert.is(error, undefined);
    assert.equal(frames, [{ tid: 1, unit: 0x11, pdu: bytes(0x03, 0x00, 0x6b, 0x00, 0x03) }]);
    assert.is(p.buffered, 0);
  }
  const two = new Uint8Array([...readHolding, ...encodeMbap(0xbeef, 7, bytes(4, 0, 0, 0, 2))]);
  const { frames } = new MbapParser().push(two);
  assert.equal(frames.map((f) => [f.tid, f.unit, f.pdu[0]]), [[1, 0x11, 3], [0xbeef, 7, 4]]);
});

test('MBAP: a stream out of step (protocol id, length) is an error and nothing is kept', () => {
  const p = new MbapParser();
  assert.match(p.push(bytes(0, 1, 0, 5, 0, 6, 1, 3, 0, 0, 0, 1)).error ?? '', /protocol id 5/);
  assert.match(new MbapParser().push(bytes(0, 1, 0, 0, 1, 0, 1)).error ?? '', /length 256/);
  assert.match(new MbapParser().push(bytes(0, 1, 0, 0, 0, 1, 1)).error ?? '', /length 1/);
  assert.is(p.buffered, 0);
  // A frame before the garbage is still delivered.
  const r = new MbapParser().push(new Uint8Array([...readHolding, 0, 1, 0, 9, 0, 6, 1]));
  assert.is(r.frames.length, 1);
  assert.ok(r.error);
});

test('MBAP encode: header carries tid, protocol 0, length = unit + PDU, unit', () => {
  assert.equal([...encodeMbap(0x1234, 0xff, bytes(0x83, 0x02))], [0x12, 0x34, 0, 0, 0, 3, 0xff, 0x83, 0x02]);
});

test('PDU decode: reads, single and multiple writes', () => {
  assert.equal(decodeRequest(bytes(3, 0x00, 0x6b, 0x00, 0x03)), { ok: true, req: { fc: 3, address: 0x6b, count: 3 } });
  assert.equal(decodeRequest(bytes(1, 0x00, 0x13, 0x00, 0x13)), { ok: true, req: { fc: 1, address: 0x13, count: 19 } });
  assert.equal(decodeRequest(bytes(5, 0x00, 0xac, 0xff, 0x00)), { ok: true, req: { fc: 5, address: 0xac, value: true } });
  assert.equal(decodeRequest(bytes(6, 0x00, 0x01, 0x00, 0x03)), { ok: true, req: { fc: 6, address: 1, value: 3 } });
  // Spec §6.11: write 10 coils from 20: CD 01 → 1011 0011 1000 0000.
  const fc15 = decodeRequest(bytes(15, 0x00, 0x13, 0x00, 0x0a, 0x02, 0xcd, 0x01));
  assert.equal(fc15, { ok: true, req: { fc: 15, address: 0x13, values: [true, false, true, true, false, false, true, true, true, false] } });
  assert.equal(decodeRequest(bytes(16, 0x00, 0x01, 0x00, 0x02, 0x04, 0x00, 0x0a, 0x01, 0x02)), { ok: true, req: { fc: 16, address: 1, values: [10, 0x102] } });
});

test('PDU decode: limits and malformed requests give the spec exception', () => {
  const ex = (...b: number[]): number | undefined => { const d = decodeRequest(bytes(...b)); return d.ok ? undefined : d.exception; };
  assert.is(ex(3, 0, 0, 0, 0), 3, 'count 0');
  assert.is(ex(3, 0, 0, 0, 126), 3, 'more than 125 registers');
  assert.is(ex(4, 0, 0, 0, 125), undefined, '125 registers is fine');
  assert.is(ex(1, 0, 0, 0x07, 0xd1), 3, 'more than 2000 bits');
  assert.is(ex(2, 0, 0, 0x07, 0xd0), undefined, '2000 bits is fine');
  assert.is(ex(3, 0xff, 0xff, 0, 2), 2, 'past the end of the address space');
  assert.is(ex(3, 0, 0, 0), 3, 'short PDU');
  assert.is(ex(5, 0, 1, 0x12, 0x34), 3, 'coil value other than FF00/0000');
  assert.is(ex(16, 0, 1, 0, 2, 3, 0, 1, 0), 3, 'byte count does not match the quantity');
  assert.is(ex(16, 0, 1, 0, 124, 248), 3, 'more than 123 registers');
  assert.is(ex(15, 0, 1, 0, 9, 1, 0xff), 3, '9 coils need 2 bytes');
  assert.is(ex(8, 0, 0, 0, 0), 1, 'diagnostics not served');
  assert.is(ex(43, 14, 1, 0), 1, 'device identification not served');
});

test('PDU encode: answers the way the spec examples show', () => {
  assert.equal([...encodeRegisters(3, [0x022b, 0x0000, 0x0064])], [3, 6, 0x02, 0x2b, 0, 0, 0, 0x64]);
  // Spec §6.1: coils 20..38 = CD 6B 05.
  const coils = [1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1].map(Boolean);
  assert.equal([...encodeBits(1, coils)], [1, 3, 0xcd, 0x6b, 0x05]);
  assert.equal([...encodeWriteAnswer({ fc: 5, address: 0xac, value: true })], [5, 0, 0xac, 0xff, 0]);
  assert.equal([...encodeWriteAnswer({ fc: 16, address: 1, values: [1, 2] })], [16, 0, 1, 0, 2]);
  assert.equal([...encodeException(3, 0x0b)], [0x83, 0x0b]);
});

test.run();
