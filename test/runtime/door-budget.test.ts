/** A connection's bus budget: a token bucket of `miss_rate` per second (one second's burst) and at most 8 waiting. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Budget, MAX_WAITING_PER_CLIENT, exceptionFor } from '../../src/runtime/door/handler.js';
import { GatewayError } from '../../src/core/errors.js';
import { ModbusExceptionError } from '../../src/drivers/modbus/errors.js';
import { LinkDownError } from '../../src/drivers/modbus/bus-owner.js';

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

test.run();
