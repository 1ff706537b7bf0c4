/**
 * The simulator driver: deterministic generators per point, RW points that hold what was written (also
 * across restarts, from the shadow's persisted write values), and fault knobs (`sim_fault`: fail the first
 * N reads, or go silent) — the default for `make run` and for tests. Implements the same Driver contract
 * as the hardware drivers, so the REST/MQTT paths are exercised exactly as with real devices.
 */
import type { BusConfig, ModelConfig, PointConfig, ResolvedDevice } from '../config/types.js';
import { GatewayError } from '../core/errors.js';
import { createGenerator, type Generator } from './simulator/generators.js';
import { PollTicker, type PollHandle } from './simulator/poll-ticker.js';
import type { Driver, DriverContext, PointWrite, RawValue } from './types.js';

/**
 * What every device of one model shares: its simulated points in model order, their stateless generators, and
 * the poll groups per device poll interval. A fleet of 1,000 identical devices builds this once; each device
 * holds only its stateful generators (walks, counters), so a device costs ~10 small objects instead of a map of
 * 100 generators and its own lists of point names.
 */
interface SimModel {
  points: PointConfig[];
  index: Map<string, number>;
  /** By position: the generator every device shares (constant, sine), or undefined for a stateful point. */
  shared: (Generator | undefined)[];
  /** By position: where a stateful point's generator is in a device's own list (-1: shared). */
  own: number[];
  /** By device poll interval (ms). */
  groups: Map<number, PollGroup[]>;
}

/** The points one poll reads: positions in the model's simulated points, and their names. */
interface PollGroup {
  every: number;
  at: number[];
  names: string[];
}

interface SimDevice {
  device: ResolvedDevice;
  model: SimModel;
  gens: Generator[];
  /** Written values a read returns instead of the generator's; created by the first write. */
  held: Map<string, RawValue> | null;
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

  const models = new WeakMap<ModelConfig, SimModel>();
  const modelOf = (model: ModelConfig): SimModel => {
    let m = models.get(model);
    if (m) return m;
    const points = model.points.filter((p) => p.sim);
    let owned = 0;
    const own = points.map((p) => (p.sim!.fn === 'counter' || p.sim!.fn === 'random_walk' ? owned++ : -1));
    m = {
      points,
      index: new Map(points.map((p, i) => [p.name, i])),
      shared: points.map((p, i) => (own[i]! < 0 ? createGenerator(p.sim!, p.name) : undefined)),
      own,
      groups: new Map(),
    };
    models.set(model, m);
    return m;
  };

  const build = (device: ResolvedDevice): SimDevice => {
    const id = device.config.id;
    const model = modelOf(device.model);
    const gens: Generator[] = [];
    let held: Map<string, RawValue> | null = null;
    model.points.forEach((point, i) => {
      if (model.own[i]! >= 0) {
        const last = ctx.lastValue(id, point.name);
        gens.push(createGenerator(point.sim!, `${id}/${point.name}`, last === null ? undefined : toDeviceRaw(point, last)));
      }
      const written = point.access !== 'R' ? ctx.lastWrite(id, point.name) : null;
      if (written !== null) (held ??= new Map()).set(point.name, toDeviceRaw(point, written));
    });
    const fault = device.config.sim_fault ?? {};
    return { device, model, gens, held, failReads: fault.fail_reads ?? 0, silent: fault.silent ?? false };
  };
  for (const device of devices) sims.set(device.config.id, build(device));

  /** A point's value now: what was written to it, else its generator's next value. */
  const valueAt = (sim: SimDevice, i: number, now: number): RawValue => {
    const held = sim.held?.get(sim.model.points[i]!.name);
    if (held !== undefined) return held;
    const own = sim.model.own[i]!;
    return (own < 0 ? sim.model.shared[i]! : sim.gens[own]!).next(now);
  };

  /** Counts the read; throws as a silent or failing device would. */
  const answer = (sim: SimDevice): void => {
    counters.reads++;
    if (sim.silent || sim.failReads > 0) {
      if (sim.failReads > 0) sim.failReads--;
      counters.failures++;
      throw timeout(sim.device.config.id);
    }
  };

  const readGroup = (sim: SimDevice, group: PollGroup): Record<string, RawValue> => {
    answer(sim);
    const now = ctx.clock.now();
    const out: Record<string, RawValue> = {};
    for (let k = 0; k < group.at.length; k++) out[group.names[k]!] = valueAt(sim, group.at[k]!, now);
    return out;
  };

  const readDevice = (sim: SimDevice, names: readonly string[]): Record<string, RawValue> => {
    answer(sim);
    const now = ctx.clock.now();
    const out: Record<string, RawValue> = {};
    for (const name of names) {
      const i = sim.model.index.get(name);
      // valueAt looks at the written values itself; a point without a generator can only have been written.
      const v = i !== undefined ? valueAt(sim, i, now) : sim.held?.get(name);
      if (v !== undefined) out[name] = v;
    }
    return out;
  };

  const simOf = (id: string): SimDevice => {
    const sim = sims.get(id);
    if (!sim) throw new GatewayError('DRIVER_ERROR', `device ${id} is not on bus ${bus.id}`);
    return sim;
  };

  /** Points grouped by effective poll interval (a point's poll overrides its device's), shared by the model's devices. */
  const pollGroups = (sim: SimDevice): PollGroup[] => {
    const every = sim.device.config.poll;
    let groups = sim.model.groups.get(every);
    if (groups) return groups;
    const by = new Map<number, PollGroup>();
    sim.model.points.forEach((point, i) => {
      if (point.access === 'W') return;
      const e = point.poll ?? every;
      let group = by.get(e);
      if (!group) by.set(e, (group = { every: e, at: [], names: [] }));
      group.at.push(i);
      group.names.push(point.name);
    });
    groups = [...by.values()];
    sim.model.groups.set(every, groups);
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
    for (const group of pollGroups(sim)) {
      const every = group.every;
      const poll = (): void => {
        let values: Record<string, RawValue>;
        try {
          values = readGroup(sim, group);
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
      for (const { name, value } of values) (sim.held ??= new Map()).set(name, value);
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
