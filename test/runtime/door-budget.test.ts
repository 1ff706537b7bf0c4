/** A connection's bus budget: a token bucket of `miss_rate` per second (one second's burst) and at most 8 waiting. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Budget, MAX_WAITING_PER_CLIENT, exceptionFor } from '../../src/runtime/door/handler.js';
import { GatewayError } from '../../src/core/errors.js';
import { ModbusExceptionError } from '../../src/drivers/modbus/errors.js';
import { LinkDownError } from '../../src/drivers/modbus/bus-owner.js';
import { createHandler } from '../../src/runtime/door/handler.js';
import { Figures } from '../../src/runtime/door/figures.js';
import type { RawModbusAccess } from '../../src/drivers/types.js';
import { FakeClock } from '../helpers/fake-clock.js';

test('the bucket gives a second of burst, refills at the rate, and refuses while too many wait', () => {
  const b = new Budget(20, 0);
  let taken = 0;
  while (b.take(0)) taken++;
  assert.is(taken, 20);
  assert.not.ok(b.take(40), 'only 0.8 of a token after 40 ms');
  assert.ok(b.take(50), 'one token back after 50 ms');
  assert.ok(b.take(10_000));
  b.waiting = MAX_WAITING_PER_CLIENT;
  assert.not.ok(b.take(20_000), 'tokens left, but 8 requests already wait');
  const slow = new Budget(0.5, 0);
  assert.ok(slow.take(0), 'a rate below 1/s still allows one request');
  assert.not.ok(slow.take(1000));
  assert.ok(slow.take(3000));
});

test('bus failures map to the exceptions the docs promise', () => {
  assert.is(exceptionFor(new ModbusExceptionError(2, 1)), 2);
  assert.is(exceptionFor(new GatewayError('DRIVER_TIMEOUT', 't')), 0x0b);
  assert.is(exceptionFor(new GatewayError('UNIT_BACKED_OFF', 'b')), 0x0b);
  assert.is(exceptionFor(new GatewayError('BUS_BUSY', 'b')), 0x06);
  assert.is(exceptionFor(new LinkDownError('down')), 0x0a);
  assert.is(exceptionFor(new Error('?')), 0x04);
});

test('a backed-off unit: 300 back-to-back reads and writes all 0x0B, none on the bus, no budget spent', async () => {
  let online = false;
  let onBus = 0;
  const access: RawModbusAccess = {
    has: () => true,
    peek: () => null,
    read: async (_id, req) => {
      onBus++;
      return { data: Array(req.count).fill(7), hit: false };
    },
    write: async () => {
      onBus++;
    },
    state: () => ({ online, ageMs: null }),
  };
  const clock = new FakeClock();
  const handle = createHandler({
    units: new Map([[1, { unit: 1, device: 'meter', writes: true, maxAgeMs: 1000 }]]),
    access: () => access, generated: () => undefined, clock, figures: new Figures(),
  });
  const budget = new Budget(20, clock.mono());
  const read = Uint8Array.of(3, 0, 0, 0, 2);
  const write = Uint8Array.of(6, 0, 1, 0, 9);
  const codes = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const pdu = await handle(1, i % 10 === 9 ? write : read, 'c', budget);
    codes.set(pdu[0]! & 0x80 ? pdu[1]! : 0, (codes.get(pdu[0]! & 0x80 ? pdu[1]! : 0) ?? 0) + 1);
  }
  assert.equal([...codes], [[0x0b, 300]]);
  assert.is(onBus, 0);
  // Back online: the same client's budget is whole (one second's burst: 20 on the bus, then 0x06).
  online = true;
  let ok = 0;
  let busy = 0;
  for (let i = 0; i < 25; i++) {
    const pdu = await handle(1, read, 'c', budget);
    if (pdu[0] === 3) ok++;
    else if (pdu[1] === 0x06) busy++;
  }
  assert.is(ok, 20);
  assert.is(busy, 5);
});

test.run();
