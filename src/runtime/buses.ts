/**
 * The buses part: one driver per configured bus, the devices they serve (shared with the sink and the
 * read/write pipeline), and the shadow's device entries. Live reconfiguration touches only what changed:
 * a new device starts polling on its running bus, a removed one stops and loses its shadow (rule 8), an
 * edited bus restarts that bus's driver only; every other device keeps its polls and its shadow state.
 */
import { resolveDevices } from '../config/load.js';
import type { BusConfig, GatewayConfig, ResolvedDevice } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { GatewayError } from '../core/errors.js';
import type { Part } from '../core/lifecycle.js';
import type { Shadow } from '../core/shadow.js';
import { driverFactories } from '../drivers/registry.js';
import type { Driver } from '../drivers/types.js';
import { createShadowSink, type ShadowSink } from '../io/sink.js';
import type { Logger } from '../util/logger.js';
import { sameValue } from '../util/same-value.js';

const same = sameValue;

export interface BusesOptions {
  shadow: Shadow;
  clock: Clock;
  log: Logger;
}

export class BusesPart implements Part<GatewayConfig> {
  readonly name = 'buses';
  /** Running drivers by bus id (a bus that failed to start is absent; `failed` says why). */
  readonly drivers = new Map<string, Driver>();
  /** Configured devices by id: the same map the sink and the read/write pipeline use. */
  readonly devices = new Map<string, ResolvedDevice>();
  readonly failed = new Map<string, string>();
  readonly sink: ShadowSink;
  private buses: BusConfig[] = [];
  private board: string | undefined;
  /** Buses whose line another holds (the bus doctor's settings search): stopped, and not started by a config change. */
  private readonly lent = new Set<string>();
  private stopped = false;

  constructor(config: GatewayConfig, private readonly opts: BusesOptions) {
    this.sink = createShadowSink(opts.shadow, this.devices, opts.log.child({ part: 'sink' }));
    this.buses = config.buses;
    this.board = config.gateway.board;
    for (const d of resolveDevices(config)) {
      this.devices.set(d.config.id, d);
      this.addToShadow(d);
    }
  }

  /** Starts every bus; one that fails is logged and its devices go offline by rule (the rest run). */
  async start(): Promise<void> {
    this.stopped = false;
    for (const bus of this.buses) await this.startBus(bus);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const id of [...this.drivers.keys()].reverse()) await this.stopBus(id);
  }

  async apply(next: GatewayConfig, prev: GatewayConfig): Promise<string[]> {
    const changes: string[] = [];
    const wanted = this.resolveKeeping(next);
    const prevBuses = new Map(prev.buses.map((b) => [b.id, b]));
    const nextBuses = new Map(next.buses.map((b) => [b.id, b]));
    const boardChanged = next.gateway.board !== prev.gateway.board;
    const restart = new Set<string>();
    for (const [id, bus] of nextBuses) {
      const old = prevBuses.get(id);
      if (old && !same(old, bus)) restart.add(id);
      if (old && boardChanged && bus.driver === 'gpio') restart.add(id);
    }
    this.checkCapacity(wanted);

    // 1. Buses that go or restart stop first, so no poll lands for a device about to change.
    for (const id of prevBuses.keys()) {
      if (nextBuses.has(id) && !restart.has(id)) continue;
      await this.stopBus(id);
      changes.push(nextBuses.has(id) ? `bus ${id}: restarted with its new settings` : `bus ${id}: removed`);
    }
    // 2. The device table and the shadow.
    for (const [id, d] of this.devices) {
      const n = wanted.get(id);
      if (n === d) continue;
      if (!n || n.model !== d.model) {
        this.opts.shadow.DeleteDevice(id);
        changes.push(n ? `device ${id}: model changed (its shadow starts anew)` : `device ${id}: removed`);
      } else {
        if (n.ttl !== d.ttl) this.opts.shadow.SetDeviceTTL(id, n.ttl);
        changes.push(`device ${id}: updated`);
      }
      this.devices.delete(id);
    }
    for (const [id, d] of wanted) {
      if (this.devices.has(id)) continue;
      if (!this.opts.shadow.HasDevice(id)) {
        this.addToShadow(d);
        if (!changes.some((c) => c.startsWith(`device ${id}:`))) changes.push(`device ${id}: added`);
      }
      this.devices.set(id, d);
    }
    this.buses = next.buses;
    this.board = next.gateway.board;
    // 3. Running buses take their new device lists; new and restarted buses start.
    for (const bus of next.buses) {
      const driver = this.drivers.get(bus.id);
      // A lent bus starts, with these settings, when its line comes back.
      if (!driver && this.lent.has(bus.id)) continue;
      if (!driver) {
        await this.startBus(bus);
        if (!prevBuses.has(bus.id)) changes.push(`bus ${bus.id}: added`);
        continue;
      }
      const list = this.devicesOf(bus.id);
      if (driver.setDevices) await driver.setDevices(list);
      else if (this.deviceSetChanged(bus.id, prev)) {
        // A driver that cannot change devices while running (gpio: lines are claimed at start) restarts.
        await this.stopBus(bus.id);
        await this.startBus(bus);
        changes.push(`bus ${bus.id}: restarted for its device changes`);
      }
    }
    return changes;
  }

  /**
   * Stops bus `id`'s driver (its port closed) so the bus doctor can open the port itself; resolves with what
   * gives the line back: the bus starts at its configured settings as they are then (a config change meanwhile
   * included), unless it was removed or the gateway is stopping. Giving back twice starts it once.
   */
  async lend(id: string): Promise<() => Promise<void>> {
    if (this.lent.has(id)) throw new GatewayError('BUS_BUSY', `bus ${id}: its line is already lent`);
    this.lent.add(id);
    await this.stopBus(id);
    let back = false;
    return async () => {
      if (back) return;
      back = true;
      this.lent.delete(id);
      const bus = this.buses.find((b) => b.id === id);
      if (bus && !this.stopped && !this.drivers.has(id)) await this.startBus(bus);
    };
  }

  stats(): Record<string, unknown> {
    return Object.fromEntries([...this.drivers].map(([id, d]) => [id, d.stats?.() ?? {}]));
  }

  /** The buses as configured, with whether each runs now. */
  list(): { bus: BusConfig; running: boolean; error: string | null }[] {
    return this.buses.map((bus) => ({
      bus, running: this.drivers.has(bus.id),
      error: this.lent.has(bus.id) ? 'stopped while the bus doctor searches its line settings' : this.failed.get(bus.id) ?? null,
    }));
  }

  private devicesOf(busId: string): ResolvedDevice[] {
    return [...this.devices.values()].filter((d) => d.config.bus === busId);
  }

  private deviceSetChanged(busId: string, prev: GatewayConfig): boolean {
    const before = prev.devices.filter((d) => d.bus === busId);
    const now = this.devicesOf(busId).map((d) => d.config);
    return !same(before, now);
  }

  /**
   * Resolved devices of `next`. An unchanged device keeps its very object (drivers leave it alone); one
   * whose settings changed but whose model did not keeps its model object (its shadow is kept).
   */
  private resolveKeeping(next: GatewayConfig): Map<string, ResolvedDevice> {
    const out = new Map<string, ResolvedDevice>();
    for (const d of resolveDevices(next)) {
      const cur = this.devices.get(d.config.id);
      if (!cur || !same(cur.model, d.model)) out.set(d.config.id, d);
      else if (same(cur.config, d.config) && cur.ttl === d.ttl) out.set(d.config.id, cur);
      else out.set(d.config.id, { ...d, model: cur.model, points: cur.points });
    }
    return out;
  }

  /** A change the fixed-size table cannot hold is refused before anything changes. */
  private checkCapacity(wanted: Map<string, ResolvedDevice>): void {
    const stats = this.opts.shadow.stats();
    let freePoints = stats.freePointSlots;
    let devices = stats.totalDevices;
    for (const [id, d] of this.devices) {
      const n = wanted.get(id);
      if (!n || n.model !== d.model) {
        freePoints += d.model.points.length;
        devices--;
      }
    }
    for (const [id, d] of wanted) {
      const cur = this.devices.get(id);
      if (cur && cur.model === d.model) continue;
      freePoints -= d.model.points.length;
      devices++;
    }
    if (freePoints < 0) throw new GatewayError('CAPACITY_POINTS', `shadow is full: the change needs ${-freePoints} more point slots than shadow.max_points allows`);
    if (devices > stats.totalDevices + stats.freeDeviceSlots) throw new GatewayError('CAPACITY_DEVICES', 'shadow is full: the change needs more devices than shadow.max_devices allows');
  }

  private addToShadow(d: ResolvedDevice): void {
    this.opts.shadow.AddDevice(d.config.id, d.model.name ?? d.config.model, d.ttl, {
      points: d.model.points.map((p) => ({ name: p.name, report: p.report, keep: p.gpio?.counter !== undefined })),
    });
  }

  private async startBus(bus: BusConfig): Promise<void> {
    const { shadow, clock, log } = this.opts;
    const busLog = log.child({ bus: bus.id });
    this.failed.delete(bus.id);
    const load = driverFactories[bus.driver];
    if (!load) {
      busLog.error({ driver: bus.driver }, 'no such driver in this build');
      this.failed.set(bus.id, `no ${bus.driver} driver in this build`);
      return;
    }
    try {
      const factory = await load();
      // The gpio driver maps BCM numbers through the board (gateway.board overrides detection).
      const busConfig = bus.driver === 'gpio' && this.board ? { ...bus, board: this.board } : bus;
      const driver = factory(busConfig, this.devicesOf(bus.id), {
        // Not busLog: each driver names its bus itself (as it does in the CLI), and pino would write `bus` twice.
        sink: this.sink, clock, log,
        lastValue: (id, point) => shadow.LastValues(id, point).value,
        lastWrite: (id, point) => shadow.LastValues(id, point).writeValue,
      });
      await driver.start();
      this.drivers.set(bus.id, driver);
    } catch (err) {
      busLog.error({ err }, 'bus failed to start');
      this.failed.set(bus.id, err instanceof Error ? err.message : String(err));
    }
  }

  private async stopBus(id: string): Promise<void> {
    const driver = this.drivers.get(id);
    this.drivers.delete(id);
    this.failed.delete(id);
    try {
      await driver?.stop();
    } catch (err) {
      this.opts.log.error({ err, bus: id }, 'bus failed to stop');
    }
  }
}
