/**
 * The TIOCSRS485 struct against the kernel's layout (include/uapi/linux/serial.h: __u32 flags,
 * delay_rts_before_send, delay_rts_after_send, then a 20-byte union: 32 bytes, little-endian on the Pi), the
 * microsecond option rounded up to the kernel's milliseconds, and when a gateway-driven DE pin may fall.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deReleaseAt, serialRs485Bytes, TIOCGRS485, TIOCSRS485, usToKernelMs } from '../../../src/protocol/modbus/rs485.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

test('the struct: 32 bytes, flags then the two delays in ms, the union zero', () => {
  // ENABLED (1<<0) | RTS_ON_SEND (1<<1) = 0x03; delays 0.
  assert.is(hex(serialRs485Bytes({ rtsOnSend: true, delayBeforeSendUs: 0, delayAfterSendUs: 0 })),
    '03000000' + '00000000' + '00000000' + '00'.repeat(20));
  // ENABLED | RTS_AFTER_SEND (1<<2) = 0x05; 1 µs before → 1 ms; 2500 µs after → 3 ms.
  assert.is(hex(serialRs485Bytes({ rtsOnSend: false, delayBeforeSendUs: 1, delayAfterSendUs: 2500 })),
    '05000000' + '01000000' + '03000000' + '00'.repeat(20));
  // The kernel's largest delay, 100 ms = 0x64, little-endian.
  assert.is(hex(serialRs485Bytes({ rtsOnSend: true, delayBeforeSendUs: 100_000, delayAfterSendUs: 99_001 })),
    '03000000' + '64000000' + '64000000' + '00'.repeat(20));
  assert.is(serialRs485Bytes({ rtsOnSend: true, delayBeforeSendUs: 0, delayAfterSendUs: 0 }).length, 32);
});

test('the ioctl numbers of asm-generic/ioctls.h, and microseconds rounded up to whole ms', () => {
  assert.is(TIOCSRS485, 0x542f);
  assert.is(TIOCGRS485, 0x542e);
  assert.equal([0, 1, 999, 1000, 1001, 50_000].map(usToKernelMs), [0, 1, 1, 1, 2, 50]);
});

test('DE falls at the later of the drain and the last byte\'s wire time', () => {
  const charMs = 11_000 / 9600;
  // A pty drains at once: the wire time of 8 bytes from the write's start decides.
  assert.ok(Math.abs(deReleaseAt(100, 8, charMs, 100.2) - (100 + 8 * charMs)) < 1e-9);
  // A UART that reports its drain later than that: the drain decides.
  assert.is(deReleaseAt(100, 8, charMs, 125), 125);
});

test.run();
