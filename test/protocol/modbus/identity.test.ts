import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deviceIdRequest, parseDeviceId, parseServerId } from '../../../src/protocol/modbus/identity.js';

const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

test('FC 43/14: the request, and the basic objects of an answer (spec §6.21 example layout)', () => {
  assert.equal([...deviceIdRequest()], [0x2b, 0x0e, 1, 0]);
  const pdu = Uint8Array.from([0x2b, 0x0e, 1, 0x81, 0, 0, 3, 0, 7, ...ascii('Eastron'), 1, 6, ...ascii('SDM630'), 2, 4, ...ascii('V2.1')]);
  assert.equal(parseDeviceId(pdu), { conformity: 0x81, more: false, nextObject: 0, objects: { 0: 'Eastron', 1: 'SDM630', 2: 'V2.1' } });
});

test('FC 43/14: lengths that do not fit the answer are refused, not read past', () => {
  assert.match(String(parseDeviceId(Uint8Array.from([0x2b, 0x0e, 1, 0x81, 0, 0, 1, 0, 9, ...ascii('short')]))), /says 9 bytes/);
  assert.match(String(parseDeviceId(Uint8Array.from([0x2b, 0x0e, 1, 0x81, 0, 0, 2, 0, 1, 65]))), /object 2 of 2 is missing/);
  assert.match(String(parseDeviceId(Uint8Array.of(0x03, 2, 0, 0))), /not a read device identification/);
});

test('FC 17: the printable text of the data (pymodbus answers "Pymodbus" then the run indicator)', () => {
  const pdu = Uint8Array.from([0x11, 9, ...ascii('Pymodbus'), 0xff]);
  const parsed = parseServerId(pdu);
  assert.ok(typeof parsed !== 'string');
  assert.is(parsed.text, 'Pymodbus');
  assert.is(parsed.serverId, 0x50);
  assert.match(String(parseServerId(Uint8Array.of(0x11, 5, 1, 0xff))), /byte count 5/);
});

test.run();
