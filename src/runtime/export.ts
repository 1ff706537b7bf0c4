/**
 * The MQTT export part: broker (TCP + WebSocket), retained-message files, the MQTT exporter (state,
 * availability, events, set, Home Assistant discovery), the upstream bridge and export.shadow. Its pieces
 * start in that order and stop in reverse, through the same lifecycle as every other part.
 */
import { join } from 'node:path';
import type { Part } from '../core/lifecycle.js';
import { haStatusTopic, UserDirectory } from '../export/auth.js';
import type { Bridge } from '../export/bridge.js';
import type { Broker } from '../export/broker.js';
import type { ExportContext } from '../export/context.js';
import { discoveryNode } from '../export/homeassistant.js';
import { MqttExporter, type Publish } from '../export/mqtt-exporter.js';
import { RetainedStore } from '../export/retained-store.js';
import { startShadowExport, validateShadowExport, type ShadowExport } from '../export/shadow-export.js';
import { Topics, topicSafeDeviceId } from '../export/topics.js';
import { settle } from '../util/settle.js';
import { PartList } from './part.js';

export type { ExportContext, MqttConfig, ShadowExportConfig, BridgeConfig, PointInfo, ShadowView } from '../export/context.js';

export interface ExportPart extends Part {
  stats(): Record<string, unknown>;
  /** Publishes every device's retained state, admits MQTT clients, then starts Home Assistant discovery (in slices). */
  ready(): void;
  /** Bound ports (0 when MQTT is disabled or before start). */
  readonly mqttPort: number;
  readonly wsPort: number;
}

/** A piece of the export part as a Part, so the pieces stop in reverse order of their start. */
const piece = (name: string, stop: () => Promise<void> | void): Part => ({ name, start: async () => {}, stop: async () => stop() });

export function createExportPart(ctx: ExportContext): ExportPart {
  // Its parts log as children of the gateway's logger, not of this one: pino writes a child's bindings after its
  // parent's, so a nested `part` came out twice in one JSON line.
  const log = ctx.log.child({ part: 'export' });
  const pieces = new PartList(log);
  let broker: Broker | null = null;
  let bridge: Bridge | null = null;
  let exporter: MqttExporter | null = null;
  let shadowExport: ShadowExport | null = null;
  let publishAll = (): void => {};

  const startMqtt = async (topics: Topics, listen: boolean): Promise<Publish> => {
    const users = new UserDirectory(ctx.mqtt.users, ctx.mqtt.allow_anonymous);
    const retained = new RetainedStore(join(ctx.dataDir, 'mqtt', 'retained.json'), (err) => log.error({ err }, 'retained messages'));
    await pieces.start(piece('retained', () => retained.close()));
    const persisted = await retained.load();
    const ha = ctx.mqtt.homeassistant;
    // Loaded only when used: aedes and mqtt.js cost ~100 ms of start-up on a Pi-class CPU.
    const { startBroker } = await import('../export/broker.js');
    const b = await startBroker({
      host: ctx.mqtt.host,
      port: ctx.mqtt.port,
      wsPort: ctx.mqtt.ws_port,
      users,
      topics,
      discovery: ha.enable ? { prefix: ha.prefix, nodePrefix: discoveryNode(ctx.gatewayId, '') } : undefined,
      retained,
      log: ctx.log.child({ part: 'mqtt' }),
      hold: true,
      listen,
    });
    broker = b;
    await pieces.start(piece('broker', () => b.close()));
    // Replay what was retained before the restart; fresh state replaces it a moment later.
    for (const m of persisted) await b.publish(m.topic, m.payload, { retain: true, qos: m.qos === 0 ? 0 : 1 });
    if (ctx.mqtt.bridge) {
      const { Bridge } = await import('../export/bridge.js');
      bridge = new Bridge({
        config: ctx.mqtt.bridge,
        topics,
        queueDir: join(ctx.dataDir, 'mqtt', 'bridge-queue'),
        log: ctx.log.child({ part: 'bridge' }),
        publishLocal: (topic, payload) => settle(b.publish(topic, payload, { retain: true }), log, 'local publish'),
        onSet: (device, payload) => void exporter?.handleSet(device, payload, { kind: 'bridge' }),
        // An HA on the upstream broker announces itself there: its configs are retained there, but a broker
        // restarted without persistence has lost them.
        ...(ha.enable ? { haStatus: { topic: haStatusTopic(ha.prefix), onBirth: () => exporter?.ha.birth('upstream') } } : {}),
      });
    } else {
      settle(b.publish(topics.bridgeState, '', { retain: true }), log, 'bridge state publish');
    }
    const br = bridge;
    const publish: Publish = (topic, payload, retain) => {
      b.send(topic, payload, retain);
      br?.forward(topic, payload, retain);
    };
    const ex = new MqttExporter(ctx, topics, publish, {
      local: (topic, payload) => b.send(topic, payload, false),
      backlog: () => b.backlog,
      // Upstream configs name the upstream topics (`<topic_prefix>/<base>/…`), where the bridge forwards them.
      ...(br ? {
        upstream: {
          topics: new Topics(br.upstreamTopic(topics.base)),
          linkTopic: br.upstreamTopic(topics.bridgeState),
          send: (topic: string, payload: string) => br.forwardDiscovery(topic, payload),
        },
      } : {}),
    }, (id, modelName) => ctx.deviceInfo?.(id, modelName) ?? { model: modelName });
    exporter = ex;
    b.onClientPublish((topic, payload, principal) => ex.onClientPublish(topic, payload, principal));
    const retainedTopics = retained.topics();
    if (!br) ex.deferStates();
    ex.start();
    await pieces.start(piece('exporter', () => ex.stop()));
    // Every device's retained state follows once the gateway serves (ready); clients connect when it is all there.
    publishAll = () => ex.publishAll(retainedTopics, () => {
      b.admit();
      ex.republishDiscovery();
    });
    if (br) await pieces.start({ name: 'bridge', start: () => br.start(), stop: () => br.stop() });
    return publish;
  };

  return {
    name: 'mqtt-export',
    get mqttPort() {
      return broker?.port ?? 0;
    },
    get wsPort() {
      return broker?.wsPort ?? 0;
    },
    async start() {
      // Config problems of the targets are reported at start, before anything listens.
      validateShadowExport(ctx.export.shadow, ctx.mqtt.enable || !!ctx.mqtt.bridge);
      const topics = new Topics(ctx.mqtt.base_topic);
      const bad = ctx.shadow.GetDeviceIds().filter((id) => !topicSafeDeviceId(id));
      if (bad.length) log.warn({ devices: bad }, 'device ids unusable as an MQTT topic level are not exported over MQTT');
      try {
        // The broker off but a bridge set ("turn it off and bridge to HA's Mosquitto"): the export runs with no
        // listener of its own and goes upstream only. Off without a bridge, nothing is published over MQTT.
        if (!ctx.mqtt.enable && !ctx.mqtt.bridge && ctx.mqtt.homeassistant.enable) {
          log.warn('mqtt.homeassistant.enable has no effect: the broker is off (mqtt.enable false) and no mqtt.bridge is set to send the discovery configs to');
        }
        const publish: Publish = ctx.mqtt.enable || ctx.mqtt.bridge ? await startMqtt(topics, ctx.mqtt.enable) : () => {};
        const se = await startShadowExport(ctx.export.shadow, {
          gatewayId: ctx.gatewayId,
          now: () => ctx.clock.now(),
          shadowJson: ctx.shadowJson,
          publishMqtt: (payload) => publish(topics.shadow, payload, false),
          log: ctx.log.child({ part: 'shadow-export' }),
        });
        shadowExport = se;
        await pieces.start(piece('shadow-export', () => se.stop()));
      } catch (err) {
        await pieces.stopAll();
        throw err;
      }
    },
    stop: () => pieces.stopAll(),
    ready: () => publishAll(),
    stats: () => ({
      broker: broker?.stats() ?? null,
      exporter: exporter?.stats() ?? null,
      bridge: bridge?.stats() ?? null,
      shadowExport: shadowExport?.stats() ?? null,
    }),
  };
}

/** Builds and starts the export part (tests and benches that run it alone). */
export async function startExport(ctx: ExportContext): Promise<ExportPart> {
  const part = createExportPart(ctx);
  await part.start();
  part.ready();
  return part;
}
