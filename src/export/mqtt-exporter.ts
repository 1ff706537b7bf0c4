/**
 * Shadow → MQTT: retained state and availability per device, data/offline events, the `set` command path,
 * and Home Assistant discovery configs. Listens on the core bus; publishes through one `publish` function
 * (the broker, and the bridge behind it).
 */
import { isGatewayError } from '../core/errors.js';
import type { ShadowEvents } from '../core/events.js';
import type { DeviceRecord } from '../core/records.js';
import { haStatusTopic, type Principal } from './auth.js';
import type { ExportContext } from './context.js';
import { HaPublisher, type DiscoverySides } from './ha-publisher.js';
import type { DiscoveryDevice } from './homeassistant.js';
import {
  localTime,
  topicSafeDeviceId,
  type DataEventPayload,
  type OfflineEventPayload,
  type SetResultPayload,
  type StatePayload,
  type Topics,
} from './topics.js';

/** Publishes one message to the embedded broker and the bridge; `payload` '' with retain clears a retained topic. */
export type Publish = (topic: string, payload: string, retain: boolean) => void;

type Pending =
  | { kind: 'data'; event: ShadowEvents['dataChange'] }
  | { kind: 'availability'; id: string; online: boolean }
  | { kind: 'offline'; event: ShadowEvents['ShadowOffline'] };

// A flood of `set` messages must not pile up pending writes without bound.
const MAX_PENDING_SETS = 64;
/** Devices whose state and availability publishAll sends per turn of the event loop (~10 ms for 50 devices of 100 points here). */
const STATE_SLICE = 50;

export function statePayload(dev: DeviceRecord): StatePayload {
  const out: StatePayload = {};
  for (const p of dev.points) out[p.name] = p.value;
  out.online = dev.online;
  out.updated_at = dev.updatedAt === 0 ? '0001-01-01 00:00:00' : localTime(dev.updatedAt);
  return out;
}

export class MqttExporter {
  private pendingSets = 0;
  /** Devices whose state changed in the current task, and the events of that task, in order. */
  private readonly dirty = new Set<string>();
  private queue: Pending[] = [];
  private scheduled = false;
  private stopped = false;
  /**
   * Devices whose state publishAll has not sent yet (deferStates): a change before their slice is not published
   * on its own, since the slice sends the newer state and no client is admitted before (fleet F's polls before
   * ready built ~1,000 state payloads that way, each copying 100 points, for nobody).
   */
  private awaitingAll: Set<string> | null = null;
  private readonly counters = { states: 0, events: 0, sets: 0, setsFailed: 0, setsRefused: 0 };
  /** Home Assistant discovery, on the embedded broker and upstream. */
  readonly ha: HaPublisher;

  constructor(
    private readonly ctx: ExportContext,
    private readonly topics: Topics,
    private readonly publish: Publish,
    discovery: DiscoverySides = { local: (topic, payload) => publish(topic, payload, false) },
    deviceInfo?: (id: string, modelName: string) => DiscoveryDevice,
  ) {
    this.ha = new HaPublisher(ctx, topics, discovery, deviceInfo);
  }

  /**
   * Publishes the shadow's changes from now on. Every device's state and availability as it is now follows
   * from publishAll, once the gateway serves; discovery after that (republishDiscovery).
   */
  start(): void {
    const { bus } = this.ctx;
    bus.on(this, 'dataChange', (e) => {
      this.dirty.add(e.id);
      this.queue.push({ kind: 'data', event: e });
      this.schedule();
    });
    bus.on(this, 'online', (e) => {
      if (!topicSafeDeviceId(e.id)) return;
      this.dirty.add(e.id);
      this.queue.push({ kind: 'availability', id: e.id, online: e.online });
      this.schedule();
    });
    bus.on(this, 'ShadowOffline', (e) => {
      this.queue.push({ kind: 'offline', event: e });
      this.schedule();
    });
    bus.on(this, 'deviceAdded', (e) => {
      this.flush();
      this.publishDevice(e.id);
    });
    bus.on(this, 'deviceDeleted', (e) => {
      this.flush();
      this.awaitingAll?.delete(e.id);
      this.clearDevice(e.id);
    });
  }

  /**
   * Called before start when nobody sees a publish before publishAll is done: local clients are held until then,
   * and there is no bridge forwarding each publish upstream as it happens (with one, nothing is deferred).
   */
  deferStates(): void {
    this.awaitingAll = new Set(this.ctx.shadow.GetDeviceIds());
  }

  // Bus events are published at the end of the current task (a microtask), not inside the emitter:
  // the retained state of a device is built once for all the changes of that task (building it copies
  // the whole device out of the shadow, the dominant cost under bursts), then the events follow in
  // order. A subscriber that has seen an event has therefore always seen a state at least as new.
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      try {
        this.flush();
      } catch (err) {
        this.ctx.log.error({ err }, 'mqtt export flush failed');
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    if (this.dirty.size === 0 && this.queue.length === 0) return;
    const ids = [...this.dirty];
    this.dirty.clear();
    const queue = this.queue;
    this.queue = [];
    for (const id of ids) if (!this.awaitingAll?.has(id)) this.publishState(id);
    for (const m of queue) {
      if (m.kind === 'data') {
        const e = m.event;
        const payload: DataEventPayload = { id: e.id, values: e.values, time: localTime(e.time), ts: e.time };
        this.counters.events++;
        this.publish(this.topics.eventData, JSON.stringify(payload), false);
      } else if (m.kind === 'availability') {
        this.publish(this.topics.availability(m.id), m.online ? 'online' : 'offline', true);
      } else {
        const e = m.event;
        const payload: OfflineEventPayload = { id: e.id, reason: e.reason, time: localTime(e.time), ts: e.time };
        this.counters.events++;
        this.publish(this.topics.eventOffline, JSON.stringify(payload), false);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.ha.stop();
    this.ctx.bus.off(this);
    this.flush();
  }

  stats(): Record<string, unknown> {
    return { ...this.counters, pendingSets: this.pendingSets, homeassistant: { ...this.ha.seen } };
  }

  private publishState(id: string, dev = this.ctx.shadow.GetDeviceRecord(id)): void {
    if (!dev || !topicSafeDeviceId(id)) return;
    this.counters.states++;
    this.publish(this.topics.state(id), JSON.stringify(statePayload(dev)), true);
  }

  private publishDevice(id: string, discovery = true): void {
    const dev = this.ctx.shadow.GetDeviceRecord(id);
    if (!dev || !topicSafeDeviceId(id)) return;
    this.publishState(id, dev);
    this.publish(this.topics.availability(id), dev.online ? 'online' : 'offline', true);
    if (discovery) this.ha.publish(dev);
  }

  /**
   * Every device's retained state and availability, in slices of STATE_SLICE devices, one per turn of the event
   * loop (1,000 devices of 100 points at once were ~100 ms of the start's CPU in a profile on this machine); then the retained topics of
   * devices gone since `retainedTopics` were kept are cleared, and `done` is called. A change meanwhile is
   * published as usual; its device's slice then publishes the same state again, never an older one.
   */
  publishAll(retainedTopics: readonly string[], done: () => void): void {
    const ids = this.ctx.shadow.GetDeviceIds();
    let at = 0;
    const step = (): void => {
      if (this.stopped) return;
      for (const end = Math.min(at + STATE_SLICE, ids.length); at < end; at++) {
        this.awaitingAll?.delete(ids[at]!);
        this.publishDevice(ids[at]!, false);
      }
      if (at < ids.length) {
        setImmediate(step);
        return;
      }
      this.awaitingAll = null;
      this.clearStale(retainedTopics);
      done();
    };
    setImmediate(step);
  }

  /** Every device's discovery configs, everywhere (at start, once the gateway serves). */
  republishDiscovery(): void {
    this.ha.republish();
  }

  private clearDevice(id: string): void {
    if (!topicSafeDeviceId(id)) return;
    this.publish(this.topics.state(id), '', true);
    this.publish(this.topics.availability(id), '', true);
    this.ha.remove(id);
  }

  /** Retained topics left from devices deleted while the gateway was down. */
  private clearStale(retainedTopics: readonly string[]): void {
    for (const topic of retainedTopics) {
      const parsed = this.topics.parse(topic);
      if ((parsed?.kind === 'state' || parsed?.kind === 'availability') && !this.ctx.shadow.HasDevice(parsed.device)) {
        this.publish(topic, '', true);
      } else {
        this.ha.removeStale(topic);
      }
    }
  }

  /** A client publish that passed the ACL. */
  onClientPublish(topic: string, payload: Buffer, principal: Principal): void {
    const parsed = this.topics.parse(topic);
    if (parsed?.kind === 'set') {
      // handleSet answers every failure itself; this catch is for a bug in it, which must not end the process.
      this.handleSet(parsed.device, payload, principal).catch((err: unknown) => this.ctx.log.error({ err, device: parsed.device }, 'mqtt set failed'));
      return;
    }
    const prefix = this.ha.prefix;
    if (prefix && topic === haStatusTopic(prefix) && payload.toString() === 'online') this.ha.birth('local');
  }

  /** `<base>/<device>/set` → the batch write path → `<base>/<device>/set/result`. Never throws. */
  async handleSet(device: string, payload: Buffer, principal: Principal): Promise<SetResultPayload> {
    const result: SetResultPayload = { success: false, errorMsg: '', values: [] };
    const done = (): SetResultPayload => {
      if (result.success) this.counters.sets++;
      else this.counters.setsFailed++;
      let text: string;
      try {
        text = JSON.stringify(result);
      } catch {
        // The echoed values can be nested too deep to serialise (a payload of 50,000 brackets): answer without them.
        result.values = [];
        text = JSON.stringify(result);
      }
      this.publish(this.topics.setResult(device), text, false);
      return result;
    };
    if (principal.kind === 'anonymous' || (principal.kind === 'user' && !principal.canWrite)) {
      // The ACL already refuses these; kept so a wiring mistake can never open the write path.
      this.counters.setsRefused++;
      result.errorMsg = 'not authorized to write';
      return done();
    }
    let body: unknown;
    try {
      body = JSON.parse(payload.toString('utf8'));
    } catch (err) {
      result.errorMsg = `set payload is not valid JSON: ${(err as Error).message}`;
      return done();
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      result.errorMsg = 'set payload must be a JSON object {"<point>": value, …}';
      return done();
    }
    result.values = Object.entries(body).map(([name, value]) => ({ name, value }));
    if (result.values.length === 0) {
      result.errorMsg = 'set payload names no point';
      return done();
    }
    if (this.pendingSets >= MAX_PENDING_SETS) {
      result.errorMsg = 'too many writes pending, try again';
      return done();
    }
    this.pendingSets++;
    try {
      await this.ctx.io.writePoints(device, result.values);
      result.success = true;
    } catch (err) {
      if (isGatewayError(err)) result.errorMsg = err.message;
      else {
        this.ctx.log.error({ err, device }, 'mqtt set failed');
        result.errorMsg = 'write failed';
      }
    } finally {
      this.pendingSets--;
    }
    return done();
  }
}
