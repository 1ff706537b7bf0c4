/**
 * A client that does on MQTT what Home Assistant does with its defaults (MQTT integration, 3.1.1): connect
 * (anonymously unless given a login) with the last will `<prefix>/status` = `offline`, subscribe to
 * `<prefix>/#`, then publish the birth `<prefix>/status` = `online` on the same connection, and reconnect
 * after a second when the connection drops. It counts connects and closes and keeps the last config per topic
 * (an empty config removes the entity, as in HA).
 */
import mqtt, { type MqttClient } from 'mqtt';
import { withTimeout } from './helpers.js';

export interface HaLike {
  client: MqttClient;
  connects: number;
  closes: number;
  /** Config topic → parsed config (entities HA would have). */
  configs: Map<string, Record<string, unknown>>;
  /** Every message seen on a subscribed topic, in order. */
  messages: { topic: string; payload: string }[];
  /** Subscribes to more (e.g. a state topic named by a config). */
  watch(filter: string): Promise<void>;
  end(): Promise<void>;
}

const CONFIG = /^[^/]+\/[^/]+\/[^/]+\/(?:[^/]+\/)?config$/;

export async function haLike(url: string, opts: { prefix?: string; username?: string; password?: string } = {}): Promise<HaLike> {
  const prefix = opts.prefix ?? 'homeassistant';
  const client = mqtt.connect(url, {
    protocolVersion: 4,
    clientId: `ha-like-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
    username: opts.username,
    password: opts.password,
    reconnectPeriod: 1000,
    connectTimeout: 3000,
    will: { topic: `${prefix}/status`, payload: Buffer.from('offline'), qos: 0, retain: false },
  });
  const ha: HaLike = {
    client, connects: 0, closes: 0, configs: new Map(), messages: [],
    watch: async (filter) => void (await withTimeout(client.subscribeAsync(filter, { qos: 1 }), 3000, `subscribe ${filter}`)),
    end: () => withTimeout(new Promise<void>((r) => client.end(true, {}, () => r())), 3000, 'HA-like end'),
  };
  client.on('error', () => {}); // counted by 'close'; a refused CONNACK shows as no connect
  client.on('close', () => ha.closes++);
  client.on('message', (topic, payload) => {
    const text = payload.toString();
    ha.messages.push({ topic, payload: text });
    if (!topic.startsWith(`${prefix}/`) || !CONFIG.test(topic)) return;
    if (text === '') ha.configs.delete(topic);
    else ha.configs.set(topic, JSON.parse(text) as Record<string, unknown>);
  });
  // As HA: subscribe, then the birth, on every (re)connect.
  client.on('connect', () => {
    ha.connects++;
    client.subscribe(`${prefix}/#`, { qos: 0 }, (err) => {
      if (!err) client.publish(`${prefix}/status`, 'online', { qos: 0, retain: false });
    });
  });
  await withTimeout(new Promise<void>((resolve) => client.once('connect', () => resolve())), 3000, 'HA-like connect');
  return ha;
}
