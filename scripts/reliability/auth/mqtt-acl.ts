/**
 * The broker's ACLs as clients meet them (docs/mqtt.md): who may `set`, whose topics are whose, who may
 * subscribe to what — each check with a positive control, so a check that cannot fail does not pass.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { api, writeMarks } from '../bad-input/checks.js';
import type { Gateway, Secrets } from '../bad-input/gateway.js';

const BASE = 'shadowgate';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Who = 'anonymous' | 'reader' | 'writer';

function connect(gw: Gateway, s: Secrets, who: Who, ws = false): Promise<MqttClient> {
  const url = ws ? `ws://127.0.0.1:${gw.mqttWs}/mqtt` : `mqtt://127.0.0.1:${gw.mqtt}`;
  const cred = who === 'anonymous' ? {} : who === 'reader' ? s.reader : s.writer;
  return mqtt.connectAsync(url, { ...cred, reconnectPeriod: 0, connectTimeout: 5000, clientId: `acl-${who}-${Math.random().toString(36).slice(2, 8)}` });
}

/**
 * Publishes (QoS 1) and reports whether the broker refused it as docs/mqtt.md says: acknowledged and dropped —
 * never delivered to a subscriber of the topic (the writer, who may subscribe to anything), the connection kept
 * (closing it made clients that publish on connect reconnect forever).
 */
async function publishRefused(gw: Gateway, s: Secrets, c: MqttClient, topic: string, payload: string, retain = false): Promise<boolean> {
  const watcher = await connect(gw, s, 'writer');
  let delivered = false;
  // A retained message the topic already holds arrives flagged; a delivered publish arrives live.
  watcher.on('message', (t, p, packet) => {
    if (t === topic && p.toString() === payload && !packet.retain) delivered = true;
  });
  await watcher.subscribeAsync(topic);
  let closed = false;
  c.once('close', () => (closed = true));
  await Promise.race([c.publishAsync(topic, payload, { qos: 1, retain }).catch(() => undefined), sleep(1500)]);
  await sleep(300);
  await watcher.endAsync(true);
  return !delivered && !closed;
}

/** SUBACK's verdict: mqtt.js rejects a subscription the broker answered 128. */
const subscribe = (c: MqttClient, filter: string): Promise<'granted' | 'refused'> =>
  c.subscribeAsync(filter).then((g) => (g[0]?.qos === 128 ? 'refused' as const : 'granted' as const), () => 'refused' as const);

export interface AclResult {
  trials: number;
  passed: number;
  problems: string[];
}

/** set from anonymous and reader (TCP and WebSocket): refused, nothing written; from the writer: written. */
export async function checkSet(gw: Gateway, s: Secrets): Promise<AclResult> {
  const res: AclResult = { trials: 0, passed: 0, problems: [] };
  const verdict = (ok: boolean, what: string): void => {
    res.trials++;
    if (ok) res.passed++;
    else res.problems.push(what);
  };
  for (const [who, ws] of [['anonymous', false], ['reader', false], ['anonymous', true], ['reader', true]] as const) {
    const before = await writeMarks(gw.http);
    const c = await connect(gw, s, who, ws);
    const refused = await publishRefused(gw, s, c, `${BASE}/meter-1/set`, JSON.stringify({ relay: 1 }));
    c.end(true);
    await sleep(300);
    verdict(refused && before === await writeMarks(gw.http), `${who}${ws ? ' (ws)' : ''} set: ${refused ? 'written anyway' : 'delivered, or the connection closed'}`);
  }
  // The control: the writer's set goes through and is written.
  const value = Math.round(Math.random() * 100) / 10 + 18;
  const w = await connect(gw, s, 'writer');
  const result = new Promise<string>((resolve) => {
    w.on('message', (_t, p) => resolve(p.toString()));
    setTimeout(() => resolve('no result'), 5000);
  });
  await w.subscribeAsync(`${BASE}/thermostat-2/set/result`);
  w.publish(`${BASE}/thermostat-2/set`, JSON.stringify({ setpoint: value }));
  const got = await result;
  await w.endAsync(true);
  const point = await api<{ value: unknown }>(gw.http, '/api/v1/shadow/devicePoint?id=thermostat-2&point=setpoint');
  verdict(/"success":true/.test(got) && point.body.data.value === value, `writer set (control): ${got.slice(0, 80)}, point ${String(point.body.data.value)}`);
  return res;
}

/** Nobody, not even the writer, may publish the gateway's own topics; the retained state stays the gateway's. */
export async function checkOwnTopics(gw: Gateway, s: Secrets): Promise<AclResult> {
  const res: AclResult = { trials: 0, passed: 0, problems: [] };
  const spoof = JSON.stringify({ temperature: -99, online: false, spoofed: true });
  for (const who of ['anonymous', 'reader', 'writer'] as const) {
    for (const topic of [`${BASE}/thermostat-1`, `${BASE}/thermostat-1/availability`, `${BASE}/event/data`, `${BASE}/thermostat-1/set/result`, `${BASE}/bridge/state`]) {
      const c = await connect(gw, s, who);
      const refused = await publishRefused(gw, s, c, topic, spoof, true);
      c.end(true);
      res.trials++;
      if (refused) res.passed++;
      else res.problems.push(`${who} published ${topic}`);
    }
  }
  // What a new subscriber gets is still the gateway's state.
  const r = await connect(gw, s, 'reader');
  const state = new Promise<string>((resolve) => {
    r.on('message', (_t, p) => resolve(p.toString()));
    setTimeout(() => resolve(''), 5000);
  });
  await r.subscribeAsync(`${BASE}/thermostat-1`);
  const text = await state;
  await r.endAsync(true);
  res.trials++;
  if (text && !text.includes('spoofed')) res.passed++;
  else res.problems.push(`retained state after the spoofs: ${text.slice(0, 80) || 'none'}`);
  return res;
}

/**
 * Subscriptions: anonymous clients only to the gateway's topics (SUBACK 128 elsewhere, and nothing arrives);
 * users to anything (the control: the reader's `#` gets what the writer publishes elsewhere).
 */
export async function checkSubscribe(gw: Gateway, s: Secrets): Promise<AclResult> {
  const res: AclResult = { trials: 0, passed: 0, problems: [] };
  const anon = await connect(gw, s, 'anonymous');
  const reader = await connect(gw, s, 'reader');
  const got = { anon: [] as string[], reader: [] as string[] };
  anon.on('message', (t) => got.anon.push(t));
  reader.on('message', (t) => got.reader.push(t));
  try {
    for (const filter of ['#', '$SYS/#', 'private/#', '+/thermostat-1', 'homeassistant/#']) {
      res.trials++;
      if (await subscribe(anon, filter) === 'refused') res.passed++;
      else res.problems.push(`anonymous granted ${filter}`);
    }
    res.trials += 2;
    if (await subscribe(anon, `${BASE}/#`) === 'granted') res.passed++;
    else res.problems.push(`anonymous refused ${BASE}/#`);
    if (await subscribe(reader, '#') === 'granted') res.passed++;
    else res.problems.push('the reader refused #');
    const w = await connect(gw, s, 'writer');
    await w.publishAsync('private/flow', 'secret-ish', { qos: 1 });
    await w.endAsync(true);
    await sleep(500);
    res.trials += 2;
    if (anon.connected && !got.anon.includes('private/flow')) res.passed++;
    else res.problems.push('anonymous received private/flow');
    if (got.reader.includes('private/flow')) res.passed++;
    else res.problems.push('the reader (control) did not receive private/flow');
  } finally {
    anon.end(true);
    reader.end(true);
  }
  return res;
}

/** A wrong password is refused (CONNACK 4); the right one connects (control). */
export async function checkLogin(gw: Gateway, s: Secrets): Promise<AclResult> {
  const res: AclResult = { trials: 2, passed: 0, problems: [] };
  const bad = await mqtt.connectAsync(`mqtt://127.0.0.1:${gw.mqtt}`, { username: s.writer.username, password: `${s.writer.password}x`, reconnectPeriod: 0, connectTimeout: 5000 })
    .then((c) => { c.end(true); return 'connected'; }, (e: Error & { code?: number }) => `refused ${String(e.code)}`);
  if (bad === 'refused 4') res.passed++;
  else res.problems.push(`wrong password: ${bad}`);
  const good = await connect(gw, s, 'writer').then((c) => { c.end(true); return 'connected'; }, (e: Error) => e.message);
  if (good === 'connected') res.passed++;
  else res.problems.push(`right password: ${good}`);
  return res;
}
