/**
 * A real MQTT client (mqtt.js) on the gateway's broker: it watches m1's counter on `<base>/event/data`
 * (each event carries the update's epoch ms, which is the point's updated_at) and retains a message of its
 * own every `retainEveryMs` (QoS 1, so an acknowledged one is in the broker), which makes the gateway
 * rewrite retained.json while it runs. At connect it first reads what the broker replayed from the file.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { BASE_TOPIC, COUNTER, DEVICE, MQTT_PASSWORD, MQTT_USER } from './config.js';

export const RETAINED_TOPIC = 'clients/reliability/seq';

export interface Seen {
  value: number;
  ts: number;
}

export interface Retained {
  seq: number;
  at: number;
}

export interface Watch {
  /** The newest counter event received. */
  last(): Seen | null;
  /** Every counter value seen with its update time (to prove a restored value was real). */
  seen: Map<number, number>;
  /** The retained message the broker replayed at connect (null: none). */
  replayed: Retained | null;
  /** The newest retained publish the broker acknowledged. */
  acked(): Retained | null;
  /** Values of the counter events received in the last `ms` (a liveness check). */
  eventsSince(t: number): number;
  /** Stops / restarts the retained publishes (a client that retained once and went quiet). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

const timeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  p.then((v) => {
    clearTimeout(t);
    resolve(v);
  }, (e: unknown) => {
    clearTimeout(t);
    reject(e instanceof Error ? e : new Error(String(e)));
  });
});

export async function watch(port: number, retainEveryMs: number, startSeq: number): Promise<Watch> {
  const client: MqttClient = mqtt.connect({
    host: '127.0.0.1', port, username: MQTT_USER, password: MQTT_PASSWORD, reconnectPeriod: 0, connectTimeout: 5000,
    clientId: `reliability-${process.pid}-${Date.now()}`,
  });
  let last: Seen | null = null;
  const seen = new Map<number, number>();
  const times: number[] = [];
  let replayed: Retained | null = null;
  let acked: Retained | null = null;
  let timer: NodeJS.Timeout | undefined;
  client.on('error', () => {}); // a killed gateway resets the socket: expected here
  client.on('message', (topic, payload, packet) => {
    try {
      if (topic === RETAINED_TOPIC) {
        if (packet.retain && replayed === null && acked === null) replayed = JSON.parse(payload.toString()) as Retained;
        return;
      }
      const e = JSON.parse(payload.toString()) as { id: string; values: { name: string; value: unknown }[]; ts: number };
      if (e.id !== DEVICE) return;
      const v = e.values.find((x) => x.name === COUNTER)?.value;
      if (typeof v !== 'number') return;
      seen.set(v, e.ts);
      times.push(Date.now());
      if (!last || e.ts >= last.ts) last = { value: v, ts: e.ts };
    } catch {
      // not ours
    }
  });
  await timeout(new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  }), 5000, 'MQTT connect');
  await timeout(client.subscribeAsync([RETAINED_TOPIC, `${BASE_TOPIC}/event/data`], { qos: 1 }), 5000, 'MQTT subscribe');
  // The broker sends the retained message right after SUBACK; a short grace for it to arrive.
  await new Promise((r) => setTimeout(r, 150));
  let seq = startSeq;
  const publish = (): void => {
    const msg: Retained = { seq: ++seq, at: Date.now() };
    client.publish(RETAINED_TOPIC, JSON.stringify(msg), { qos: 1, retain: true }, (err) => {
      if (!err && (!acked || msg.seq > acked.seq)) acked = msg;
    });
  };
  publish();
  timer = setInterval(publish, retainEveryMs);
  let paused = false;
  return {
    last: () => last,
    seen,
    get replayed() {
      return replayed;
    },
    acked: () => acked,
    eventsSince: (t) => times.filter((x) => x >= t).length,
    pause() {
      paused = true;
      clearInterval(timer);
    },
    resume() {
      if (!paused) return;
      paused = false;
      timer = setInterval(publish, retainEveryMs);
    },
    async close() {
      clearInterval(timer);
      await timeout(new Promise<void>((resolve) => client.end(true, {}, () => resolve())), 5000, 'MQTT close').catch(() => {});
    },
  };
}
