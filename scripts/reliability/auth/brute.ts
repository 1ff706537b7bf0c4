/**
 * Guessing from one source: N wrong REST tokens and N wrong MQTT passwords in turn, each attempt timed from
 * request to answer (the backoff holds the answer of a failure, so the time per attempt must rise); then a
 * burst of parallel guesses while the source is blocked (none may be judged: 429 / CONNACK 5, the right
 * credential too), and after the block the right credential, which clears the source (the next wrong attempt
 * is fast again). REST and MQTT keep separate tables; each protocol uses its own loopback address.
 */
import net from 'node:net';
import { api } from '../bad-input/checks.js';
import type { Gateway, Secrets } from '../bad-input/gateway.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface BruteResult {
  /** ms per wrong attempt, in order. */
  times: number[];
  /** Outcomes of a parallel burst of 8 guesses and then the right credential. */
  burst: string[];
  /** The right credential after the block: accepted? */
  accepted: boolean;
  /** ms of a wrong attempt right after the success (reset: fast again). */
  afterReset: number;
  problems: string[];
}

export async function restBrute(gw: Gateway, s: Secrets, n: number, from: string): Promise<BruteResult> {
  const res: BruteResult = { times: [], burst: [], accepted: false, afterReset: NaN, problems: [] };
  const path = '/api/v1/device/writePoint';
  for (let i = 0; i < n; i++) {
    // The 8th answer is held 12.8 s (the cap is 30 s).
    const a = await api(gw.http, path, { method: 'POST', token: `guess-${i}`, from, timeoutMs: 40_000 });
    res.times.push(a.ms);
    if (a.status !== 401) res.problems.push(`guess ${i + 1}: ${a.status} ${a.body.errorMsg}`);
  }
  // Parallel guesses: the first is judged and blocks the source, the others (and then the right token) are not.
  const guesses = Array.from({ length: 8 }, (_, i) => api(gw.http, path, { method: 'POST', token: `burst-${i}`, from, timeoutMs: 40_000 }));
  await sleep(50);
  const burst = await Promise.all([...guesses, api(gw.http, '/api/v1/config/versions', { token: s.writeToken, from })]);
  res.burst = burst.map((b) => (b.status === 429 ? 'blocked' : `${b.status}`));
  const retry = Math.max(...burst.map((b) => Number(b.headers['retry-after'] ?? 0)));
  await sleep((Number.isFinite(retry) ? retry : 30) * 1000 + 200);
  const ok = await api(gw.http, '/api/v1/config/versions', { token: s.writeToken, from });
  res.accepted = ok.status === 200 && ok.body.success;
  res.afterReset = (await api(gw.http, path, { method: 'POST', token: 'after-reset', from })).ms;
  return res;
}

const str = (t: string): Buffer => Buffer.concat([Buffer.from([Buffer.byteLength(t) >> 8, Buffer.byteLength(t) & 255]), Buffer.from(t)]);
function connectPacket(user: string, password: string): Buffer {
  const body = Buffer.concat([str('MQTT'), Buffer.from([4, 0xc2, 0, 30]), str(`brute-${Math.random().toString(36).slice(2, 8)}`), str(user), str(password)]);
  return Buffer.concat([Buffer.from([0x10, body.length]), body]);
}

/** One CONNECT from `from`: the CONNACK's return code and the ms until it came (or 'closed'/'timeout'). */
function login(port: number, user: string, password: string, from: string): Promise<{ code: number | string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from });
    const done = (code: number | string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ code, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => done('timeout'), 40_000);
    socket.on('error', () => done('closed'));
    socket.on('close', () => done('closed'));
    socket.on('data', (d: Buffer) => {
      if (d[0] === 0x20 && d.length >= 4) done(d[3]!);
    });
    socket.once('connect', () => socket.write(connectPacket(user, password)));
  });
}

export async function mqttBrute(gw: Gateway, s: Secrets, n: number, from: string): Promise<BruteResult> {
  const res: BruteResult = { times: [], burst: [], accepted: false, afterReset: NaN, problems: [] };
  const user = s.writer.username;
  let lastHold = 0;
  for (let i = 0; i < n; i++) {
    const a = await login(gw.mqtt, user, `guess-${i}`, from);
    res.times.push(a.ms);
    lastHold = a.ms;
    if (a.code !== 4) res.problems.push(`guess ${i + 1}: CONNACK ${a.code}`);
  }
  const guesses = Array.from({ length: 8 }, (_, i) => login(gw.mqtt, user, `burst-${i}`, from));
  await sleep(50);
  const burst = await Promise.all([...guesses, login(gw.mqtt, user, s.writer.password, from)]);
  res.burst = burst.map((b) => (b.code === 5 ? 'blocked' : `CONNACK ${b.code}`));
  // The judged guess of the burst blocked the source for twice the last hold.
  await sleep(lastHold * 2.2 + 200);
  const ok = await login(gw.mqtt, user, s.writer.password, from);
  res.accepted = ok.code === 0;
  res.afterReset = (await login(gw.mqtt, user, 'after-reset', from)).ms;
  return res;
}

/** The burst as it must be: at most one guess judged, the rest — the right credential last — blocked. */
export const burstHeld = (b: readonly string[]): boolean => b.filter((x) => x !== 'blocked').length <= 1 && b[b.length - 1] === 'blocked';

/**
 * Whether each attempt took at least the hold the backoff sets for it (0.1 s × 2^(n-1), 10 % slack for
 * timers) — a check's own cost (scrypt, 0.05–0.5 s on a loaded machine) only adds — and the last ≥ 1 s.
 */
export function rising(times: readonly number[]): boolean {
  return times.length >= 3 && times.every((t, i) => t >= 0.9 * 100 * 2 ** i) && times[times.length - 1]! >= 1000;
}
