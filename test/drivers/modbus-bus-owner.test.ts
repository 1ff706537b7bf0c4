/** BusOwner with a scripted fake link: single flight, silence, priorities, drain, reopen. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import { BusOwner, PRIORITY } from '../../src/drivers/modbus/bus-owner.js';
import { WireTimeout, type ModbusTransport, type WireRequest } from '../../src/drivers/modbus/transport.js';
import { silentLogger } from '../../src/util/logger.js';
import { ownMs, stamp, waitedBetween } from '../helpers/lateness.js';

class FakeLink implements ModbusTransport {
  readonly kind = 'rtu' as const;
  readonly label = 'fake';
  openNow = false;
  opens = 0;
  failOpens = 0;
  inFlight = 0;
  maxInFlight = 0;
  drains = 0;
  log: { unit: number; fc: number; start: number; end: number }[] = [];
  behaviour: (unit: number) => 'ok' | 'timeout' | 'exception' = () => 'ok';
  /** When the fake last heard a byte on the line (another master's traffic), and whether its device exists. */
  rx = 0;
  pending = 0;
  exists: boolean | undefined = undefined;
  lastRxAt(): number { return this.rx; }
  answerPendingUntil(): number { return this.pending; }
  present(): boolean | undefined { return this.exists; }
  private lost: (r: string) => void = () => {};
  async open(): Promise<void> {
    if (this.failOpens > 0) { this.failOpens--; throw new Error('ENOENT'); }
    this.opens++;
    this.openNow = true;
  }
  async close(): Promise<void> { this.openNow = false; }
  isOpen(): boolean { return this.openNow; }
  onLost(fn: (r: string) => void): void { this.lost = fn; }
  unplug(): void { this.openNow = false; this.lost('unplugged'); }
  async request(unit: number, req: WireRequest): Promise<number[]> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const start = performance.now();
    try {
      await new Promise((r) => setTimeout(r, 3));
      const b = this.behaviour(unit);
      if (b === 'timeout') throw new WireTimeout(20);
      if (b === 'exception') throw Object.assign(new Error('Modbus exception 2'), { modbusCode: 2 });
      return [unit];
    } finally {
      this.inFlight--;
      this.log.push({ unit, fc: req.fc, start, end: performance.now() });
    }
  }
  async drain(): Promise<void> { this.drains++; }
}

const owner = (link: FakeLink, extra: Partial<ConstructorParameters<typeof BusOwner>[1]> = {}): BusOwner =>
  new BusOwner(link, { busId: 'b', timeoutMs: 20, silenceMs: 4, drainMaxMs: 10, reopenMinMs: 10, reopenMaxMs: 40, reopenAfterTimeouts: 100, log: silentLogger, ...extra });

test('strictly one request in flight, with the t3.5 silence between frames', async () => {
  const link = new FakeLink();
  const bus = owner(link);
  await bus.start();
  try {
    await Promise.all(Array.from({ length: 20 }, (_, i) => bus.enqueue(PRIORITY.poll, (io) => io.request(i % 3 + 1, { fc: 3, address: 0, count: 1 }))));
    assert.is(link.maxInFlight, 1);
    assert.is(link.log.length, 20);
    for (let i = 1; i < link.log.length; i++) {
      assert.ok(link.log[i]!.start - link.log[i - 1]!.end >= 3.9, `gap ${link.log[i]!.start - link.log[i - 1]!.end} ms`);
    }
  } finally {
    await bus.stop();
  }
});

test('writes overtake queued polls, reads overtake polls', async () => {
  const link = new FakeLink();
  const bus = owner(link);
  await bus.start();
  try {
    const order: string[] = [];
    const job = (tag: string, p: 0 | 1 | 2) => bus.enqueue(p, async (io) => { await io.request(1, { fc: 3, address: 0, count: 1 }); order.push(tag); });
    await Promise.all([job('poll1', PRIORITY.poll), job('poll2', PRIORITY.poll), job('poll3', PRIORITY.poll), job('read', PRIORITY.read), job('write', PRIORITY.write)]);
    assert.equal(order, ['poll1', 'write', 'read', 'poll2', 'poll3']);
  } finally {
    await bus.stop();
  }
});

test('under a stream of on-demand reads, a waiting poll goes next after every two (polls keep a third of the line)', async () => {
  const link = new FakeLink();
  const bus = owner(link);
  await bus.start();
  try {
    const order: string[] = [];
    const job = (tag: string, p: 0 | 1 | 2) => bus.enqueue(p, async (io) => { await io.request(1, { fc: 3, address: 0, count: 1 }); order.push(tag); });
    const jobs = [job('poll1', PRIORITY.poll), job('poll2', PRIORITY.poll), job('poll3', PRIORITY.poll)];
    for (let i = 1; i <= 6; i++) jobs.push(job(`r${i}`, PRIORITY.read));
    await Promise.all(jobs);
    assert.equal(order, ['poll1', 'r1', 'r2', 'poll2', 'r3', 'r4', 'poll3', 'r5', 'r6']);
  } finally {
    await bus.stop();
  }
});

test('timeouts are typed, drained, retried; exceptions are typed and not retried', async () => {
  const link = new FakeLink();
  link.behaviour = (u) => (u === 9 ? 'timeout' : u === 8 ? 'exception' : 'ok');
  const bus = owner(link);
  await bus.start();
  try {
    const t = await bus.enqueue(PRIORITY.poll, (io) => io.request(9, { fc: 3, address: 0, count: 1 }, 1)).catch((e: unknown) => e);
    assert.is((t as GatewayError).code, 'DRIVER_TIMEOUT');
    assert.is(link.log.filter((l) => l.unit === 9).length, 2, 'one retry');
    assert.is(link.drains, 2);
    const x = await bus.enqueue(PRIORITY.poll, (io) => io.request(8, { fc: 3, address: 0, count: 1 }, 1)).catch((e: unknown) => e);
    assert.is((x as GatewayError).code, 'MODBUS_EXCEPTION');
    assert.is(link.log.filter((l) => l.unit === 8).length, 1);
    assert.is(bus.units.get(9)!.timeouts, 2);
    assert.is(bus.units.get(8)!.exceptions, 1);
  } finally {
    await bus.stop();
  }
});

test('a lost link fails requests fast, is reopened with backoff, and works again', async () => {
  const link = new FakeLink();
  let opened = 0;
  const bus = owner(link, { onOpen: () => opened++ });
  await bus.start();
  try {
    link.failOpens = 3;
    link.unplug();
    const e = await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })).catch((err: unknown) => err);
    assert.match((e as Error).message, /link is not open/);
    const deadline = Date.now() + 2000;
    while (!link.openNow && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.ok(link.openNow, 'reopened');
    assert.is(opened, 2);
    assert.equal(await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })), [1]);
  } finally {
    await bus.stop();
  }
  assert.not.ok(link.openNow, 'stop closes the link');
});

test('consecutive timeouts bus-wide reopen the link inside the slot', async () => {
  const link = new FakeLink();
  link.behaviour = () => 'timeout';
  const bus = owner(link, { reopenAfterTimeouts: 3 });
  await bus.start();
  try {
    for (let i = 0; i < 3; i++) await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })).catch(() => {});
    assert.is(link.opens, 2);
  } finally {
    await bus.stop();
  }
});

test('consecutive timeouts while bytes are heard on the line (another master, its answers) do not reopen it: the adapter receives', async () => {
  const link = new FakeLink();
  link.behaviour = () => {
    link.rx = performance.now(); // something on the line during each of our timeouts
    return 'timeout';
  };
  const bus = owner(link, { reopenAfterTimeouts: 3 });
  await bus.start();
  try {
    for (let i = 0; i < 6; i++) await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })).catch(() => {});
    assert.is(link.opens, 1, 'opened once, at start');
    // Silence again: the next run of timeouts is the adapter's, and reopens it.
    link.behaviour = () => 'timeout';
    for (let i = 0; i < 3; i++) await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })).catch(() => {});
    assert.is(link.opens, 2);
  } finally {
    await bus.stop();
  }
});

test('listen before talk: t3.5 after the last byte heard from anyone, the answer to another master\'s request, a babbling line only so long', async () => {
  const link = new FakeLink();
  const bus = owner(link, { drainMaxMs: 60 });
  await bus.start();
  try {
    // Another master's frame: a byte every millisecond for 30 ms.
    const t0 = performance.now();
    link.rx = t0;
    const talk = setInterval(() => { if (performance.now() - t0 < 30) link.rx = performance.now(); }, 1);
    try {
      await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 }));
    } finally {
      clearInterval(talk);
    }
    const start = link.log[0]!.start;
    assert.ok(start - link.rx >= 4, `started ${(start - link.rx).toFixed(1)} ms after the last byte heard (t3.5 is 4 ms)`);
    assert.ok(start - t0 >= 30, 'not during the frame');
    // A line that never falls silent: the request goes after drainMaxMs × 2 (120 ms) all the same.
    const babble = setInterval(() => (link.rx = performance.now()), 1);
    const from = stamp();
    const t1 = from.t;
    try {
      await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 }));
    } finally {
      clearInterval(babble);
    }
    const waited = link.log[1]!.start - t1;
    // The upper bound less what this machine kept the thread from a CPU meanwhile (a busy job beside the tests).
    const cpuWait = waitedBetween(from, stamp());
    assert.ok(waited >= 110 && waited - cpuWait < 400, `held back ${waited.toFixed(0)} ms (${cpuWait.toFixed(0)} of them waiting for a CPU)`);
    // Another master's request heard, its answer not begun: the line is held until it could have come.
    const t2 = performance.now();
    link.rx = t2;
    link.pending = t2 + 50;
    await bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 }));
    assert.ok(link.log[2]!.start >= link.pending, `started ${(link.log[2]!.start - t2).toFixed(1)} ms after the foreign request (its answer may take 50 ms)`);
  } finally {
    await bus.stop();
  }
});

test('a vanished port is reopened as soon as its path is back, not after the backoff grown meanwhile', async () => {
  const link = new FakeLink();
  const bus = owner(link, { reopenMinMs: 5000, reopenMaxMs: 5000 });
  await bus.start();
  try {
    link.exists = false;
    link.failOpens = 1; // the first reopen finds no device: the next try would be 5 s away
    link.unplug();
    await new Promise((r) => setTimeout(r, 300));
    assert.not.ok(link.openNow);
    const from = stamp();
    const back = from.t;
    link.exists = true;
    while (!link.openNow && performance.now() - back < 2000) await new Promise((r) => setTimeout(r, 5));
    const after = ownMs(from, stamp()); // less any time the thread waited for a CPU
    assert.ok(link.openNow, 'reopened');
    assert.ok(after < 250, `reopened ${after.toFixed(0)} ms after the path came back (${(performance.now() - back).toFixed(0)} on the wall)`);
  } finally {
    await bus.stop();
  }
});

test('stop rejects queued jobs and refuses new ones', async () => {
  const link = new FakeLink();
  const bus = owner(link);
  await bus.start();
  const jobs = Array.from({ length: 5 }, () => bus.enqueue(PRIORITY.poll, (io) => io.request(1, { fc: 3, address: 0, count: 1 })).then(() => 'ok', () => 'rejected'));
  await bus.stop();
  const results = await Promise.all(jobs);
  assert.ok(results.includes('rejected'));
  assert.match(String(await bus.enqueue(PRIORITY.poll, async () => 1).catch((e: Error) => e.message)), /stopped/);
});

test.run();
