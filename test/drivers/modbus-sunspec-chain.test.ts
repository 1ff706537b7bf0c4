/**
 * A SunSpec chain that changes while the link stays up (an inverter switched between its integer and float
 * models, or updated, behind a gateway that never dropped the line): each poll reads the ID register of every
 * model it uses with the points, so the very cycle that finds another model there publishes nothing, and the
 * chain is walked again. The device is the library's `sunspec-inverter` on a scripted link that serves a
 * register image laid out by hand from the SunSpec model files (model_1, model_103, model_113).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/core/clock.js';
import { GatewayError } from '../../src/core/errors.js';
import { interpretRaw } from '../../src/core/raw-values.js';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import { BusOwner } from '../../src/drivers/modbus/bus-owner.js';
import { DEFAULT_HEALTH } from '../../src/drivers/modbus/device-health.js';
import { compileDevice } from '../../src/drivers/modbus/device-plan.js';
import { Poller } from '../../src/drivers/modbus/poller.js';
import type { ModbusTransport, WireRequest } from '../../src/drivers/modbus/transport.js';
import { rtuCostModel } from '../../src/protocol/modbus/wire-cost.js';
import { silentLogger } from '../../src/util/logger.js';
import { FakeSink } from './modbus-rig.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const f32 = (v: number): number[] => {
  const b = Buffer.alloc(4);
  b.writeFloatBE(v);
  return [b.readUInt16BE(0), b.readUInt16BE(2)];
};

/** "SunS" at 40000, model 1 of `m1Length`, then `id` with its `words` (ID and L included), then the end marker. */
function chain(m1Length: number, id: number, length: number, data: Record<number, number[]>): Map<number, number> {
  const regs = new Map<number, number>();
  const put = (at: number, words: number[]): void => words.forEach((w, i) => regs.set(at + i, w & 0xffff));
  put(40000, [0x5375, 0x6e53, 1, m1Length, ...new Array<number>(m1Length).fill(0)]);
  const m = 40002 + 2 + m1Length;
  put(m, [id, length, ...new Array<number>(length).fill(0)]);
  for (const [offset, words] of Object.entries(data)) put(m + Number(offset), words);
  put(m + 2 + length, [0xffff, 0]);
  return regs;
}

// Model 103 (L 50): W 612 at 14 with W_SF +1 at 15 = 6120 W; Hz 5001 at 16, Hz_SF -2 at 17 = 50.01 Hz.
const INT = chain(66, 103, 50, { 14: [612, 1], 16: [5001, 0xfffe] });
// Model 113 (L 60, model 1 of 65 as a Fronius serves it): W float at 22, Hz float at 24.
const FLOAT = chain(65, 113, 60, { 22: f32(5873.5), 24: f32(49.98) });

/** Answers FC03 from whichever image is current; a hole is exception 2. The link never drops. */
class InverterLink implements ModbusTransport {
  readonly kind = 'tcp' as const;
  readonly label = 'scripted inverter';
  image = INT;
  /** Reads of the "SunS" marker: one per walk of the chain. */
  walks = 0;
  private up = false;
  async open(): Promise<void> { this.up = true; }
  async close(): Promise<void> { this.up = false; }
  isOpen(): boolean { return this.up; }
  onLost(): void {}
  async drain(): Promise<void> {}
  async request(_unit: number, req: WireRequest): Promise<number[]> {
    await sleep(1);
    if (req.fc !== 3) throw new GatewayError('MODBUS_EXCEPTION', 'modbus exception 1 (illegal function)');
    if (req.address === 40000) this.walks++;
    const out: number[] = [];
    for (let i = 0; i < req.count; i++) {
      const v = this.image.get(req.address + i);
      if (v === undefined) throw new GatewayError('MODBUS_EXCEPTION', 'modbus exception 2 (illegal data address)');
      out.push(v);
    }
    return out;
  }
}

test('the chain changes under a running poll (103 → 113, link up all along): that cycle publishes nothing, the chain is walked again, the floats are read; a link that comes up is walked again', async () => {
  const config = validateConfig({
    buses: [{ id: 'inv-bus', driver: 'modbus-tcp', host: '127.0.0.1', port: 502 }],
    devices: [{ id: 'inv', model: 'sunspec-inverter', bus: 'inv-bus', unit_id: 1, poll: '40ms' }],
  }, { env: {}, checkers: [] });
  const resolved = resolveDevices(config)[0]!;
  const device = compileDevice(resolved, { cost: rtuCostModel(9600), maxRegisters: 125, maxGap: 'auto' }, DEFAULT_HEALTH);
  const link = new InverterLink();
  const bus = new BusOwner(link, { busId: 'b', timeoutMs: 150, silenceMs: 0, drainMaxMs: 10, reopenMinMs: 10, reopenMaxMs: 40, reopenAfterTimeouts: 100, log: silentLogger });
  let opens = 0;
  const sink = new FakeSink();
  const poller = new Poller([device], bus, { retries: 0, timeoutMs: 150, sink, clock: systemClock, log: silentLogger });
  const shown = (): { ac_power?: unknown; frequency?: unknown; w_sf?: unknown }[] =>
    sink.dataOf('inv').map((e) => interpretRaw(resolved.points, e.values!).values);
  await bus.start();
  poller.start();
  try {
    const deadline = Date.now() + 5000;
    while (!shown().some((v) => v.ac_power === 6120)) {
      if (Date.now() > deadline) assert.unreachable(`the 103 values never showed: ${JSON.stringify(shown().at(-1))}`);
      await sleep(10);
    }
    opens = bus.totals.opens;
    link.image = FLOAT; // the inverter now serves 1 (65) + 113; the link stays up
    while (!shown().some((v) => v.ac_power === 5873.5)) {
      if (Date.now() > deadline) assert.unreachable(`the 113 values never showed: ${JSON.stringify(shown().at(-1))}`);
      await sleep(10);
    }
    assert.is(link.walks, 2, 'walked at start and once after the change');
    // The link re-opening (the poller is told so) is reason enough to walk again: what answers may have changed.
    poller.linkUp();
    while (link.walks < 3) {
      if (Date.now() > deadline) assert.unreachable('no walk after the link came up');
      await sleep(10);
    }
  } finally {
    await poller.stop();
    await bus.stop();
  }
  assert.is(bus.totals.opens, opens, 'the link never re-opened: the ID check found the change');
  const values = shown();
  const last = values.at(-1)!;
  assert.is(last.w_sf, 0);
  assert.ok(Math.abs((last.frequency as number) - 49.98) < 1e-4, `frequency ${String(last.frequency)}`);
  // Every update ever published carries the 103 chain's numbers or the 113 chain's, never a mix.
  const odd = values.filter((v) => !(v.ac_power === 6120 && v.frequency === 50.01) && !(v.ac_power === 5873.5 && Math.abs((v.frequency as number) - 49.98) < 1e-4));
  assert.equal(odd, [], `updates read at stale addresses: ${JSON.stringify(odd.slice(0, 3))}`);
});

test.run();
