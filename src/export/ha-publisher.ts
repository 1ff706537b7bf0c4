/**
 * Sends Home Assistant discovery configs to the two places an HA may listen: the embedded broker (configs
 * naming the local topics, not retained) and, with a bridge, the upstream broker (configs naming the upstream
 * topics `<topic_prefix>/<base>/…`, retained there). Each side is sent again when an HA announces itself
 * on it (`<prefix>/status` = `online`), in slices so a large fleet never stalls the event loop.
 */
import type { ExportContext } from './context.js';
import {
  componentFor, configTopic, discoveryMessages, discoveryNode, gatewayMessage, haId, type DiscoveryDevice, type HaComponent, type HaPointInfo,
} from './homeassistant.js';
import { topicSafeDeviceId, type Topics } from './topics.js';

/** Sends one config (or '' to remove it) to one side. */
export type SendConfig = (topic: string, payload: string) => void;

export interface DiscoverySides {
  /**
   * The embedded broker. Not retained: 100 points × 1,000 devices are 100,000 retained configs, ~85 MB of
   * broker memory on a Pi. HA announces itself each time it connects, and gets them then.
   */
  local: SendConfig;
  /**
   * Messages still waiting to go out on the embedded broker: a republish sends its next slice only when there are
   * at most DISCOVERY_BACKLOG. Unpaced, 1,000 × 100 configs to one subscriber slower than the burst waited in the
   * broker's outbox all at once (~75 MB of RSS, kept by the allocator after they went out).
   */
  backlog?: () => number;
  /** The upstream bridge, when configured: its topics, the link's state topic, and the retained send. */
  upstream?: { topics: Topics; linkTopic: string; send: SendConfig };
}

export type Side = 'local' | 'upstream';

/** Devices whose discovery configs go out per turn of the event loop (~1,000 messages for 100-point devices). */
const DISCOVERY_SLICE = 10;
/** Queued local messages above which a republish waits (two slices' worth), and how long it waits, ms. */
const DISCOVERY_BACKLOG = 2000;
const DISCOVERY_WAIT = 20;

/**
 * The config topics sent for a device, without the device: the prefix and each entity's component and object id.
 * Devices of one model share one (interned), so what was sent costs a Map entry per device, not a topic string
 * per point (10.5 MB for 1,000 × 100 points).
 */
interface Layout {
  prefix: string;
  /** component, object id, component, object id, … */
  parts: readonly string[];
  devices: number;
}

export class HaPublisher {
  /** Device id → the layout of the configs it was sent (their topics, rebuilt from its node). */
  private readonly sent = new Map<string, Layout>();
  private readonly layouts = new Map<string, Layout>();
  /** The run in slices (republish), or null. */
  private run: { ids: string[]; at: number; sides: Set<Side> } | null = null;
  private stopped = false;
  readonly seen = { births: 0, lastBirthAt: null as number | null, upstreamBirths: 0, configsSent: 0, upstreamConfigsSent: 0 };

  constructor(
    private readonly ctx: ExportContext,
    private readonly topics: Topics,
    private readonly sides: DiscoverySides,
    /** Device facts for the HA device block (manufacturer, model, versions, console URL). */
    private readonly deviceInfo: (id: string, modelName: string) => DiscoveryDevice = (_id, modelName) => ({ model: modelName }),
  ) {}

  /** Distinct layouts held (devices with the same points share one). */
  get layoutCount(): number {
    return this.layouts.size;
  }

  get prefix(): string | null {
    return this.ctx.mqtt.homeassistant.enable ? this.ctx.mqtt.homeassistant.prefix : null;
  }

  private allSides(): Side[] {
    return this.sides.upstream ? ['local', 'upstream'] : ['local'];
  }

  private send(side: Side, topic: string, payload: string): void {
    if (side === 'local') {
      this.seen.configsSent += payload ? 1 : 0;
      this.sides.local(topic, payload);
    } else if (this.sides.upstream) {
      this.seen.upstreamConfigsSent += payload ? 1 : 0;
      this.sides.upstream.send(topic, payload);
    }
  }

  /** Sends one device's configs (removing points it no longer has) to `sides`. */
  publish(dev: { id: string; modelName: string }, sides: Iterable<Side> = this.allSides()): void {
    const prefix = this.prefix;
    if (!prefix || !topicSafeDeviceId(dev.id)) return;
    const common = {
      prefix,
      gatewayId: this.ctx.gatewayId,
      deviceId: dev.id,
      device: this.deviceInfo(dev.id, dev.modelName),
      points: this.ctx.devicePoints(dev.id) as HaPointInfo[],
      viaGateway: this.sides.upstream !== undefined,
    };
    let now: Set<string> | null = null;
    const before = this.sentTopics(dev.id);
    for (const side of sides) {
      const up = side === 'upstream' ? this.sides.upstream : undefined;
      if (side === 'upstream' && !up) continue;
      const msgs = discoveryMessages({ ...common, topics: up?.topics ?? this.topics, ...(up ? { linkTopic: up.linkTopic } : {}) });
      now ??= new Set(msgs.map((m) => m.topic));
      for (const t of before) if (!now.has(t)) this.send(side, t, '');
      for (const m of msgs) this.send(side, m.topic, JSON.stringify(m.payload));
    }
    if (now) this.remember(dev.id, prefix, common.points);
  }

  /** The config topics last sent for a device. */
  private sentTopics(id: string): string[] {
    const layout = this.sent.get(id);
    if (!layout) return [];
    const node = discoveryNode(this.ctx.gatewayId, id);
    const topics: string[] = [];
    for (let i = 0; i < layout.parts.length; i += 2) topics.push(configTopic(layout.prefix, layout.parts[i] as HaComponent, node, layout.parts[i + 1]!));
    return topics;
  }

  private remember(id: string, prefix: string, points: readonly HaPointInfo[]): void {
    const parts: string[] = [];
    const seen = new Set<string>(); // two names may map to one object id: one topic
    for (const p of points) {
      const component = componentFor(p);
      const objectId = haId(p.name);
      if (seen.has(`${component}/${objectId}`)) continue;
      seen.add(`${component}/${objectId}`);
      parts.push(component, objectId);
    }
    this.forget(id); // first: the layout it leaves may be the one it takes again
    const key = `${prefix}\n${parts.join('\n')}`;
    let layout = this.layouts.get(key);
    if (!layout) this.layouts.set(key, (layout = { prefix, parts, devices: 0 }));
    layout.devices++;
    this.sent.set(id, layout);
  }

  private forget(id: string): void {
    const layout = this.sent.get(id);
    if (!layout) return;
    this.sent.delete(id);
    if (--layout.devices === 0) this.layouts.delete(`${layout.prefix}\n${layout.parts.join('\n')}`);
  }

  /**
   * With a bridge, the gateway itself is an HA device (its upstream link), the one the devices are reached
   * through. Without one there is nothing about it HA would not know: no gateway device, no via_device.
   */
  publishGateway(sides: Iterable<Side> = this.allSides()): void {
    const prefix = this.prefix;
    const up = this.sides.upstream;
    if (!prefix || !up) return;
    const { sw_version, configuration_url } = this.deviceInfo('', 'shadowgate');
    const facts = { ...(sw_version ? { sw_version } : {}), ...(configuration_url ? { configuration_url } : {}) };
    for (const side of sides) {
      const m = gatewayMessage(prefix, this.ctx.gatewayId, side === 'upstream' ? up.linkTopic : this.topics.bridgeState, facts);
      this.send(side, m.topic, JSON.stringify(m.payload));
    }
  }

  /** Removes a device's configs on every side (HA removes the entities). */
  remove(id: string): void {
    for (const t of this.sentTopics(id)) for (const side of this.allSides()) this.send(side, t, '');
    this.forget(id);
  }

  /** A config topic of this gateway whose device is gone (left from before a restart): removed everywhere. */
  removeStale(topic: string): void {
    const prefix = this.prefix;
    if (!prefix || !topic.startsWith(`${prefix}/`) || !topic.endsWith('/config')) return;
    const node = topic.split('/')[2] ?? '';
    if (!node.startsWith(`${haId(this.ctx.gatewayId)}_`)) return; // (the gateway's own node has no `_`)
    const live = this.ctx.shadow.GetDeviceIds().some((id) => discoveryNode(this.ctx.gatewayId, id) === node);
    if (!live) for (const side of this.allSides()) this.send(side, topic, '');
  }

  /** An HA announced itself on `side` (its birth message). */
  birth(side: Side): void {
    if (side === 'local') {
      this.seen.births++;
      this.seen.lastBirthAt = this.ctx.clock.now();
    } else {
      this.seen.upstreamBirths++;
    }
    this.republish([side]);
  }

  /** Sends every device's configs again to `sides`, in slices, one per turn of the event loop. */
  republish(sides: Side[] = this.allSides()): void {
    if (!this.prefix) return;
    const running = this.run !== null;
    // A birth while a run is under way starts it over (the HA that just connected missed its start).
    this.run = { ids: this.ctx.shadow.GetDeviceIds(), at: 0, sides: new Set([...(this.run?.sides ?? []), ...sides]) };
    if (running) return;
    // 100 points × 1,000 devices at once were 100,000 messages queued in the broker together (a ~200 MB heap
    // spike, and a stall for every poll and request).
    const step = (): void => {
      const run = this.run;
      if (!run || this.stopped) {
        this.run = null;
        return;
      }
      if ((this.sides.backlog?.() ?? 0) > DISCOVERY_BACKLOG) {
        setTimeout(step, DISCOVERY_WAIT);
        return;
      }
      if (run.at === 0) this.publishGateway(run.sides);
      const end = Math.min(run.at + DISCOVERY_SLICE, run.ids.length);
      for (; run.at < end; run.at++) {
        const dev = this.ctx.shadow.GetDeviceRecord(run.ids[run.at]!);
        if (dev) this.publish(dev, run.sides);
      }
      if (run.at < run.ids.length) setImmediate(step);
      else this.run = null;
    };
    setImmediate(step);
  }

  stop(): void {
    this.stopped = true;
  }
}
