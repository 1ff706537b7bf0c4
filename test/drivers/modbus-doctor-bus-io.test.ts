/**
 * The bus doctor's line over a bus owner (doctor/bus-io.ts, BusIo.ask) with a scripted link: outcomes as the
 * doctor sees them, counted as scan probes (never the bus's timeouts), the bus's timeout on every request, and
 * the background priority: a poll cycle's requests are not split by the doctor's, a waiting poll goes first.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BACKGROUND_MAX_WAIT_MS, BusOwner, PRIORITY } from '../../src/drivers/modbus/bus-owner.js';
import { busDoctorIo } from '../../src/drivers/modbus/doctor/bus-io.js';
import { WireGarbled, WireTimeout, type ModbusTransport, type RawAnswer, type WireRequest } from '../../src/drivers/modbus/transport.js';
import { silentLogger } from '../../src/util/logger.js';
import { ownMs, stamp, waitedBetween } from '../helpers/lateness.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class Link implements ModbusTransport {
  readonly kind = 'rtu' as const;
  readonly label = 'fake';
  private up = false;
  /** What went on the line, in order: `p<unit>` a poll request, `d<unit>` a doctor's. */
  readonly order: string[] = [];
  readonly timeouts: number[] = [];
  doctorMs = 30;
  async open(): Promise<void> { this.up = true; }
  async close(): Promise<void> { this.up = false; }
  isOpen(): boolean { return this.up; }
  onLost(): void {}
  async drain(): Promise<void> {}
  async request(unit: number, _req: WireRequest): Promise<number[]> {
    this.order.push(`p${unit}`);
    await sleep(3);
    return [unit];
  }
  async exchange(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<RawAnswer> {
    this.order.push(`d${unit}`);
    this.timeouts.push(timeoutMs);
    await sleep(this.doctorMs);
    if (unit === 1) return { kind: 'answer', pdu: Uint8Array.of(pdu[0]!, 2, 0, 7) };
    if (unit === 2) return { kind: 'exception', code: 2 };
    if (unit === 3) throw new WireGarbled('5 bytes, then 50 ms of silence: garbled', 5);
    throw new WireTimeout(timeoutMs);
  }
}

const owner = (link: Link): BusOwner =>
  new BusOwner(link, { busId: 'b', timeoutMs: 120, silenceMs: 0, drainMaxMs: 10, reopenMinMs: 10, reopenMaxMs: 40, reopenAfterTimeouts: 3, log: silentLogger });

test('ask: answer, exception, garbage, silence; scan probes, not the bus\'s timeouts; the bus\'s timeout; bytes sent', async () => {
  const link = new Link();
  link.doctorMs = 1;
  const bus = owner(link);
  await bus.start();
  try {
    const io = busDoctorIo(bus, 'rtu', 120);
    const pdu = Uint8Array.of(3, 0, 0, 0, 1);
    assert.equal(await io.ask(1, pdu, 40), { kind: 'answer', pdu: Uint8Array.of(3, 2, 0, 7) });
    assert.equal(await io.ask(2, pdu, 40), { kind: 'exception', code: 2 });
    assert.equal(await io.ask(3, pdu, 40), { kind: 'garbage', bytes: 5 });
    // Four silences in a row: no reopen, no timeouts counted (an id nobody owns is what a scan expects).
    for (let i = 0; i < 4; i++) assert.equal(await io.ask(9, pdu, 40), { kind: 'silence' });
    assert.equal(link.timeouts, [120, 120, 120, 120, 120, 120, 120], 'each waits the bus\'s timeout, not the doctor\'s');
    assert.equal([bus.totals.scanProbes, bus.totals.scanUnanswered, bus.totals.timeouts, bus.totals.requests, bus.totals.exceptions], [7, 4, 0, 0, 0]);
    assert.is(io.sentBytes(), 7 * (pdu.length + 3), 'unit + PDU + CRC per request');
    io.close();
    const after = await io.ask(1, pdu, 40).then(() => 'answered', (err: Error) => err.message);
    assert.is(after, 'the bus doctor was stopped');
  } finally {
    await bus.stop();
  }
});

test('a poll cycle of three requests is not split by the doctor; a waiting poll goes before it', async () => {
  const link = new Link();
  const bus = owner(link);
  await bus.start();
  try {
    const io = busDoctorIo(bus, 'rtu', 120);
    let doctoring = true;
    const doctor = (async () => {
      while (doctoring) await io.ask(9, Uint8Array.of(3, 0, 0, 0, 1), 40);
    })();
    await sleep(10);
    // A cycle queues its next request when the previous one is answered, as the poller does.
    const group = {};
    for (let cycle = 0; cycle < 3; cycle++) {
      const tag = bus.cycleTag(group, 100);
      for (let i = 0; i < 3; i++) await bus.enqueue(PRIORITY.poll, (bio) => bio.request(7, { fc: 3, address: i, count: 1 }), tag);
      await sleep(15);
    }
    doctoring = false;
    await doctor;
    const line = link.order.join(' ');
    // Between the doctor's requests, whole cycles only.
    const runs = line.split('d9').map((r) => r.trim()).filter(Boolean);
    assert.equal(runs, ['p7 p7 p7', 'p7 p7 p7', 'p7 p7 p7'], `every cycle whole: ${line}`);
  } finally {
    await bus.stop();
  }
});

test('a line the polls fill: the doctor still gets a request through after BACKGROUND_MAX_WAIT_MS', async () => {
  const link = new Link();
  link.doctorMs = 1;
  const bus = owner(link);
  await bus.start();
  try {
    let polling = true;
    const group = {};
    const polls = (async () => {
      while (polling) await bus.enqueue(PRIORITY.poll, (bio) => bio.request(7, { fc: 3, address: 0, count: 1 }), bus.cycleTag(group, 1));
    })();
    const t0 = stamp();
    const got = await busDoctorIo(bus, 'rtu', 120).ask(1, Uint8Array.of(3, 0, 0, 0, 1), 40);
    const t1 = stamp();
    const waited = t1.t - t0.t;
    polling = false;
    await polls;
    assert.is(got.kind, 'answer');
    // The upper bound less what this machine kept the thread (the polls, the bus and the doctor all run on it) from a CPU.
    assert.ok(waited >= BACKGROUND_MAX_WAIT_MS - 20 && ownMs(t0, t1) < BACKGROUND_MAX_WAIT_MS + 1000, `waited ${waited.toFixed(0)} ms (${waitedBetween(t0, t1).toFixed(0)} of them waiting for a CPU)`);
  } finally {
    await bus.stop();
  }
});

test.run();
