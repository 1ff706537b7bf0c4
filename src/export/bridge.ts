/**
 * Upstream bridge (mqtt.js client): forwards the gateway's state, availability, events, set results and
 * shadow exports to `bridge.url` as `<topic_prefix>/<local topic>`, and takes `set` commands from
 * `<topic_prefix>/<base>/+/set` back down through the same validation and write path.
 * While the upstream is away, messages go to a bounded on-disk queue and are flushed in order on reconnect.
 * `<base>/bridge/state` (local, retained) and `<topic_prefix>/<base>/bridge/state` (upstream, retained,
 * with a last will) say whether the link is up.
 * Home Assistant discovery configs go upstream as they are built for it (`forwardDiscovery`: under HA's own
 * prefix, naming the upstream topics, retained), and an HA birth upstream asks for them again.
 */
import mqtt, { type MqttClient } from 'mqtt';
import type { Logger } from '../util/logger.js';
import type { BridgeConfig } from './context.js';
import { DiskQueue, type QueuedMessage } from './disk-queue.js';
import type { Topics } from './topics.js';
import { TurnBudget } from '../util/turn-budget.js';

export interface BridgeOptions {
  config: BridgeConfig;
  topics: Topics;
  queueDir: string;
  log: Logger;
  /** Publishes `<base>/bridge/state` on the local broker. */
  publishLocal(topic: string, payload: string): void;
  /** A `set` from upstream for `device`. */
  onSet(device: string, payload: Buffer): void;
  /** Reconnect period, ms (default 2 s). */
  reconnectPeriod?: number;
  /** Home Assistant's status topic upstream (`<prefix>/status`) and what to do on its birth there. */
  haStatus?: { topic: string; onBirth(): void };
}

// Above this many unacknowledged direct publishes the upstream is too slow: new messages go to disk.
const MAX_INFLIGHT = 5000;

export class Bridge {
  private client: MqttClient | null = null;
  private readonly queue: DiskQueue;
  private readonly prefix: string;
  private pumping = false;
  private stopped = false;
  private inflight = 0;
  private readonly counters = { forwarded: 0, queued: 0, setsFromUpstream: 0, connects: 0, discoveryForwarded: 0, haBirths: 0 };

  constructor(private readonly opts: BridgeOptions) {
    this.prefix = opts.config.topic_prefix.replace(/\/+$/, '');
    this.queue = new DiskQueue(opts.queueDir, opts.config.queue_max);
  }

  private up(topic: string): string {
    return this.prefix ? `${this.prefix}/${topic}` : topic;
  }

  /** The upstream topic of a local one (`<topic_prefix>/<topic>`): what discovery configs upstream name. */
  upstreamTopic(topic: string): string {
    return this.up(topic);
  }

  async start(): Promise<void> {
    await this.queue.load();
    const { config, topics, log } = this.opts;
    this.opts.publishLocal(topics.bridgeState, 'offline');
    const client = mqtt.connect(config.url, {
      username: config.username,
      password: config.password,
      clientId: config.client_id ?? `shadowgate-${topics.base}-${process.pid}`,
      clean: true,
      protocolVersion: 4,
      reconnectPeriod: this.opts.reconnectPeriod ?? 2000,
      connectTimeout: 10_000,
      // Never let mqtt.js buffer publishes in memory while offline: that is the disk queue's job.
      queueQoSZero: false,
      will: { topic: this.up(topics.bridgeState), payload: Buffer.from('offline'), qos: 1, retain: true },
    });
    this.client = client;
    client.on('connect', () => {
      this.counters.connects++;
      log.info({ url: config.url }, 'bridge connected');
      client.publish(this.up(topics.bridgeState), 'online', { qos: 1, retain: true });
      client.subscribe(this.up(topics.setFilter), { qos: 1 });
      if (this.opts.haStatus) client.subscribe(this.opts.haStatus.topic, { qos: 1 });
      this.opts.publishLocal(topics.bridgeState, 'online');
      void this.pump();
    });
    client.on('close', () => {
      if (!this.stopped) this.opts.publishLocal(topics.bridgeState, 'offline');
    });
    client.on('error', (err) => log.warn({ err: err.message }, 'bridge error'));
    client.on('message', (topic, payload) => {
      const ha = this.opts.haStatus;
      if (ha && topic === ha.topic) {
        if (payload.toString() === 'online') {
          this.counters.haBirths++;
          ha.onBirth();
        }
        return;
      }
      if (!topic.startsWith(`${this.prefix}/`) && this.prefix) return;
      const parsed = topics.parse(this.prefix ? topic.slice(this.prefix.length + 1) : topic);
      if (parsed?.kind !== 'set') return;
      this.counters.setsFromUpstream++;
      this.opts.onSet(parsed.device, payload);
    });
  }

  /** Called for every message the gateway publishes locally. */
  forward(topic: string, payload: string, retain: boolean): void {
    if (this.stopped) return;
    const parsed = this.opts.topics.parse(topic);
    // Local commands are not echoed upstream; the bridge's own state is published with a last will.
    if (!parsed || parsed.kind === 'set' || parsed.kind === 'bridgeState') return;
    const c = this.client;
    if (c?.connected && !this.pumping && this.queue.length === 0 && this.inflight < MAX_INFLIGHT) {
      this.send({ t: topic, p: payload, r: retain });
      return;
    }
    this.counters.queued++;
    this.queue.push({ t: topic, p: payload, r: retain });
  }

  /**
   * A discovery config (or its removal, '') for an HA on the upstream broker: sent to `topic` as is, retained,
   * queued like the rest while the upstream is away.
   */
  forwardDiscovery(topic: string, payload: string): void {
    if (this.stopped) return;
    this.counters.discoveryForwarded++;
    const m: QueuedMessage = { t: topic, p: payload, r: true, a: 1 };
    const c = this.client;
    if (c?.connected && !this.pumping && this.queue.length === 0 && this.inflight < MAX_INFLIGHT) {
      this.send(m);
      return;
    }
    this.counters.queued++;
    this.queue.push(m);
  }

  private send(m: QueuedMessage): Promise<void> {
    this.inflight++;
    return new Promise((resolve) => {
      this.client!.publish(m.a ? m.t : this.up(m.t), m.p, { qos: 1, retain: m.r }, () => {
        this.inflight--;
        this.counters.forwarded++;
        resolve();
      });
    });
  }

  /** Sends the disk queue, oldest segment first; mqtt.js resends unacknowledged ones after a reconnect. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.stopped && this.client?.connected) {
        const seg = await this.queue.take();
        if (!seg) break;
        // Handed to the client in slices of a few ms: a segment is ~10k QoS 1 publishes, and serializing them
        // in one turn held the event loop for 50+ ms while a 100k-message queue drained (issue 16's storm).
        const budget = new TurnBudget();
        const sent: Promise<void>[] = [];
        for (const m of seg.messages) {
          sent.push(this.send(m));
          if (budget.spent()) await budget.next();
        }
        await Promise.all(sent);
        if (this.stopped) break;
        seg.ack();
      }
    } finally {
      this.pumping = false;
    }
  }

  stats(): Record<string, unknown> {
    return {
      connected: this.client?.connected ?? false,
      ...this.counters,
      inflight: this.inflight,
      queueMessages: this.queue.length,
      queueBytes: this.queue.bytes,
      dropped: this.queue.dropped,
      queueError: this.queue.lastError,
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const c = this.client;
    if (c) {
      const graceful = (async () => {
        if (c.connected) {
          await new Promise<void>((r) => c.publish(this.up(this.opts.topics.bridgeState), 'offline', { qos: 1, retain: true }, () => r()));
        }
        await new Promise<void>((r) => c.end(false, {}, () => r()));
      })();
      // A dead or slow upstream must not hold the shutdown: wait briefly for acks, then force.
      let t: NodeJS.Timeout | undefined;
      await Promise.race([graceful, new Promise<void>((r) => (t = setTimeout(r, 2000)))]);
      clearTimeout(t);
      await new Promise<void>((r) => c.end(true, {}, () => r()));
    }
    await this.queue.close();
  }
}
