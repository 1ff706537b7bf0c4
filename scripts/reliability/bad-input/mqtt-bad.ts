/**
 * Bad MQTT input to the real broker: `set` payloads a writer may send but the gateway must refuse (each
 * answered on `set/result` with success false, nothing written), and malformed packets over raw TCP
 * (each connection closed by the broker, the broker still serving).
 */
import net from 'node:net';
import mqtt from 'mqtt';
import { rng } from './fuzz-rest.js';

export const BASE = 'shadowgate';

/** The i-th bad `set`: device and payload. Every one of them must be refused whole. */
export function badSet(seed: number, i: number): { device: string; payload: Buffer; kind: string } {
  const r = rng(seed ^ Math.imul(i + 1, 0x85ebca6b));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const device = pick(['thermostat-1', 'thermostat-2', 'meter-1']);
  const J = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  const kinds: [string, () => Buffer][] = [
    ['not JSON', () => Buffer.from(pick(['{', 'setpoint=20', '{"setpoint":20', "{'setpoint':20}", 'on', '', '20 21', `{"x":${'1'.repeat(50)}`]))],
    ['not an object', () => J(pick([20, 'setpoint', null, true, [{ setpoint: 20 }], [], -1e308]))],
    ['no point', () => J({})],
    ['unknown point', () => J({ [`bogus${Math.floor(r() * 1e6)}`]: r() * 100 })],
    ['read-only point', () => J(pick([{ temperature: 20 }, { status: 'x' }, { pulses: 5 }]))],
    ['wrong type', () => (device === 'meter-1'
      ? J({ relay: pick([1.5, 'on', '1.5', {}, [], null, 'NaN', 'Infinity']) })
      : Buffer.from(pick(['{"setpoint":"abc"}', '{"setpoint":{}}', '{"setpoint":[]}', '{"setpoint":null}', '{"setpoint":"NaN"}', '{"setpoint":1e400}', '{"setpoint":"0x1p3"}'])))],
    ['batch with one bad', () => (device === 'meter-1' ? J({ relay: 1, pulses: 3 }) : J({ setpoint: 19, bogus: 1 }))],
    ['duplicate key', () => Buffer.from(device === 'meter-1' ? '{"relay":1,"relay":"on"}' : '{"setpoint":19,"setpoint":"abc"}')],
    ['huge', () => (r() < 0.5 ? J({ setpoint: 'x'.repeat(100_000 + Math.floor(r() * 700_000)) })
      : J(Object.fromEntries(Array.from({ length: 2000 + Math.floor(r() * 8000) }, (_, k) => [`p${k}`, k]))))],
    ['deep', () => {
      const n = 5000 + Math.floor(r() * 50_000);
      return Buffer.from(`{"setpoint":${'['.repeat(n)}1${']'.repeat(n)}}`);
    }],
    ['binary', () => Buffer.from(Array.from({ length: 1 + Math.floor(r() * 4096) }, () => Math.floor(r() * 256)))],
    ['__proto__', () => Buffer.from('{"__proto__":{"setpoint":19}}')],
  ];
  const [kind, make] = kinds[i % kinds.length]!;
  // An unknown device now and then, with a body that would be good for a thermostat.
  if (r() < 0.08) return { device: `nope-${i}`, payload: J({ setpoint: 19 }), kind: 'unknown device' };
  return { device, payload: make(), kind };
}

export interface SetRun {
  sent: number;
  refused: number;
  problems: string[];
}

/** Sends `count` bad sets one by one as the writer, waiting for each result (5 s). */
export async function runBadSets(port: number, user: { username: string; password: string }, seed: number, count: number): Promise<SetRun> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { ...user, reconnectPeriod: 0, connectTimeout: 5000 });
  const res: SetRun = { sent: 0, refused: 0, problems: [] };
  const waiting = new Map<string, (payload: Buffer) => void>();
  client.on('message', (topic, payload) => waiting.get(topic)?.(payload));
  try {
    await client.subscribeAsync(`${BASE}/+/set/result`);
    for (let i = 0; i < count; i++) {
      const s = badSet(seed, i);
      const topic = `${BASE}/${s.device}/set/result`;
      const result = new Promise<Buffer | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), 5000);
        waiting.set(topic, (p) => {
          clearTimeout(timer);
          resolve(p);
        });
      });
      if (!client.connected) {
        res.problems.push(`#${i} ${s.kind}: the writer's connection was lost`);
        break;
      }
      client.publish(`${BASE}/${s.device}/set`, s.payload);
      res.sent++;
      const got = await result;
      waiting.delete(topic);
      let ok = false;
      try {
        const body = got ? JSON.parse(got.toString()) as { success?: unknown; errorMsg?: unknown } : null;
        ok = body?.success === false && typeof body.errorMsg === 'string' && body.errorMsg.length > 0;
      } catch { /* not JSON: a problem below */ }
      if (ok) res.refused++;
      else if (res.problems.length < 8) res.problems.push(`#${i} ${s.kind}: ${got ? got.toString().slice(0, 120) : 'no set/result in 5 s'}`);
    }
  } finally {
    await client.endAsync(true).catch(() => {});
  }
  return res;
}

const varint = (n: number): Buffer => {
  const out: number[] = [];
  do {
    let d = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) d |= 128;
    out.push(d);
  } while (n > 0);
  return Buffer.from(out);
};
const str = (s: string): Buffer => {
  const b = Buffer.from(s);
  return Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]);
};
const packet = (first: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([first]), varint(body.length), body]);
const connect = (o: { name?: string; level?: number; flags?: number; id?: string; tail?: Buffer } = {}): Buffer =>
  packet(0x10, Buffer.concat([str(o.name ?? 'MQTT'), Buffer.from([o.level ?? 4, o.flags ?? 0x02, 0, 60]), str(o.id ?? 'bad-client'), o.tail ?? Buffer.alloc(0)]));
const ok = connect();

/** Malformed packets, each on its own connection: [what, bytes to send, bytes to stream after (oversized)]. */
export interface Malformed {
  what: string;
  bytes: Buffer;
  /** MiB of filler streamed after the bytes (an announced huge packet). */
  streamMb?: number;
  /** Half-close after the bytes (a packet cut short). */
  end?: boolean;
}

export function malformedPackets(seed: number, garbage: number): Malformed[] {
  const r = rng(seed);
  const list: Malformed[] = [
    { what: 'remaining length of 5 bytes', bytes: Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f]) },
    { what: 'protocol name MQXX', bytes: connect({ name: 'MQXX' }) },
    { what: 'protocol level 99', bytes: connect({ level: 99 }) },
    { what: 'MQTT 5 (unsupported)', bytes: connect({ level: 5, tail: Buffer.from([0]) }) },
    { what: 'reserved connect flag', bytes: connect({ flags: 0x03 }) },
    { what: 'password without user name', bytes: connect({ flags: 0x42, tail: str('pw') }) },
    { what: 'will flag without will topic', bytes: connect({ flags: 0x06 }) },
    { what: 'MQTT 3.1 client id of 300 bytes', bytes: connect({ name: 'MQIsdp', level: 3, id: 'c'.repeat(300) }) },
    { what: 'empty CONNECT', bytes: Buffer.from([0x10, 0x00]) },
    { what: 'CONNECT cut short, then end', bytes: connect().subarray(0, 9), end: true },
    { what: 'PUBLISH before CONNECT', bytes: packet(0x30, Buffer.concat([str(`${BASE}/meter-1/set`), Buffer.from('{"relay":1}')])) },
    { what: 'SUBSCRIBE before CONNECT', bytes: packet(0x82, Buffer.concat([Buffer.from([0, 1]), str('#'), Buffer.from([0])])) },
    { what: 'PINGREQ before CONNECT', bytes: Buffer.from([0xc0, 0x00]) },
    { what: 'reserved packet type 0', bytes: Buffer.from([0x00, 0x00]) },
    { what: 'reserved packet type 15', bytes: Buffer.from([0xf0, 0x00]) },
    { what: 'second CONNECT', bytes: Buffer.concat([ok, ok]) },
    { what: 'SUBSCRIBE with QoS 3', bytes: Buffer.concat([ok, packet(0x82, Buffer.concat([Buffer.from([0, 1]), str(`${BASE}/#`), Buffer.from([3])]))]) },
    { what: 'SUBSCRIBE with wrong header flags', bytes: Buffer.concat([ok, packet(0x80, Buffer.concat([Buffer.from([0, 1]), str(`${BASE}/#`), Buffer.from([0])]))]) },
    { what: 'SUBSCRIBE with no topic', bytes: Buffer.concat([ok, packet(0x82, Buffer.from([0, 1]))]) },
    { what: 'PUBLISH to a wildcard topic', bytes: Buffer.concat([ok, packet(0x30, Buffer.concat([str('a/#'), Buffer.from('x')]))]) },
    { what: 'PUBLISH QoS 3', bytes: Buffer.concat([ok, packet(0x36, Buffer.concat([str('a/b'), Buffer.from([0, 1]), Buffer.from('x')]))]) },
    { what: 'anonymous PUBLISH to a set topic', bytes: Buffer.concat([ok, packet(0x30, Buffer.concat([str(`${BASE}/meter-1/set`), Buffer.from('{"relay":1}')]))]) },
    { what: 'CONNECT announcing 200 MB', bytes: Buffer.from([0x10, 0x80, 0x80, 0x80, 0x60]), streamMb: 4 },
    { what: 'PUBLISH announcing 100 MB after CONNECT', bytes: Buffer.concat([ok, Buffer.from([0x30, 0x80, 0x80, 0x80, 0x30])]), streamMb: 4 },
    { what: 'PUBLISH of 2 MiB after CONNECT', bytes: Buffer.concat([ok, packet(0x30, Buffer.concat([str('big/x'), Buffer.alloc(2 << 20, 0x61)]))]) },
  ];
  for (let i = 0; i < garbage; i++) {
    // Ended after the bytes: garbage that happens to stop inside a plausible packet is otherwise only cut by
    // aedes' connect timeout (30 s).
    list.push({ what: `garbage ${i}`, bytes: Buffer.from(Array.from({ length: 2 + Math.floor(r() * 512) }, () => Math.floor(r() * 256))), end: true });
  }
  return list;
}

/**
 * Sends one malformed exchange and waits for the broker to close the connection (5 s; a client that
 * sends garbage and then goes quiet must not keep a socket either, but aedes' own connect timeout is 30 s,
 * so the cut is expected from the protocol error, not from idling).
 */
export function sendMalformed(port: number, m: Malformed): Promise<{ closed: boolean; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, ms: performance.now() - t0 });
    }, 5000);
    socket.on('error', () => {});
    socket.on('data', () => {});
    socket.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ closed: true, ms: performance.now() - t0 });
    });
    socket.once('connect', async () => {
      socket.write(m.bytes);
      if (m.end) socket.end();
      const mb = Buffer.alloc(1 << 20, 0x41);
      for (let i = 0; i < (m.streamMb ?? 0) && !closed; i++) {
        if (!socket.write(mb)) await new Promise((r) => { socket.once('drain', r); socket.once('close', r); });
      }
    });
  });
}
