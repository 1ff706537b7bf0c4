/**
 * A wedged USB adapter whose open never completes must not hang the bus (issue 11 item 6): the open fails
 * after its timeout with a clear error, the bus owner keeps its reopen backoff going, and stop() returns.
 * The wedge is a transport whose connect never settles (no real device can be made to wedge here).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BusOwner } from '../../src/drivers/modbus/bus-owner.js';
import { RtuTransport } from '../../src/drivers/modbus/rtu-transport.js';
import { silentLogger } from '../../src/util/logger.js';

class WedgedTransport extends RtuTransport {
  opens = 0;
  protected override openTimeoutMs = 150;
  protected override connect(): Promise<void> {
    this.opens++;
    return new Promise(() => {}); // never settles, like open() on a hung adapter
  }
}

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms))]);

test('an open that never completes fails after its timeout, naming the port', async () => {
  const t = new WedgedTransport({ path: '/dev/ttyWEDGED', baudRate: 9600, parity: 'none', dataBits: 8, stopBits: 1 });
  const err = await within(t.open().then(() => null, (e: Error) => e), 2000, 'open');
  assert.ok(err, 'open must fail');
  assert.match(err!.message, /opening \/dev\/ttyWEDGED took longer than 150 ms/);
  assert.is(t.isOpen(), false);
});

test('the bus owner does not hang on it: start returns, the reopen loop retries, stop returns', async () => {
  const t = new WedgedTransport({ path: '/dev/ttyWEDGED', baudRate: 9600, parity: 'none', dataBits: 8, stopBits: 1 });
  const owner = new BusOwner(t, {
    busId: 'wedged', timeoutMs: 100, silenceMs: 4, drainMaxMs: 50, reopenMinMs: 100, reopenMaxMs: 200, reopenAfterTimeouts: 5, log: silentLogger,
  });
  await within(owner.start(), 2000, 'start');
  assert.is(owner.open, false);
  assert.match(String(owner.totals.lastError), /took longer than 150 ms/);
  // About 3 opens in 800 ms at rest; waited for, as a loaded machine runs the reopen timers late.
  for (const deadline = Date.now() + 5000; t.opens < 2 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
  assert.ok(t.opens >= 2, `reopened ${t.opens} times`);
  await within(owner.stop(), 2000, 'stop');
});

test.run();
