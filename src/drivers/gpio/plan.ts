/**
 * Resolves gpio devices into one spec per line (pin parsed, durations in ms, defaults filled).
 * Shared by the config check and the driver so both read a point's gpio block the same way.
 */
import { parseDuration } from '../../core/duration.js';
import type { GpioPointBlock, PointConfig, ResolvedDevice } from '../../config/types.js';
import { MAX_BCM, PI_40PIN_HEADER, parsePin } from './header.js';
import type { BoardDefinition } from './board.js';
import type { Level } from './port.js';

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
      });
    }
  }
  return { lines, problems };
}
