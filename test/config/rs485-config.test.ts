/**
 * The modbus-rtu bus option `rs485`: defaults filled for "kernel", `de_pin` required for "gpio" and refused for
 * "kernel", and a DE pin that is also a point of a gpio bus refused at config load (the gpio checker).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { gpioConfigChecker } from '../../src/drivers/gpio.js';

const config = (rs485: unknown, withLed = false): Record<string, unknown> => ({
  buses: [{ id: 'rs485', driver: 'modbus-rtu', port: '/dev/ttyAMA0', rs485 }, ...(withLed ? [{ id: 'pins', driver: 'gpio' }] : [])],
  devices: withLed ? [{ id: 'led', model: 'gpio-status-led', bus: 'pins' }] : [],
});
const problems = (raw: unknown): string[] => {
  try {
    validateConfig(raw, { checkers: [(c) => gpioConfigChecker(c)] });
    return [];
  } catch (e) {
    return (e as { problems?: string[] }).problems ?? [String(e)];
  }
};

test('kernel mode: defaults rts_on_send true, delays 0; de_pin refused', () => {
  const bus = validateConfig(config({ mode: 'kernel' })).buses[0]!;
  assert.equal(bus.rs485, { mode: 'kernel', rts_on_send: true, delay_before_send_us: 0, delay_after_send_us: 0 });
  assert.equal(problems(config({ mode: 'kernel', de_pin: 17 })), ['buses[0].rs485: must not have property "de_pin"']);
  assert.equal(problems(config({ mode: 'kernel', delay_after_send_us: 100_001 })), ['buses[0].rs485.delay_after_send_us: must be <= 100000 (got 100001)']);
});

test('gpio mode: de_pin required, kernel-only keys refused', () => {
  assert.equal(validateConfig(config({ mode: 'gpio', de_pin: 17 })).buses[0]!.rs485, { mode: 'gpio', de_pin: 17 });
  assert.equal(problems(config({ mode: 'gpio' })), ['buses[0].rs485.de_pin: is required']);
  assert.equal(problems(config({ mode: 'gpio', de_pin: 17, rts_on_send: true })), ['buses[0].rs485: must not have property "rts_on_send"']);
  assert.equal(problems(config({})), ['buses[0].rs485.mode: is required']);
});

test('a DE pin that a gpio bus\'s point uses is refused at load', () => {
  // gpio-status-led drives BCM 22.
  assert.equal(problems(config({ mode: 'gpio', de_pin: 23 }, true)), []);
  assert.equal(problems(config({ mode: 'gpio', de_pin: 22 }, true)), ['devices[0].points.led.gpio.pin: BCM 22 (P1-15) is already used by the DE pin (rs485 "gpio") of bus "rs485"']);
});

test.run();
