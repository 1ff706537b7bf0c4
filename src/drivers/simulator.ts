/**
 * The simulator driver: deterministic generators per point, RW points that hold what was written (also
 * across restarts, from the shadow's persisted write values), and fault knobs (`sim_fault`: fail the first
 * N reads, or go silent) — the default for `make run` and for tests. Implements the same Driver contract
 * as the hardware drivers, so the REST/MQTT paths are exercised exactly as with real devices.
 */
import type { BusConfig, PointConfig, ResolvedDevice } from '../config/types.js';
import { GatewayError } from '../core/errors.js';
import { createGenerator, type Generator } from './simulator/generators.js';
import { PollTicker, type PollHandle } from './simulator/poll-ticker.js';
import type { Driver, DriverContext, PointWrite, RawValue } from './types.js';

interface SimDevice {
  device: ResolvedDevice;
  generators: Map<string, Generator>;
  held: Map<string, RawValue>;
  failReads: number;
  silent: boolean;
}

export interface SimulatorDriver extends Driver {
  /** Fault injection at run time (tests): fail the next N requests, or go silent / come back. */
  inject(deviceId: string, fault: { failNext?: number; silent?: boolean }): void;
}

const timeout = (id: string): GatewayError => new GatewayError('DRIVER_TIMEOUT', `simulated device ${id} did not answer`);

/** The value as the device would report it: the inverse of the point's scale/offset. */
const toDeviceRaw = (point: PointConfig, v: number | string): number | string =>
  typeof v === 'number' ? (v - (point.offset ?? 0)) / (point.scale ?? 1) : v;

export function createSimulatorDriver(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext): SimulatorDriver {
  const sims = new Map<string, SimDevice>();
  const counters = { reads: 0, writes: 0, failures: 0 };
  let running = false;

  // Constant and sine points are stateless: one generator per model point serves every device of the
  // model (a fleet of 1,000 identical devices builds 100 generators, not 100,000).
  const shared = new WeakMap<PointConfig, Generator>();
  const build = (device: ResolvedDevice): SimDevice => {
    const id = device.config.id;
    const generators = new Map<string, Generator>();
    const held = new Map<string, RawValue>();
    for (const point of device.model.points) {
      if (!point.sim) continue;
      const stateful = point.sim.fn === 'counter' || point.sim.fn === 'random_walk';
      let gen = stateful ? undefined : shared.get(point);
      if (!gen) {
        const last = stateful ? ctx.lastValue(id, point.name) : null;
        gen = createGenerator(point.sim, `${id}/${point.name}`, last === null ? undefined : toDeviceRaw(point, last));
        if (!stateful) shared.set(point, gen);
      }
      generators.set(point.name, gen);
      const written = point.access !== 'R' ? ctx.lastWrite(id, point.name) : null;
      if (written !== null) held.set(point.name, toDeviceRaw(point, written));
    }
    const fault = device.config.sim_fault ?? {};
    return { device, generators, held, failReads: fault.fail_reads ?? 0, silent: fault.silent ?? false };
  };
  for (const device of devices) sims.set(device.config.id, build(device));

  const readDevice = (sim: SimDevice, names: readonly string[]): Record<string, RawValue> => {
    counters.reads++;
    const id = sim.device.config.id;
    if (sim.silent || sim.failReads > 0) {
      if (sim.failReads > 0) sim.failReads--;
      counters.failures++;
      throw timeout(id);
    }
    const now = ctx.clock.now();
    const out: Record<string, RawValue> = {};
    for (const name of names) {
      const held = sim.held.get(name);
      const gen = sim.generators.get(name);
      if (held !== undefined) out[name] = held;
      else if (gen) out[name] = gen.next(now);
    }
    return out;
  };

  const simOf = (id: string): SimDevice => {
    const sim = sims.get(id);
    if (!sim) throw new GatewayError('DRIVER_ERROR', `device ${id} is not on bus ${bus.id}`);
    return sim;
  };

  /** Points grouped by effective poll interval (a point's poll overrides its device's). */
  const pollGroups = (sim: SimDevice): Map<number, string[]> => {
    const groups = new Map<number, string[]>();
    for (const point of sim.device.model.points) {
      if (point.access === 'W' || !point.sim) continue;
      const every = point.poll ?? sim.device.config.poll;
      const group = groups.get(every);
      if (group) group.push(point.name);
      else groups.set(every, [point.name]);
    }
    return groups;
  };

  // The one ticker of the bus: at most a few ms of polls per task (drivers/simulator/poll-ticker.ts).
  const ticker = new PollTicker(() => ctx.clock.mono());
  /** Poll handles per device, so one device can be added or removed while the others keep their phase. */
  const polls = new Map<string, PollHandle[]>();

  /** `from`: the instant the phases count from, one for a whole fleet, so its first round keeps its order. */
  const schedule = (sim: SimDevice, index: number, count: number, from: number): void => {
    const id = sim.device.config.id;
    const own: PollHandle[] = [];
    polls.set(id, own);
    for (const [every, names] of pollGroups(sim)) {
      const poll = (): void => {
        let values: Record<string, RawValue>;
        try {
          values = readDevice(sim, names);
        } catch (err) {
          ctx.sink.failure(id, err as Error);
          return;
        }
        ctx.sink.data(id, values);
      };
      // ~2 ms per device, at most the interval or 1 s: a small demo answers at once, a big fleet spreads.
      const offset = Math.floor((index / count) * Math.min(every, 1000, count * 2));
      own.push(ticker.add(every, from + offset, poll));
    }
  };
  const unschedule = (id: string): void => {
    for (const p of polls.get(id) ?? []) p.cancel();
    polls.delete(id);
  };

  return {
    busId: bus.id,
    async start() {
      running = true;
      // First polls are spread over the interval (at most 1 s) instead of all at once: start-up stays
      // short with thousands of devices, and load is even from the first cycle, as on a real bus.
      const all = [...sims.values()];
      const from = ctx.clock.mono();
      all.forEach((sim, i) => schedule(sim, i, all.length, from));
    },
    async stop() {
      running = false;
      ticker.clear();
      polls.clear();
    },
    async setDevices(next) {
      const wanted = new Map(next.map((d) => [d.config.id, d]));
      for (const [id, sim] of sims) {
        const d = wanted.get(id);
        // Same resolved device object: untouched (its polls keep their phase). Changed or gone: rebuilt.
        if (d === sim.device) continue;
        unschedule(id);
        sims.delete(id);
      }
      for (const [id, d] of wanted) {
        if (sims.has(id)) continue;
        const sim = build(d);
        sims.set(id, sim);
        if (running) schedule(sim, 0, 1, ctx.clock.mono());
      }
    },
    async probe(device) {
      const sim = build(device);
      const names = device.model.points.filter((p) => p.access !== 'W' && p.sim).map((p) => p.name);
      return { values: readDevice(sim, names), errors: {} };
    },
    async read(id, points) {
      return readDevice(simOf(id), points);
    },
    async write(id, values: readonly PointWrite[]) {
      const sim = simOf(id);
      counters.writes++;
      if (sim.silent) {
        counters.failures++;
        throw timeout(id);
      }
      for (const { name, value } of values) sim.held.set(name, value);
    },
    inject(id, fault) {
      const sim = simOf(id);
      if (fault.failNext !== undefined) sim.failReads = fault.failNext;
      if (fault.silent !== undefined) sim.silent = fault.silent;
    },
    stats() {
      return { driver: 'simulator', devices: sims.size, ...counters };
    },
  };
}
