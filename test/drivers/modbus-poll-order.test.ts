/**
 * The bus owner's poll order with a scripted link: a cycle of several requests, each queued when the one
 * before it is answered (as the poller does), keeps its place against cycles begun after it; on-demand
 * jobs still cut in between its requests; a group's next cycle starts its poll period later in the order.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BusOwner, PRIORITY } from '../../src/drivers/modbus/bus-owner.js';
import type { ModbusTransport, WireRequest } from '../../src/drivers/modbus/transport.js';
import { silentLogger } from '../../src/util/logger.js';

/** Answers every request after 2 ms and logs `unit:address` in wire order. */
class Link implements ModbusTransport {
  readonly kind = 'rtu' as const;
  readonly label = 'scripted';
  readonly wire: string[] = [];
  private up = false;
  async open(): Promise<void> { this.up = true; }
  async close(): Promise<void> { this.up = false; }
  isOpen(): boolean { return this.up; }
  onLost(): void {}
  async request(unit: number, req: WireRequest): Promise<number[]> {
    this.wire.push(`${unit}:${req.address}`);
    await new Promise((r) => setTimeout(r, 2));
    return [unit];
  }
  async drain(): Promise<void> {}
}

async function withBus(fn: (bus: BusOwner, link: Link) => Promise<void>): Promise<void> {
  const link = new Link();
  const bus = new BusOwner(link, { busId: 'b', timeoutMs: 50, silenceMs: 1, drainMaxMs: 5, reopenMinMs: 10, reopenMaxMs: 40, reopenAfterTimeouts: 100, log: silentLogger });
  await bus.start();
  try {
    await fn(bus, link);
  } finally {
    await bus.stop();
  }
}

/** One cycle as the poller runs it: `requests` addresses, each queued once the previous is answered. */
async function cycle(bus: BusOwner, group: object, unit: number, requests: number[], periodMs = 100, between?: () => void): Promise<void> {
  const tag = bus.cycleTag(group, periodMs);
  for (const address of requests) {
    await bus.enqueue(PRIORITY.poll, (io) => io.request(unit, { fc: 3, address, count: 1 }), tag);
    between?.();
  }
}

test('a 3-request cycle runs whole before cycles begun after it', async () => {
  await withBus(async (bus, link) => {
    const meter = {};
    const a = {};
    const b = {};
    await Promise.all([cycle(bus, meter, 1, [0, 1, 2]), cycle(bus, a, 2, [0]), cycle(bus, b, 3, [0])]);
    assert.equal(link.wire, ['1:0', '1:1', '1:2', '2:0', '3:0']);
  });
});

test('a group polled three times as often cycles three times per cycle of the other', async () => {
  await withBus(async (bus, link) => {
    const meter = {};
    const sensor = {};
    // Every cycle due at once (a saturated line): each group's next cycle starts its own period later in
    // the order, so the sensor (100 ms) goes three times for each cycle of the meter (300 ms).
    const rounds = async (group: object, unit: number, periodMs: number, cycles: number[][]): Promise<void> => {
      for (const requests of cycles) await cycle(bus, group, unit, requests, periodMs);
    };
    await Promise.all([rounds(sensor, 2, 100, [[0], [1], [2], [3]]), rounds(meter, 1, 300, [[0, 1, 2], [3, 4, 5]])]);
    assert.equal(link.wire, ['2:0', '1:0', '1:1', '1:2', '2:1', '2:2', '1:3', '1:4', '1:5', '2:3']);
  });
});

test('a write queued during a cycle still goes between its requests', async () => {
  await withBus(async (bus, link) => {
    let writes = 0;
    const write = (): void => {
      if (writes++ === 0) void bus.enqueue(PRIORITY.write, (io) => io.request(9, { fc: 6, address: 100, value: 1 }));
    };
    await Promise.all([cycle(bus, {}, 1, [0, 1, 2], 100, write), cycle(bus, {}, 2, [0])]);
    assert.equal(link.wire, ['1:0', '9:100', '1:1', '1:2', '2:0']);
  });
});

test.run();
