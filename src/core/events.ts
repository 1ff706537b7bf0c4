/** One typed event bus: `on(owner, event, fn)` / `emit` / `off(owner)`; a throwing listener never breaks the emitter. */
import type { DeviceState, Value } from './types.js';

export interface PointChange {
  name: string;
  /** null: the device reported "not available" for the point (reason says why). */
  value: Value | null;
  reason?: string;
}

export interface ShadowEvents {
  /** The shadow was updated with device data and at least one value changed (or a point reports always). */
  dataChange: { id: string; values: PointChange[]; time: number };
  /** Online flag transition (true: came online, false: went offline). */
  online: { id: string; online: boolean; state: DeviceState; time: number };
  /** A device was set offline: failures (rules 4, 5), TTL expiry, or a forced SetOffline. */
  ShadowOffline: { id: string; reason: 'failures' | 'no-data' | 'ttl' | 'forced'; time: number };
  /** Every state-machine step, transient ones (Checking, Refreshing) included. */
  stateChange: { id: string; from: DeviceState; to: DeviceState; time: number };
  deviceAdded: { id: string };
  deviceDeleted: { id: string };
}

type Listener<T> = (payload: T) => void;

export class EventBus<E extends object = ShadowEvents> {
  private readonly listeners = new Map<keyof E, { owner: unknown; fn: Listener<never> }[]>();

  constructor(private readonly onListenerError: (err: unknown, event: string) => void = () => {}) {}

  on<K extends keyof E>(owner: unknown, event: K, fn: Listener<E[K]>): void {
    const list = this.listeners.get(event) ?? [];
    list.push({ owner, fn: fn as Listener<never> });
    this.listeners.set(event, list);
  }

  /** Removes every listener `owner` registered; called by each part on stop. */
  off(owner: unknown): void {
    for (const [event, list] of this.listeners) {
      this.listeners.set(event, list.filter((l) => l.owner !== owner));
    }
  }

  hasListeners<K extends keyof E>(event: K): boolean {
    return (this.listeners.get(event)?.length ?? 0) > 0;
  }

  emit<K extends keyof E>(event: K, payload: E[K]): void {
    const list = this.listeners.get(event);
    if (!list) return;
    for (const { fn } of list) {
      try {
        (fn as Listener<E[K]>)(payload);
      } catch (err) {
        this.onListenerError(err, String(event));
      }
    }
  }
}
