/** After the abuse: is the gateway still right? The shadow, a write and its read-back, the broker, the config. */
import http from 'node:http';
import mqtt from 'mqtt';
import type { Gateway, Secrets } from './gateway.js';

export interface Envelope<T = unknown> {
  success: boolean;
  errorCode: number;
  errorMsg: string;
  data: T;
}

/**
 * One request on a fresh connection (no pooled keep-alive socket the server may be closing), 10 s timeout
 * unless told;
 * the body parsed as JSON (an envelope, for every /api/v1 path).
 */
export function api<T = unknown>(port: number, path: string, init: { method?: string; token?: string; body?: unknown; from?: string; timeoutMs?: number } = {}): Promise<{ status: number; body: Envelope<T>; headers: http.IncomingHttpHeaders; ms: number }> {
  const t0 = performance.now();
  const headers: Record<string, string> = {};
  if (init.token) headers['authorization'] = `Bearer ${init.token}`;
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers, agent: false, timeout: init.timeoutMs ?? 10_000,
      ...(init.from ? { localAddress: init.from } : {}),
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as Envelope<T>, headers: res.headers, ms: performance.now() - t0 });
        } catch (err) {
          reject(new Error(`${path}: ${res.statusCode} not JSON (${(err as Error).message})`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${path}: no answer in ${(init.timeoutMs ?? 10_000) / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

interface RestPoint { name: string; value: unknown; write_value: unknown; write_time: string }
interface RestDevice { id: string; online: boolean; points: RestPoint[] }

/** Every writable point's write value and time, per device: what a refused write must leave alone. */
export async function writeMarks(port: number): Promise<string> {
  const all = await api<RestDevice[]>(port, '/api/v1/shadow/all');
  return JSON.stringify(all.body.data.map((d) => [d.id, d.points.map((p) => [p.name, p.write_value, p.write_time])]));
}

/** The config's version count: bad input must not have changed the configuration. */
export async function versionCount(port: number, s: Secrets): Promise<number> {
  const v = await api<unknown[]>(port, '/api/v1/config/versions', { token: s.writeToken });
  return Array.isArray(v.body.data) ? v.body.data.length : -1;
}

/** What is wrong with the gateway now (empty: nothing). */
export async function healthProblems(gw: Gateway, s: Secrets, pid: number, versions: number): Promise<string[]> {
  const out: string[] = [];
  if (!gw.alive() || gw.pid !== pid) return [`process gone (exit ${gw.child.exitCode ?? gw.child.signalCode})`];
  try {
    const all = await api<RestDevice[]>(gw.http, '/api/v1/shadow/all');
    const ids = all.body.data.map((d) => d.id).join(',');
    if (ids !== 'meter-1,thermostat-1,thermostat-2') out.push(`shadow holds ${ids}`);
    for (const d of all.body.data) {
      if (!d.online) out.push(`${d.id} offline`);
      const t = d.points.find((p) => p.name === 'temperature')?.value;
      if (d.id.startsWith('thermostat') && !(typeof t === 'number' && t >= 18 && t <= 26)) out.push(`${d.id} temperature ${String(t)}`);
    }
    const value = 18 + Math.round(Math.random() * 40) / 10;
    const w = await api(gw.http, '/api/v1/device/writePoints', { method: 'POST', token: s.writeToken, body: { id: 'thermostat-1', values: [{ name: 'setpoint', value }] } });
    if (!w.body.success) out.push(`write refused: ${w.body.errorMsg}`);
    const p = await api<RestPoint>(gw.http, '/api/v1/shadow/devicePoint?id=thermostat-1&point=setpoint');
    if (p.body.data.value !== value || p.body.data.write_value !== value) out.push(`read-back ${String(p.body.data.value)} after writing ${value}`);
    const v = await versionCount(gw.http, s);
    if (v !== versions) out.push(`config versions ${versions} → ${v}`);
  } catch (err) {
    out.push(`REST: ${(err as Error).message}`);
  }
  const retained = await retainedState(gw.mqtt, s).catch((err: Error) => `MQTT: ${err.message}`);
  if (retained) out.push(retained);
  return out;
}

/** The reader gets thermostat-1's retained state (online) from the broker: null when it does. */
async function retainedState(port: number, s: Secrets): Promise<string | null> {
  const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { ...s.reader, reconnectPeriod: 0, connectTimeout: 5000 });
  try {
    const got = new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('no retained state in 5 s'), 5000);
      c.on('message', (_t, payload) => {
        clearTimeout(timer);
        const state = JSON.parse(payload.toString()) as { online?: unknown };
        resolve(state.online === true ? '' : `retained state ${payload.toString().slice(0, 80)}`);
      });
    });
    await c.subscribeAsync('shadowgate/thermostat-1');
    return (await got) || null;
  } finally {
    await c.endAsync(true).catch(() => {});
  }
}

/** Log lines that mean the process fell over or something escaped a handler. */
export function fatalLines(lines: readonly string[]): string[] {
  return lines.filter((l) => /"level":60|uncaughtException|unhandledRejection/.test(l));
}

/** Errors that escaped a REST handler: the gateway answered, but a handler did something it must not. */
export function escapedLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes('"level":50') && l.includes('unexpected error in REST handler'));
}

/** Error-level lines (level 50) grouped by message and error text, for the note: `3× msg (err)`. */
export function errorSummary(lines: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const l of lines) {
    if (!l.includes('"level":50')) continue;
    let key = l.slice(0, 80);
    try {
      const e = JSON.parse(l) as { msg?: string; err?: { message?: string } };
      key = `${e.msg ?? '?'}${e.err?.message ? ` (${e.err.message.slice(0, 60)})` : ''}`;
    } catch { /* a line that is not JSON: its start */ }
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts.size ? `error lines: ${[...counts].map(([k, n]) => `${n}× ${k}`).join(', ')}` : 'no error lines';
}
