/**
 * The poller's schedule on a scripted link: a stall of the bus (another unit's timeouts) costs a live unit
 * no cycles (fixed-rate grid, missed cycles made up); dead units are probed per poll interval within the
 * probe line budget; a link that comes back is polled at once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/core/clock.js';
import { BusOwner } from '../../src/drivers/modbus/bus-owner.js';
import { DEFAULT_HEALTH, DeviceHealth } from '../../src/drivers/modbus/device-health.js';
import { compileDevice } from '../../src/drivers/modbus/device-plan.js';
import { PROBE_LINE_SHARE, Poller } from '../../src/drivers/modbus/poller.js';
import { WireGarbled, WireTimeout, type ModbusTransport } from '../../src/drivers/modbus/transport.js';
import { rtuCostModel } from '../../src/protocol/modbus/wire-cost.js';
import { silentLogger } from '../../src/util/logger.js';
import { stamp, watchLateness } from '../helpers/lateness.js';
import { FakeSink, device, point, waitFor } from './modbus-rig.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Outcome = 'ok' | 'timeout' | 'garbled';

/**
 * Unit 9 is dead (every request times out after 150 ms); every other unit answers in 2 ms, unless `script`
 * says otherwise for its n-th request (from 0).
 */
class ScriptedLink implements ModbusTransport {
  readonly kind = 'rtu' as const;
  readonly label = 'scripted';
  private up = false;
  private readonly asked = new Map<number, number>();
  /** When unit 9 (the dead one) was asked, performance.now(). */
  readonly deadAsks: number[] = [];
  /** The event loop's CPU wait (ms, lateness.ts) at each of those asks. */
  readonly deadWaits: number[] = [];
  constructor(private readonly script: (unit: number, n: number) => Outcome = () => 'ok') {}
  async open(): Promise<void> { this.up = true; }
  async close(): Promise<void> { this.up = false; }
  isOpen(): boolean { return this.up; }
  onLost(): void {}
  async request(unit: number): Promise<number[]> {
    const n = this.asked.get(unit) ?? 0;
    this.asked.set(unit, n + 1);
    if (unit === 9) {
      const at = stamp();
      this.deadAsks.push(at.t);
      this.deadWaits.push(at.waited);
    }
    const outcome = unit === 9 ? 'timeout' : this.script(unit, n);
    if (outcome === 'timeout') {
      await sleep(150);
      throw new WireTimeout(150);
    }
    if (outcome === 'garbled') throw new WireGarbled('scripted');
    await sleep(2);
    return [unit];
  }
  async drain(): Promise<void> {}
}

const plan = { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' as const };
const compiled = (id: string, unit: number, pollMs: number) =>
  compileDevice(device(id, unit, [point('v', { table: 'holding', address: 0, data_type: 'uint16' }, 'R', 'int')], pollMs), plan, DEFAULT_HEALTH);

async function withPoller(devices: ReturnType<typeof compiled>[], fn: (poller: Poller, sink: FakeSink) => Promise<void>, link = new ScriptedLink()): Promise<void> {
  const bus = new BusOwner(link, { busId: 'b', timeoutMs: 150, silenceMs: 4, drainMaxMs: 10, reopenMinMs: 10, reopenMaxMs: 40, reopenAfterTimeouts: 100, log: silentLogger });
  const sink = new FakeSink();
  const poller = new Poller(devices, bus, { retries: 1, timeoutMs: 150, sink, clock: systemClock, log: silentLogger });
  await bus.start();
  poller.start();
  try {
    await fn(poller, sink);
  } finally {
    await poller.stop();
    await bus.stop();
  }
}

test('a live unit keeps its poll rate while a dead one holds the bus with timeouts (missed cycles are made up)', async () => {
  const live = compiled('live', 1, 40);
  await withPoller([live, compiled('dead', 9, 400)], async (_poller, sink) => {
    const t0 = Date.now();
    const late = watchLateness();
    await sleep(1200);
    const cycles = sink.dataOf('live').filter((e) => e.at >= t0).length;
    // Of the time the poller's thread could run: what a busy job beside the tests kept it from a CPU at the end
    // of the window is not made up yet (23 of 30 seen), and is no stall of the bus.
    const nominal = Math.floor(late.ownMs / 40);
    console.log(`  live unit: ${cycles} cycles of ${nominal} while the dead one stalled the bus ${sink.failuresOf('dead').length} times`);
    assert.ok(sink.failuresOf('dead').length >= 2, 'the dead unit did stall the bus');
    assert.ok(cycles >= 0.9 * nominal, `${cycles} of ${nominal} cycles`);
  });
});

test('a cycle that failed by a timeout is made up: a unit hit by one bad frame in 20 keeps its poll rate', async () => {
  // Requests 18 and 19 of every 20 time out: the cycle's request and its retry, one failed cycle in 19.
  const link = new ScriptedLink((_unit, n) => (n % 20 >= 18 ? 'timeout' : 'ok'));
  const flaky = compiled('flaky', 1, 40);
  await withPoller([flaky], async (_poller, sink) => {
    const t0 = Date.now();
    const late = watchLateness();
    await sleep(2000);
    const ran = [...sink.dataOf('flaky'), ...sink.failuresOf('flaky')].filter((e) => e.at >= t0).length;
    const nominal = Math.floor(late.ownMs / 40);
    console.log(`  flaky unit: ${ran} cycles of ${nominal} (${sink.failuresOf('flaky').length} failed, each 300 ms)`);
    assert.ok(sink.failuresOf('flaky').length >= 2, 'cycles did fail');
    // Each failed cycle holds the unit 300 ms (7.5 intervals); not made up, the rate would be about two thirds.
    assert.ok(ran >= 0.85 * nominal, `${ran} of ${nominal} cycles`);
  }, link);
});

test('after a stall, failed cycles are an interval apart, not back to back', async () => {
  let failing = false;
  const link = new ScriptedLink(() => (failing ? 'garbled' : 'ok'));
  // 200 ms, not 40: the failures are stamped as their cycles end, and beside a busy job an end comes tens of ms
  // late; made up back to back, the gaps would be a few ms whatever the interval.
  const d = compiled('d', 1, 200);
  await withPoller([d], async (_poller, sink) => {
    await waitFor('the first poll', () => sink.dataOf('d').length >= 1, 5000);
    // The loop held up for 5 intervals (a CPU hog, a GC pause) while the unit stops answering.
    failing = true;
    const until = performance.now() + 1000;
    while (performance.now() < until);
    await waitFor('three failed cycles', () => sink.failuresOf('d').length >= 3, 5000);
    const at = sink.failuresOf('d').map((e) => e.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    assert.ok(gaps.every((g) => g >= 100), `failures at gaps of ${gaps.join(', ')} ms`);
  }, link);
});

test('dead units are probed once per poll interval, within a quarter of the line together', async () => {
  const a = compiled('a', 9, 1000);
  const b = compiled('b', 9, 1000);
  const slow = compiled('slow', 9, 5000);
  const poller = new Poller([a, b, slow], {} as BusOwner, { retries: 1, timeoutMs: 300, sink: new FakeSink(), clock: systemClock, log: silentLogger });
  assert.is(PROBE_LINE_SHARE, 0.25);
  a.health.degraded = true;
  assert.is(poller.probeEveryMs(a), 1200, 'one dead unit: a 300 ms probe every 1.2 s');
  b.health.degraded = true;
  assert.is(poller.probeEveryMs(a), 2400, 'two: every 2.4 s each');
  assert.is(poller.probeEveryMs(slow), 5000, 'never more often than the unit is polled');
});

test('the next probe of a degraded unit counts from the failed probe\'s start (the rule, on its own clock)', () => {
  const h = new DeviceHealth({ ...DEFAULT_HEALTH, failuresToDegrade: 1 });
  h.failed(10_150, 1000, 10_000); // sent at 10.0 s, timed out at 10.15 s: degraded
  assert.is(h.probeAt, 11_000, 'the period from its start, not from its timeout (11,150)');
  assert.ok(!h.mayPoll(10_999) && h.mayPoll(11_000));
  h.claim(11_000, 1000);
  h.failed(11_150, 1000, 11_000);
  assert.is(h.probeAt, 12_000, 'and so on for every probe');
  h.failed(11_200, 1000, 11_200); // an on-demand read that failed later does not bring the next probe earlier
  assert.is(h.probeAt, 12_200);
});

test('a dead unit\'s probe period counts from the probe\'s start, not from its timeout', async () => {
  // Poll 400 ms, timeout 150 ms: a probe every max(400, 150 / 0.25, the 1 s least backoff) = 1,000 ms from the
  // last probe's start. Counted from its timeout, probes are 1,150 ms apart or more. A gap is judged less the
  // time the event loop waited for a CPU within it (lateness.ts): beside a busy job every timer is late and
  // could stretch all five gaps past 1,150 ms, but the loop's own share of a gap stays the schedule's.
  // The link sees a probe after the poller claimed its period (listen before talk, then the write): a busy machine
  // that delays one probe's arrival more than the next's shortens that gap, by no more than the CPU wait measured.
  const link = new ScriptedLink();
  const late = watchLateness();
  await withPoller([compiled('dead', 9, 400)], async () => {
    await waitFor('six probes after the three failures that degrade it', () => link.deadAsks.length >= 3 + 6, 15_000);
    const probes = link.deadAsks.slice(3);
    const waits = link.deadWaits.slice(3);
    const gaps = probes.slice(1).map((t, i) => Math.round(t - probes[i]!));
    const own = gaps.map((g, i) => Math.round(g - (Number.isNaN(waits[i + 1]! - waits[i]!) ? 0 : waits[i + 1]! - waits[i]!)));
    assert.ok(Math.min(...gaps) >= 990 - late.ms, `no probe sooner than its period: gaps ${gaps.join(', ')} ms (${late})`);
    assert.ok(Math.min(...own) < 1150, `probes ${gaps.join(', ')} ms apart (${own.join(', ')} ms less the loop's CPU wait in each): the period counted from each timeout`);
  }, link);
});

test('a link that comes back is polled at once, not a poll interval later', async () => {
  const d = compiled('d', 1, 60_000);
  await withPoller([d], async (poller, sink) => {
    // Waited for, not slept on: a few seconds at most on a loaded machine is still far from the 60 s interval.
    await waitFor('the first poll', () => sink.dataOf('d').length === 1, 5000);
    poller.linkUp();
    await waitFor('the poll at once', () => sink.dataOf('d').length === 2, 5000);
    await sleep(50);
    assert.is(sink.dataOf('d').length, 2, 'once');
  });
});

test.run();
