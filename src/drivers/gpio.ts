/**
 * The gpio driver (DESIGN §2, §6): inputs with edges + software debounce reported the moment they
 * settle, every line polled at its device's `poll` as a safety net, outputs with an initial state.
 * Values are logical 0/1 (after active_low). Hardware sits behind GpioPort; the default backend is
 * onoff on sysfs with the BCM → sysfs number mapping of gpio/chip.ts.
 */
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import { GatewayError, invalidValue, pointReadonly, unknownDevice, unknownPoint } from '../core/errors.js';
import type { Driver, DriverContext, DriverFactory, PointWrite, RawValue } from './types.js';
import { loadBoards, resolveBoard, type BoardDefinition } from './gpio/board.js';
import { resolveChipMapping, type ChipMapping } from './gpio/chip.js';
import { CounterPoint } from './gpio/counter-point.js';
import { DebouncedInput } from './gpio/input.js';
import { createOnoffPort } from './gpio/onoff-port.js';
import { planLines, type LineSpec } from './gpio/plan.js';
import type { GpioLine, GpioPort, Level } from './gpio/port.js';
import { systemTimers, type TimerHandle, type Timers } from './gpio/timers.js';

export { checkGpioConfig, gpioConfigChecker, type GpioCheckOptions } from './gpio/check.js';
export { loadBoards, resolveConfigBoard, type BoardDefinition } from './gpio/board.js';

/** How often an input without interrupts is sampled (its changes still go through the debounce). */
export const FALLBACK_SAMPLE_MS = 50;
/** The same for a pulse counter: an S0 pulse is 30 ms or longer, so sampling must be well inside that. */
export const COUNTER_SAMPLE_MS = 10;

/** What tests and other backends can replace; production uses the defaults. */
export interface GpioDriverDeps {
  /** Builds the port for the chosen chip; default: onoff on /sys/class/gpio. */
  openPort?: (mapping: ChipMapping) => Promise<GpioPort>;
  /** Skips the sysfs chip scan (a fake port has no chip); default scans `sysfsRoot`. */
  mapping?: ChipMapping;
  sysfsRoot?: string;
  modelPath?: string;
  boardsDir?: string;
  timers?: Timers;
}

interface LineState {
  spec: LineSpec;
  line?: GpioLine;
  input?: DebouncedInput;
  counter?: CounterPoint;
  /** Why the line could not be claimed. */
  error?: string;
}

const optionalText = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const toLogical = (level: Level, activeLow: boolean): Level => (activeLow ? (level === 1 ? 0 : 1) : level);
const driverError = (message: string): GatewayError => new GatewayError('DRIVER_ERROR', message);

export const createGpioDriver: DriverFactory = (bus, devices, ctx) => createGpioDriverWith(bus, devices, ctx);

export function createGpioDriverWith(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext, deps: GpioDriverDeps = {}): Driver {
  const log = ctx.log.child({ driver: 'gpio', bus: bus.id });
  const timers = deps.timers ?? systemTimers;
  const byDevice = new Map<string, Map<string, LineState>>(devices.map((d) => [d.config.id, new Map()]));
  const intervals: TimerHandle[] = [];
  const sampled: LineState[] = [];
  const sampledCounters: LineState[] = [];
  /** Rate point → the counter point it derives from, per device. */
  const rateOf = new Map<string, Map<string, string>>();
  let backend = 'none';
  let chipText = '';
  let running = false;

  const fail = (deviceId: string, message: string): void => {
    log.error({ device: deviceId }, message);
    ctx.sink.failure(deviceId, driverError(message));
  };

  async function chooseBoard(): Promise<BoardDefinition | undefined> {
    const choice = await resolveBoard({ override: optionalText(bus.board), boards: loadBoards(deps.boardsDir), modelPath: deps.modelPath });
    log.info({ board: choice.board?.name ?? null, source: choice.source, model: choice.model }, 'gpio board');
    return choice.board;
  }

  function openLine(port: GpioPort, state: LineState): void {
    const { spec } = state;
    const physicalInitial = toLogical(spec.initial, spec.activeLow);
    const line = port.open({ line: spec.bcm, direction: spec.direction, edges: spec.edge !== 'none', initial: physicalInitial });
    state.line = line;
    if (spec.direction === 'out') {
      // Also set explicitly: on a line that was already exported onoff ignores a failed direction write.
      line.write(physicalInitial);
      return;
    }
    const counter = spec.counter ? startCounter(spec) : undefined;
    state.counter = counter;
    const input = new DebouncedInput({
      edge: spec.edge, activeLow: spec.activeLow, debounceMs: spec.debounceMs, timers,
      read: () => line.read(),
      // A counter's pulses are reported with its total at the next poll (one update per poll, not per pulse).
      report: counter ? () => counter.pulse() : (value) => {
        if (running) ctx.sink.data(spec.deviceId, { [spec.point]: value });
      },
      onError: (e) => ctx.sink.failure(spec.deviceId, e),
    });
    state.input = input;
    input.poll();
    if (spec.edge === 'none') return;
    try {
      line.watch((level) => input.edge(level));
    } catch (e) {
      const every = counter ? COUNTER_SAMPLE_MS : FALLBACK_SAMPLE_MS;
      log.warn({ device: spec.deviceId, point: spec.point, pin: spec.bcm, err: (e as Error).message },
        `edge interrupts unavailable for ${spec.deviceId}.${spec.point}; polling it every ${every}ms instead`);
      (counter ? sampledCounters : sampled).push(state);
    }
  }

  function startCounter(spec: LineSpec): CounterPoint {
    const point = devices.find((d) => d.config.id === spec.deviceId)?.points.get(spec.point);
    const counter = new CounterPoint(spec, point, ctx.lastValue(spec.deviceId, spec.point), ctx.clock);
    if (counter.continuedFrom !== undefined) {
      log.info({ device: spec.deviceId, point: spec.point, total: counter.continuedFrom }, 'pulse counter continues from the persisted total');
    }
    return counter;
  }

  function reportTotals(deviceId: string, states: Iterable<LineState>): void {
    const values: Record<string, RawValue> = {};
    for (const state of states) if (state.counter && state.line) values[state.spec.point] = state.counter.total();
    if (Object.keys(values).length > 0) ctx.sink.data(deviceId, values);
  }

  function pollGroup(deviceId: string, states: readonly LineState[]): void {
    const values: Record<string, RawValue> = {};
    let error: Error | undefined;
    for (const state of states) {
      if (state.counter) {
        if (state.line) state.counter.collect(values);
        continue;
      }
      // A point waiting out its debounce is reported by the edge; a mid-bounce sample would be noise.
      if (!state.line || state.input?.settling) continue;
      try {
        values[state.spec.point] = state.input ? state.input.poll() : toLogical(state.line.read(), state.spec.activeLow);
      } catch (e) {
        error = e as Error;
      }
    }
    if (Object.keys(values).length > 0) ctx.sink.data(deviceId, values);
    if (error) ctx.sink.failure(deviceId, error);
  }

  function startPolling(): void {
    for (const [deviceId, states] of byDevice) {
      const groups = new Map<number, LineState[]>();
      for (const state of states.values()) {
        if (!state.line) continue;
        groups.set(state.spec.pollMs, [...(groups.get(state.spec.pollMs) ?? []), state]);
      }
      // First values at once so devices come online without waiting a whole poll.
      pollGroup(deviceId, [...groups.values()].flat());
      for (const [ms, group] of groups) intervals.push(timers.setInterval(() => pollGroup(deviceId, group), ms));
    }
    if (sampled.length > 0) {
      intervals.push(timers.setInterval(() => {
        for (const state of sampled) state.input?.sample();
      }, FALLBACK_SAMPLE_MS));
    }
    if (sampledCounters.length > 0) {
      intervals.push(timers.setInterval(() => {
        for (const state of sampledCounters) state.input?.sample();
      }, COUNTER_SAMPLE_MS));
    }
  }

  function lineFor(deviceId: string, point: string): LineState {
    const states = byDevice.get(deviceId);
    if (!states) throw unknownDevice();
    const state = states.get(rateOf.get(deviceId)?.get(point) ?? point);
    if (!state) throw unknownPoint(point);
    if (!state.line) throw driverError(`GPIO line of point ${point} is not available: ${state.error ?? 'driver not started'}`);
    return state;
  }

  /** Validated whole before any line moves: a bad entry means nothing is written (also the pre-flight check). */
  function plan(deviceId: string, values: readonly PointWrite[]): ({ state: LineState; level: Level } | { state: LineState; total: number })[] {
    return values.map(({ name, value }) => {
      const state = lineFor(deviceId, name);
      if (state.counter) return { state, total: state.counter.check(name, value) };
      if (state.spec.direction !== 'out' || state.spec.access === 'R') throw pointReadonly();
      const logical = value === true ? 1 : value === false ? 0 : value;
      if (logical !== 0 && logical !== 1) throw invalidValue(`value ${JSON.stringify(value)} is not 0 or 1 for point ${name}`);
      return { state, level: toLogical(logical, state.spec.activeLow) };
    });
  }

  return {
    busId: bus.id,

    async start(): Promise<void> {
      if (running) return;
      let board: BoardDefinition | undefined;
      let port: GpioPort;
      try {
        board = await chooseBoard();
        const mapping = deps.mapping ?? await resolveChipMapping({ sysfsRoot: deps.sysfsRoot, label: optionalText(bus.chip) ?? board?.gpiochip.label });
        chipText = `${mapping.chip.label} base ${mapping.chip.base}`;
        log.info({ chip: mapping.chip.label, base: mapping.chip.base, ngpio: mapping.chip.ngpio }, 'gpio chip');
        port = await (deps.openPort ?? createOnoffPort)(mapping);
        backend = port.name;
      } catch (e) {
        // Each device is told (offline with the reason), and the bus does not count as running: /buses and
        // /health/shadow say why, and a read or write names it instead of an unknown point.
        const why = `gpio bus ${bus.id} unavailable: ${(e as Error).message}`;
        for (const id of byDevice.keys()) fail(id, why);
        throw new Error(why);
      }
      const { lines, problems } = planLines(devices, board);
      for (const p of problems) fail(p.deviceId, `point ${p.point} ${p.key}: ${p.message}`);
      for (const spec of lines) {
        for (const name of spec.counter?.ratePoints ?? []) {
          const rates = rateOf.get(spec.deviceId) ?? new Map<string, string>();
          rateOf.set(spec.deviceId, rates.set(name, spec.point));
        }
        const state: LineState = { spec };
        byDevice.get(spec.deviceId)?.set(spec.point, state);
        try {
          openLine(port, state);
        } catch (e) {
          state.line?.close();
          state.line = undefined;
          state.error = (e as Error).message;
          fail(spec.deviceId, `cannot claim BCM ${spec.bcm} for point ${spec.point}: ${state.error}`);
        }
      }
      running = true;
      startPolling();
    },

    async stop(): Promise<void> {
      // Pulses since the last poll are reported once more: the shadow saved at a clean stop then holds them.
      if (running) for (const [deviceId, states] of byDevice) reportTotals(deviceId, states.values());
      running = false;
      for (const handle of intervals.splice(0)) timers.clearInterval(handle);
      sampled.length = 0;
      sampledCounters.length = 0;
      rateOf.clear();
      for (const states of byDevice.values()) {
        for (const state of states.values()) {
          state.input?.stop();
          state.line?.close();
          state.line = undefined;
          state.error = 'driver stopped';
        }
      }
    },

    async read(deviceId: string, points: readonly string[]): Promise<Record<string, RawValue>> {
      const values: Record<string, RawValue> = {};
      for (const point of points) {
        const { line, spec, counter } = lineFor(deviceId, point);
        const value = counter ? counter.read(point) : toLogical(line!.read(), spec.activeLow);
        if (value !== undefined) values[point] = value;
      }
      return values;
    },

    check(deviceId, values) {
      plan(deviceId, values);
    },

    async write(deviceId: string, values: readonly PointWrite[]): Promise<void> {
      for (const step of plan(deviceId, values)) {
        if ('total' in step) step.state.counter!.set(step.total);
        else step.state.line!.write(step.level);
      }
    },

    stats(): Record<string, unknown> {
      let open = 0;
      let failed = 0;
      for (const states of byDevice.values()) {
        for (const s of states.values()) s.line ? open++ : failed++;
      }
      return { backend, chip: chipText, lines: open, failed, polled_fallback: sampled.length + sampledCounters.length };
    },
  };
}
