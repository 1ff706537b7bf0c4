/**
 * The MQTT side of the soak. One subscriber to `#` (fleet F's, a mosquitto_sub child as a read-only user:
 * the C client costs the load generator little) whose messages are counted. And the MQTT load: `set` commands
 * (`shadowgate/<device>/set`, a can_write user, mqtt.js) answered on `…/set/result` — the gateway's MQTT
 * request path (ACL, JSON, the write pipeline, read-back, state publish). Its capacity is the results/s
 * with 32 sets in flight (the exporter refuses beyond 64); the paced load sends `rate`/s evenly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, statSync } from 'node:fs';
import mqtt, { type MqttClient } from 'mqtt';

const BASE = 'shadowgate';

/** `p`, or an error after `ms` (no wait of the soak is unbounded). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing in ${ms} ms`)), ms)));
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** Sets in flight at most (the exporter refuses more than 64 with "too many writes pending"). */
const WINDOW = 32;

export interface Subscriber {
  pid: number;
  /** Messages received so far. */
  count(): number;
  alive(): boolean;
  /** SIGTERM, SIGKILL after 2 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * `mosquitto_sub -F ''` writes one newline per message into `file`: the count is the file's size, and the
 * subscriber never waits for this process to read a pipe (a stalled reader would become a slow subscriber,
 * whose messages the broker then queues in the gateway's memory).
 */
export function subscribeAll(port: number, user: { username: string; password: string }, file: string): Subscriber {
  const fd = openSync(file, 'w');
  const child: ChildProcess = spawn('mosquitto_sub', [
    '-h', '127.0.0.1', '-p', String(port), '-V', 'mqttv311', '-i', 'soak-sub', '-u', user.username, '-P', user.password, '-t', '#', '-F', '',
  ], { stdio: ['ignore', fd, 'inherit'] });
  closeSync(fd);
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  return {
    pid: child.pid!,
    count: () => statSync(file).size,
    alive: () => !exited,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 2000);
      await gone;
      clearTimeout(kill);
    },
  };
}

export interface Setter {
  sent: number;
  ok: number;
  failed: number;
  firstFailure: string | null;
  /** Sets due but not sent (the window was full: the gateway fell behind). */
  behind(): number;
  stop(): Promise<void>;
}

/**
 * A can_write client publishing sets to RW `point` of devices dev-0…dev-(devices-1) in turn. Results go to
 * every subscriber of `…/set/result`, so each client writes values of its own range (`lane` × 1,000,000 up)
 * and counts only the results that echo one of them.
 */
export async function setter(port: number, user: { username: string; password: string }, point: string, devices: number, lane: number): Promise<{
  client: MqttClient;
  counters: Setter;
  send(): void;
  onResult(fn: () => void): void;
}> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, {
    ...user, protocolVersion: 4, reconnectPeriod: 0, clientId: 'soak-setter', connectTimeout: 10_000,
  });
  try {
    await within(client.subscribeAsync(`${BASE}/+/set/result`), 10_000, 'SUBACK for set results');
  } catch (err) {
    client.end(true);
    throw err;
  }
  let value = 0;
  let listener: (() => void) | null = null;
  const counters: Setter = {
    sent: 0, ok: 0, failed: 0, firstFailure: null, behind: () => 0,
    stop: async () => {
      if (!client.disconnected && !client.disconnecting) await within(client.endAsync(true), 5000, 'MQTT disconnect').catch(() => {});
    },
  };
  const LANE = 1_000_000;
  client.on('message', (_topic, payload) => {
    const text = payload.toString();
    let result: { success?: boolean; values?: { value?: unknown }[] };
    try {
      result = JSON.parse(text) as typeof result;
    } catch {
      result = {};
    }
    const v = result.values?.[0]?.value;
    if (typeof v === 'number' && Math.floor(v / LANE) !== lane) return; // another client's set
    if (result.success === true) counters.ok++;
    else {
      counters.failed++;
      counters.firstFailure ??= text.slice(0, 160);
    }
    listener?.();
  });
  const send = (): void => {
    const device = `dev-${counters.sent % devices}`;
    counters.sent++;
    client.publish(`${BASE}/${device}/set`, JSON.stringify({ [point]: lane * LANE + (++value % LANE) }), { qos: 0 });
  };
  return { client, counters, send, onResult: (fn) => (listener = fn) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const outstanding = (c: Setter): number => c.sent - c.ok - c.failed;

/** Results/s with WINDOW sets in flight, after a 1 s warm-up. */
export async function setCapacity(port: number, user: { username: string; password: string }, point: string, devices: number, seconds: number):
  Promise<{ rate: number; failed: number; firstFailure: string | null }> {
  const s = await setter(port, user, point, devices, 1);
  try {
    const fill = (): void => {
      while (outstanding(s.counters) < WINDOW) s.send();
    };
    s.onResult(fill);
    fill();
    await sleep(1000);
    const done0 = s.counters.ok + s.counters.failed;
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const done = s.counters.ok + s.counters.failed - done0;
    const rate = (done * 1000) / (performance.now() - t0);
    s.onResult(() => {});
    return { rate, failed: s.counters.failed, firstFailure: s.counters.firstFailure };
  } finally {
    // The results still due go to every subscriber of …/set/result: the paced load must not count them.
    const end = Date.now() + 5000;
    while (outstanding(s.counters) > 0 && Date.now() < end) await sleep(20);
    await s.counters.stop();
  }
}

/** `rate` sets/s, each due at t0 + i/rate, never more than WINDOW unanswered. */
export async function pacedSets(port: number, user: { username: string; password: string }, point: string, devices: number, rate: number): Promise<Setter> {
  const s = await setter(port, user, point, devices, 2);
  const t0 = performance.now();
  const due = (): number => Math.floor(((performance.now() - t0) * rate) / 1000);
  const pump = (): void => {
    while (s.counters.sent < due() && outstanding(s.counters) < WINDOW) s.send();
  };
  const timer = setInterval(pump, 5);
  s.counters.behind = () => Math.max(0, due() - s.counters.sent);
  const stop = s.counters.stop;
  s.counters.stop = async () => {
    clearInterval(timer);
    await stop();
  };
  return s.counters;
}
