/**
 * Test kit for the REST layer: a real Shadow, a small fake DeviceIO that behaves like the real pipeline
 * for what the API can observe, the API on a real server on port 0, and HTTP helpers with timeouts.
 */
import net from 'node:net';
import * as assert from 'uvu/assert';
import type { ApiContext, HealthReport, HttpHandle } from '../../src/api/index.js';
import { startHttp } from '../../src/api/index.js';
import type { GatewayConfig } from '../../src/config/types.js';
import {
  invalidValue, pointReadonly, pointWriteonly, readNotSupported, unknownDevice, unknownPoint,
} from '../../src/core/errors.js';
import type { DeviceIO, WriteRequest } from '../../src/core/io.js';
import { Shadow } from '../../src/core/shadow.js';
import type { PointType, Value } from '../../src/core/types.js';
import { silentLogger } from '../../src/util/logger.js';
import { stamp, waitedBetween } from '../helpers/lateness.js';

/** 2024-03-05 06:07:08.000 UTC: fixed so time texts are predictable. */
export const T0 = Date.UTC(2024, 2, 5, 6, 7, 8);

interface FakePoint { type: PointType; access: 'R' | 'W' | 'RW'; read: Value }
interface FakeDevice { canRead: boolean; points: Record<string, FakePoint>; explode?: boolean }

/** Devices of the fake pipeline: a readable modbus-like box, a push-only device (no active read), one that throws. */
export const FAKE_DEVICES: Record<string, FakeDevice> = {
  boiler: {
    canRead: true,
    points: {
      temp: { type: 'float', access: 'R', read: 21.5 },
      setpoint: { type: 'float', access: 'RW', read: 20 },
      mode: { type: 'string', access: 'RW', read: 'auto' },
      relay: { type: 'int', access: 'RW', read: 0 },
      reset: { type: 'int', access: 'W', read: 0 },
    },
  },
  pusher: { canRead: false, points: { level: { type: 'int', access: 'RW', read: 3 } } },
  broken: { canRead: true, explode: true, points: { x: { type: 'int', access: 'RW', read: 1 } } },
};

export class FakeIO implements DeviceIO {
  readonly reads: { id: string; point: string }[] = [];
  readonly writes: { id: string; values: WriteRequest[] }[] = [];
  constructor(private readonly shadow: Shadow) {}

  private device(id: string): FakeDevice {
    const d = FAKE_DEVICES[id];
    if (!d || !this.shadow.HasDevice(id)) throw unknownDevice();
    // An unexpected (non-Gateway) failure whose text must never reach a client.
    if (d.explode) throw new Error('SECRET internal detail /dev/ttyAMA0 EIO');
    return d;
  }

  async readPoint(id: string, point: string): Promise<Value | null> {
    const d = this.device(id);
    const p = d.points[point];
    if (!p) throw unknownPoint(point);
    if (p.access === 'W') throw pointWriteonly(point);
    if (!d.canRead) throw readNotSupported();
    this.reads.push({ id, point });
    this.shadow.SetDevicePoint(id, point, p.read);
    return this.shadow.GetDevicePoint(id, point);
  }

  async writePoints(id: string, values: readonly WriteRequest[]): Promise<void> {
    const d = this.device(id);
    // Whole batch validated before anything is stored or sent, as the real pipeline does.
    const coerced = values.map(({ name, value }) => {
      const p = d.points[name];
      if (!p) throw unknownPoint(name);
      if (p.access === 'R') throw pointReadonly();
      return { name, value: coerce(value, p.type, name), p };
    });
    this.writes.push({ id, values: values.map((v) => ({ ...v })) });
    for (const { name, value } of coerced) this.shadow.SetWritePointValue(id, name, value);
    // Rule 9: the point then holds the value read back (this fake device applies writes exactly).
    const readBack: Record<string, Value> = {};
    for (const { name, value, p } of coerced) if (p.access !== 'W') readBack[name] = value;
    if (Object.keys(readBack).length > 0) this.shadow.SetDevicePoints(id, readBack);
  }
}

function coerce(value: unknown, type: PointType, name: string): Value {
  if (type === 'string') return String(value);
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(n) || (type === 'int' && !Number.isInteger(n))) {
    throw invalidValue(`value ${JSON.stringify(value)} is not a${type === 'int' ? 'n int' : ' float'} for point ${name}`);
  }
  return n;
}

export interface TestApi {
  port: number;
  url: (path: string) => string;
  shadow: Shadow;
  io: FakeIO;
  clock: { now(): number; t: number };
  handle: HttpHandle;
  health: { report: HealthReport };
}

export interface ApiOptions {
  tokens?: string[];
  protectReads?: boolean;
  readTokens?: string[];
  bodyLimit?: number;
  allowedHosts?: string[];
  /** Seed the shadow with the fake devices and one value (default true). */
  seed?: boolean;
  extraRoutes?: ApiContext['extraRoutes'];
  /** The live-config service (config routes are mounted only with one). */
  config?: ApiContext['config'];
  /** A/B system updates (their routes are mounted only with it). */
  updates?: ApiContext['updates'];
  /** The server's limit on a whole request's time (default 30 s). */
  requestTimeoutMs?: number;
  log?: ApiContext['log'];
}

/** Starts the API on port 0, runs `fn`, always closes the server. */
export async function withApi(opts: ApiOptions, fn: (api: TestApi) => Promise<void>): Promise<void> {
  const clock = { t: T0, now(): number { return this.t; }, mono(): number { return this.t; } };
  const shadow = new Shadow({ maxDevices: 16, maxPoints: 64, defaultTtl: 300_000, clock });
  if (opts.seed !== false) {
    for (const [id, d] of Object.entries(FAKE_DEVICES)) {
      shadow.AddDevice(id, `${id}-model`, undefined, { points: Object.keys(d.points).map((name) => ({ name })) });
    }
    shadow.SetDevicePoint('boiler', 'temp', 21.5);
  }
  const io = new FakeIO(shadow);
  const health = { report: { status: 'healthy', checks: { shadow: { devices: 3 } } } as HealthReport };
  const http: GatewayConfig['http'] = {
    host: '127.0.0.1', port: 0, body_limit: opts.bodyLimit ?? 1024 * 1024, allowed_hosts: opts.allowedHosts ?? [],
    auth: { tokens: opts.tokens ?? [], read_tokens: opts.readTokens ?? [], protect_reads: opts.protectReads ?? false },
  };
  const ctx: ApiContext = {
    shadow, io, http, log: opts.log ?? silentLogger, health: () => health.report, extraRoutes: opts.extraRoutes, ...(opts.config ? { config: opts.config } : {}),
    ...(opts.updates ? { updates: opts.updates } : {}),
  };
  const handle = await withTimeout(startHttp(ctx, { host: '127.0.0.1', port: 0, ...(opts.requestTimeoutMs ? { requestTimeoutMs: opts.requestTimeoutMs } : {}) }), 5000, 'startHttp');
  try {
    await fn({ port: handle.port, url: (p) => `http://127.0.0.1:${handle.port}${p}`, shadow, io, clock, handle, health });
  } finally {
    await withTimeout(handle.close(), 5000, 'close');
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export interface Reply { status: number; headers: Headers; text: string; body: Envelope }
interface Envelope { success: boolean; errorCode: number; errorMsg: string; data: any }

/** Asserts that a body is exactly the envelope, consistent with the HTTP status, and returns it parsed. */
export function assertEnvelope(text: string, status: number, where: string): Envelope {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    assert.unreachable(`non-JSON body for ${where}: ${JSON.stringify(text.slice(0, 200))}`);
  }
  const e = body as Envelope;
  assert.ok(e !== null && typeof e === 'object' && !Array.isArray(e), `not an object: ${where}`);
  assert.equal(Object.keys(e).sort(), ['data', 'errorCode', 'errorMsg', 'success'], `envelope keys: ${where}`);
  assert.type(e.success, 'boolean', where);
  assert.type(e.errorCode, 'number', where);
  assert.type(e.errorMsg, 'string', where);
  if (e.success) assert.equal([e.errorCode, e.errorMsg, status], [200, '', 200], where);
  else {
    assert.is(e.data, null, `failure data must be null: ${where}`);
    assert.ok(e.errorMsg.length > 0, `failure needs a message: ${where}`);
    if (status === 200) assert.is(e.errorCode, 500, where);
    else assert.is(e.errorCode, status, `errorCode equals HTTP status: ${where}`);
  }
  return e;
}

/** fetch with a timeout; returns the parsed, checked envelope. */
export async function call(api: TestApi, method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const res = await fetch(api.url(path), { method, body: init.body, headers: init.headers, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: assertEnvelope(text, res.status, `${method} ${path}`) };
}

export const get = (api: TestApi, path: string, headers?: Record<string, string>): Promise<Reply> => call(api, 'GET', path, { headers });
export const postJson = (api: TestApi, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  call(api, 'POST', path, { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });

/** `waitedMs`: of `ms`, the time this thread (the server's, in these tests) waited for a CPU (helpers/lateness.ts). */
export interface RawReply { status: number; headers: Record<string, string>; body: string; raw: string; ms: number; waitedMs: number }

/**
 * Writes raw bytes on a fresh socket and reads until the server closes it (or `ms` passes). Returns
 * null when no HTTP response came back at all. `body` may be a generator of further chunks to stream.
 */
export function rawHttp(port: number, head: string | Buffer, opts: { stream?: Buffer; streamBytes?: number; ms?: number; end?: boolean } = {}): Promise<RawReply | null> {
  const started = stamp();
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`raw request got no close within ${opts.ms ?? 5000} ms: ${String(head).slice(0, 80)}`));
    }, opts.ms ?? 5000);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => { /* EPIPE/ECONNRESET while we still stream: expected after a 413 */ });
    socket.on('close', () => {
      clearTimeout(timer);
      const ended = stamp();
      resolve(parseRaw(Buffer.concat(chunks).toString('latin1'), ended.t - started.t, waitedBetween(started, ended)));
    });
    socket.write(head);
    // Half-close: a server still waiting for more of a request sees the end instead of idling to its timeout.
    if (opts.end) socket.end();
    if (opts.stream) {
      let sent = 0;
      const total = opts.streamBytes ?? 0;
      const pump = (): void => {
        while (sent < total && !socket.destroyed) {
          sent += opts.stream!.length;
          if (!socket.write(opts.stream!)) { socket.once('drain', pump); return; }
        }
      };
      pump();
    }
  });
}

function parseRaw(raw: string, ms: number, waitedMs: number): RawReply | null {
  const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*\r\n/.exec(raw);
  if (!m) return null;
  const end = raw.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of raw.slice(m[0].length, end).split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.slice(end + 4);
  const len = Number(headers['content-length']);
  if (Number.isFinite(len)) body = Buffer.from(body, 'latin1').subarray(0, len).toString('utf8');
  else if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status: Number(m[1]), headers, body, raw, ms, waitedMs };
}

/** Minimal chunked decoding (latin1 in, utf8 out) for the few responses Node frames that way. */
function dechunk(text: string): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(text.slice(at, eol), 16);
    if (!(size > 0)) break;
    parts.push(Buffer.from(text.slice(eol + 2, eol + 2 + size), 'latin1'));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}
