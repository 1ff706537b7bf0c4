/**
 * Resolves gpio devices into one spec per line (pin parsed, durations in ms, defaults filled).
 * Shared by the config check and the driver so both read a point's gpio block the same way.
 */
import { parseDuration } from '../../core/duration.js';
import type { GpioPointBlock, PointConfig, ResolvedDevice } from '../../config/types.js';
import { MAX_BCM, PI_40PIN_HEADER, parsePin } from './header.js';
import type { BoardDefinition } from './board.js';
import type { Level } from './port.js';
import type { RatePer } from './counter.js';

export type Edge = NonNullable<GpioPointBlock['edge']>;

export interface LineSpec {
  deviceId: string;
  point: string;
  access: PointConfig['access'];
  type: PointConfig['type'];
  bcm: number;
  direction: 'in' | 'out';
  edge: Edge;
  activeLow: boolean;
  debounceMs: number;
  /** Logical initial value of an output (0 when not set: relays start off). */
  initial: Level;
  pollMs: number;
  /** A pulse counter on this input (the point is its total). */
  counter?: CounterSpec;
}

export interface CounterSpec {
  pulsesPerUnit: number;
  ratePer: RatePer;
  rateTimeoutMs: number;
  /** Points of the same device that report this counter's rate (`rate_of`). */
  ratePoints: string[];
}

export interface PlanProblem {
  deviceId: string;
  point: string;
  /** Key inside the point (`gpio.pin`), for the `path: message` text. */
  key: string;
  message: string;
}

/** Device poll when the loader left none (DESIGN §2 default). */
export const DEFAULT_POLL_MS = 1000;
/** Floor for poll intervals: a sysfs read per line is cheap, but a 0 ms timer would spin. */
export const MIN_POLL_MS = 10;

// At runtime durations arrive in ms; text is accepted too so the check works on unconverted input.
function toMs(value: unknown): number | string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  if (typeof value === 'string') {
    try {
      return parseDuration(value);
    } catch (e) {
      return (e as Error).message;
    }
  }
  return `must be a duration like "20ms", got ${JSON.stringify(value)}`;
}

const EDGES: readonly string[] = ['none', 'rising', 'falling', 'both'];

export function planLines(devices: readonly ResolvedDevice[], board?: BoardDefinition): { lines: LineSpec[]; problems: PlanProblem[] } {
  const lines: LineSpec[] = [];
  const problems: PlanProblem[] = [];
  const rates: RatePoint[] = [];
  const header = board?.header ?? PI_40PIN_HEADER;
  const maxBcm = board ? board.gpiochip.lines - 1 : MAX_BCM;
  for (const device of devices) {
    const deviceId = device.config.id;
    const devicePoll = toMs(device.config.poll);
    for (const point of device.model.points) {
      const problem = (key: string, message: string): void => {
        problems.push({ deviceId, point: point.name, key, message });
      };
      const gpio = point.gpio;
      if (!gpio) {
        problem('gpio', 'a point on a gpio bus needs a gpio block');
        continue;
      }
      if (gpio.rate_of !== undefined) {
        const counterDeclared = device.model.points.some((p) => p.name === gpio.rate_of && p.gpio?.counter !== undefined);
        rates.push({ deviceId, point, target: gpio.rate_of, counterDeclared, problem });
        continue;
      }
      const pin = parsePin(gpio.pin, header, maxBcm);
      if ('error' in pin) {
        problem('gpio.pin', pin.error);
        continue;
      }
      if (gpio.direction !== 'in' && gpio.direction !== 'out') {
        problem('gpio.direction', 'must be "in" or "out"');
        continue;
      }
      if (point.type === 'string') problem('type', 'a gpio point reads 0/1: use type "int"');
      const edge = gpio.edge ?? 'none';
      if (!EDGES.includes(edge)) problem('gpio.edge', 'must be none, rising, falling or both');
      if (gpio.direction === 'out' && edge !== 'none') problem('gpio.edge', 'edges apply to inputs only');
      if (gpio.direction === 'in' && gpio.initial !== undefined) problem('gpio.initial', 'initial applies to outputs only');
      if (gpio.initial !== undefined && gpio.initial !== 0 && gpio.initial !== 1) problem('gpio.initial', 'must be 0 or 1');
      const debounce = toMs(gpio.debounce) ?? 0;
      if (typeof debounce === 'string') problem('gpio.debounce', debounce);
      const poll = toMs(point.poll) ?? devicePoll ?? DEFAULT_POLL_MS;
      if (typeof poll === 'string') problem('poll', poll);
      const counter = gpio.counter === undefined ? undefined : planCounter(point, problem);
      lines.push({
        deviceId,
        point: point.name,
        access: point.access,
        type: point.type,
        bcm: pin.bcm,
        direction: gpio.direction,
        edge: EDGES.includes(edge) ? edge : 'none',
        activeLow: gpio.active_low === true,
        debounceMs: typeof debounce === 'number' ? debounce : 0,
        initial: gpio.initial === 1 ? 1 : 0,
        pollMs: Math.max(MIN_POLL_MS, typeof poll === 'number' ? poll : DEFAULT_POLL_MS),
        ...(counter ? { counter } : {}),
      });
    }
  }
  for (const rate of rates) attachRate(rate, lines);
  return { lines, problems };
}

type Problem = (key: string, message: string) => void;

interface RatePoint {
  deviceId: string;
  point: PointConfig;
  target: string;
  /** The target point has a gpio.counter block (valid or not). */
  counterDeclared: boolean;
  problem: Problem;
}

const RATE_PER: readonly string[] = ['h', 'min', 's'];

/** A counter's settings, or undefined after reporting why it cannot count. */
function planCounter(point: PointConfig, report: Problem): CounterSpec | undefined {
  const gpio = point.gpio!;
  const counter = gpio.counter!;
  let bad = false;
  const problem: Problem = (key, message) => {
    bad = true;
    report(key, message);
  };
  if (gpio.direction !== 'in') problem('gpio.counter', 'a counter counts pulses on an input: use direction "in"');
  if ((gpio.edge ?? 'none') === 'none') problem('gpio.edge', 'a counter counts edges: set edge to "rising", "falling" or "both"');
  // Defaults come from the schema (a config that skipped it names the key as missing).
  const perUnit = counter.pulses_per_unit;
  if (typeof perUnit !== 'number' || !(perUnit > 0) || !Number.isFinite(perUnit)) problem('gpio.counter.pulses_per_unit', 'must be a number above 0');
  // The total is persisted as the shown value and turned back into whole pulses at start: a value rounded
  // by the point would lose pulses at every restart.
  if (point.type === 'int' && perUnit !== 1) {
    problem('type', `a counter with pulses_per_unit ${perUnit} has fractional totals: use type "float"`);
  }
  if (point.decimals !== undefined) problem('decimals', 'a counter total is not rounded (the persisted total must keep every pulse)');
  const ratePer = counter.rate_per;
  if (!RATE_PER.includes(ratePer)) problem('gpio.counter.rate_per', 'must be "h", "min" or "s"');
  const timeout = toMs(counter.rate_timeout);
  if (timeout === undefined) problem('gpio.counter.rate_timeout', 'must be a duration like "5m"');
  else if (typeof timeout === 'string') problem('gpio.counter.rate_timeout', timeout);
  else if (!(timeout > 0)) problem('gpio.counter.rate_timeout', 'must be longer than 0');
  if (bad) return undefined;
  return { pulsesPerUnit: perUnit, ratePer, rateTimeoutMs: timeout as number, ratePoints: [] };
}

function attachRate(rate: RatePoint, lines: readonly LineSpec[]): void {
  const { point, target, problem } = rate;
  const gpio = point.gpio!;
  const own = (['pin', 'direction', 'debounce', 'initial', 'counter'] as const).filter((k) => gpio[k] !== undefined);
  if (own.length > 0) {
    problem(`gpio.${own[0]}`, `a rate_of point has no line of its own: remove ${own.join(', ')} (they belong to the counter point "${target}")`);
    return;
  }
  if (point.type === 'string') problem('type', 'a rate is a number: use type "float"');
  const counter = lines.find((l) => l.deviceId === rate.deviceId && l.point === target)?.counter;
  if (counter) counter.ratePoints.push(point.name);
  // A counter whose own block has problems is reported there already.
  else if (!rate.counterDeclared) problem('gpio.rate_of', `"${target}" is not a counter point of this model (a point with a gpio.counter block)`);
}
