/**
 * The export room's start/stop entry: broker (TCP + WebSocket), retained-message files, the MQTT exporter
 * (state, availability, events, set, Home Assistant discovery), the upstream bridge and export.shadow.
 * Called by the composition root; each part is stopped in reverse order.
 */
import { join } from 'node:path';
import { UserDirectory } from './auth.js';
import type { Bridge } from './bridge.js';
import type { Broker } from './broker.js';
import type { ExportContext } from './context.js';
import { discoveryNode } from './homeassistant.js';
import { MqttExporter, type Publish } from './mqtt-exporter.js';
import { RetainedStore } from './retained-store.js';
import { startShadowExport, validateShadowExport, type ShadowExport } from './shadow-export.js';
import { Topics, topicSafeDeviceId } from './topics.js';

export type { ExportContext, MqttConfig, ShadowExportConfig, BridgeConfig, PointInfo, ShadowView } from './context.js';
export { attachEventStream } from './event-stream.js';

export interface ExportHandle {
  stop(): Promise<void>;
  stats(): Record<string, unknown>;
  /** Bound ports (0 when MQTT is disabled). */
  mqttPort: number;
  wsPort: number;
}

export async function startExport(ctx: ExportContext): Promise<ExportHandle> {
  const log = ctx.log.child({ part: 'export' });
  // Config problems of the targets are reported at start, before anything listens.
  validateShadowExport(ctx.export.shadow, ctx.mqtt.enable);
  const topics = new Topics(ctx.mqtt.base_topic);
  const bad = ctx.shadow.GetDeviceIds().filter((id) => !topicSafeDeviceId(id));
  if (bad.length) log.warn({ devices: bad }, 'device ids unusable as an MQTT topic level are not exported over MQTT');

  let broker: Broker | null = null;
  let retained: RetainedStore | null = null;
  let bridge: Bridge | null = null;
  let exporter: MqttExporter | null = null;
  let shadowExport: ShadowExport | null = null;

  const stop = async (): Promise<void> => {
    await shadowExport?.stop();
    exporter?.stop();
    await bridge?.stop();
    await broker?.close();
    await retained?.close();
  };

  try {
    let publish: Publish = () => {};
    if (ctx.mqtt.enable) {
      const users = new UserDirectory(ctx.mqtt.users, ctx.mqtt.allow_anonymous);
      retained = new RetainedStore(join(ctx.dataDir, 'mqtt', 'retained.json'), (err) => log.error({ err }, 'retained messages'));
      const persisted = await retained.load();
      const ha = ctx.mqtt.homeassistant;
      // Loaded only when used: aedes and mqtt.js cost ~100 ms of start-up on a Pi-class CPU.
      const { startBroker } = await import('./broker.js');
      broker = await startBroker({
        host: ctx.mqtt.host,
        port: ctx.mqtt.port,
        wsPort: ctx.mqtt.ws_port,
        users,
        topics,
        discovery: ha.enable ? { prefix: ha.prefix, nodePrefix: discoveryNode(ctx.gatewayId, '') } : undefined,
        retained,
        log: log.child({ part: 'mqtt' }),
      });
      const b = broker;
      // Replay what was retained before the restart; fresh state replaces it a moment later.
      for (const m of persisted) await b.publish(m.topic, m.payload, { retain: true, qos: m.qos === 0 ? 0 : 1 });
      if (ctx.mqtt.bridge) {
        const { Bridge } = await import('./bridge.js');
        bridge = new Bridge({
          config: ctx.mqtt.bridge,
          topics,
          queueDir: join(ctx.dataDir, 'mqtt', 'bridge-queue'),
          log: log.child({ part: 'bridge' }),
          publishLocal: (topic, payload) => void b.publish(topic, payload, { retain: true }),
          onSet: (device, payload) => void exporter?.handleSet(device, payload, { kind: 'bridge' }),
        });
      } else {
        void b.publish(topics.bridgeState, '', { retain: true });
      }
      const br = bridge;
      publish = (topic, payload, retain) => {
        b.send(topic, payload, retain);
        br?.forward(topic, payload, retain);
      };
      exporter = new MqttExporter(ctx, topics, publish);
      const ex = exporter;
      b.onClientPublish((topic, payload, principal) => ex.onClientPublish(topic, payload, principal));
      exporter.start(persisted.map((m) => m.topic));
      await bridge?.start();
    }
    shadowExport = await startShadowExport(ctx.export.shadow, {
      gatewayId: ctx.gatewayId,
      now: () => ctx.clock.now(),
      shadowJson: ctx.shadowJson,
      publishMqtt: (payload) => publish(topics.shadow, payload, false),
      log: log.child({ part: 'shadow-export' }),
    });
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }

  return {
    stop,
    mqttPort: broker?.port ?? 0,
    wsPort: broker?.wsPort ?? 0,
    stats: () => ({
      broker: broker?.stats() ?? null,
      exporter: exporter?.stats() ?? null,
      bridge: bridge?.stats() ?? null,
      shadowExport: shadowExport?.stats() ?? null,
    }),
  };
}
