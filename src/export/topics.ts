/**
 * The MQTT topic contract (DESIGN §5), in one file: every topic the gateway publishes or listens to is
 * built and parsed here, with the payload type it carries. Nothing else in the gateway concatenates topics.
 */
import type { Value } from '../core/types.js';
import { localTimeText } from '../util/local-time.js';

/** `<base>/<device>` retained, on change. Extra keys: one per point. */
export interface StatePayload {
  [point: string]: Value | boolean | string | null;
}
/** `<base>/<device>/availability` retained, plain text. */
export type AvailabilityPayload = 'online' | 'offline';
/** `<base>/<device>/set`: `{ "<point>": value, … }`. */
export type SetPayload = Record<string, unknown>;
/** `<base>/<device>/set/result`. */
export interface SetResultPayload {
  success: boolean;
  errorMsg: string;
  values: { name: string; value: unknown }[];
}
/** `<base>/event/data`: the seed's data-change event. `time` local `YYYY-MM-DD HH:MM:SS`, `ts` epoch ms. */
export interface DataEventPayload {
  id: string;
  values: { name: string; value: Value | null; reason?: string }[];
  time: string;
  ts: number;
}
/** `<base>/event/offline`: ShadowOffline. */
export interface OfflineEventPayload {
  id: string;
  reason: string;
  time: string;
  ts: number;
}
/** `<base>/bridge/state` retained, plain text. */
export type BridgeStatePayload = 'online' | 'offline';

/** Segments of `<base>` that are not device ids; a device with one of these ids is refused at start. */
export const RESERVED_SEGMENTS: ReadonlySet<string> = new Set(['event', 'bridge', 'shadow']);

/** What a topic under `<base>/` means; `null` for anything not in the contract. */
export type ParsedTopic =
  | { kind: 'state'; device: string }
  | { kind: 'availability'; device: string }
  | { kind: 'set'; device: string }
  | { kind: 'setResult'; device: string }
  | { kind: 'eventData' }
  | { kind: 'eventOffline' }
  | { kind: 'bridgeState' }
  | { kind: 'shadow' };

export class Topics {
  constructor(readonly base: string) {}

  state(device: string): string {
    return `${this.base}/${device}`;
  }
  availability(device: string): string {
    return `${this.base}/${device}/availability`;
  }
  set(device: string): string {
    return `${this.base}/${device}/set`;
  }
  setResult(device: string): string {
    return `${this.base}/${device}/set/result`;
  }
  get eventData(): string {
    return `${this.base}/event/data`;
  }
  get eventOffline(): string {
    return `${this.base}/event/offline`;
  }
  get bridgeState(): string {
    return `${this.base}/bridge/state`;
  }
  get shadow(): string {
    return `${this.base}/shadow`;
  }
  /** Subscription filter for every device's `set` (used by the bridge on the upstream side). */
  get setFilter(): string {
    return `${this.base}/+/set`;
  }

  /** Parses a topic under this base; `null` when it is outside the base or not in the contract. */
  parse(topic: string): ParsedTopic | null {
    const prefix = `${this.base}/`;
    if (!topic.startsWith(prefix)) return null;
    const parts = topic.slice(prefix.length).split('/');
    const [first, second, third] = parts;
    if (!first) return null;
    if (parts.length === 1) {
      if (first === 'shadow') return { kind: 'shadow' };
      return RESERVED_SEGMENTS.has(first) ? null : { kind: 'state', device: first };
    }
    if (first === 'event' && parts.length === 2) {
      if (second === 'data') return { kind: 'eventData' };
      if (second === 'offline') return { kind: 'eventOffline' };
      return null;
    }
    if (first === 'bridge' && parts.length === 2 && second === 'state') return { kind: 'bridgeState' };
    if (RESERVED_SEGMENTS.has(first)) return null;
    if (parts.length === 2 && second === 'availability') return { kind: 'availability', device: first };
    if (parts.length === 2 && second === 'set') return { kind: 'set', device: first };
    if (parts.length === 3 && second === 'set' && third === 'result') return { kind: 'setResult', device: first };
    return null;
  }

  /** True when `topic` is under `<base>/` (the namespace the gateway owns). */
  owns(topic: string): boolean {
    return topic === this.base || topic.startsWith(`${this.base}/`);
  }
}

/** A device id usable as one MQTT topic level: no wildcard, separator or NUL, not a reserved word. */
export function topicSafeDeviceId(id: string): boolean {
  return id.length > 0 && !/[#+/\u0000]/.test(id) && !RESERVED_SEGMENTS.has(id);
}

/** `YYYY-MM-DD HH:MM:SS` in local time, as the REST model prints times. */
export const localTime = (ms: number): string => (Number.isFinite(ms) ? localTimeText(ms) : '');
