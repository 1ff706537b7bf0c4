/**
 * Sends the fuzzer's cases to the real gateway and judges every answer: the envelope, except the documented
 * non-envelope endpoints (/metrics, the console's files) when they succeed. Also the connection-level abuse:
 * many connections at once, and slowloris connections that never finish their headers or their body.
 */
import net from 'node:net';
import { exemptPath, fuzzCase, type Tokens } from './fuzz-rest.js';
import { envelopeProblem, exchange, parseReply, request } from './raw-http.js';

export interface FuzzResult {
  sent: number;
  /** Answers that are envelopes (or a documented non-envelope endpoint's success). */
  good: number;
  /** Cases allowed to end without an answer (garbage, lying lengths) that did. */
  unanswered: number;
  statuses: Map<number, number>;
  /** What went wrong, first few with the case index (replay: fuzzCase(seed, index)). */
  problems: string[];
  bad: number;
}

export async function runFuzz(port: number, seed: number, count: number, tokens: Tokens, width: number): Promise<FuzzResult> {
  const res: FuzzResult = { sent: 0, good: 0, unanswered: 0, statuses: new Map(), problems: [], bad: 0 };
  const fail = (i: number, what: string): void => {
    res.bad++;
    if (res.problems.length < 8) res.problems.push(`#${i} ${what}`);
  };
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) {
      const i = next++;
      const c = fuzzCase(seed, i, tokens);
      const x = await exchange(port, c.pieces, { halfClose: c.halfClose, timeoutMs: 12_000, method: c.method, ...(c.from ? { from: c.from } : {}) });
      res.sent++;
      if (!x.reply) {
        if (c.mayNotAnswer) res.unanswered++;
        else fail(i, `${c.kind} ${c.method} ${c.path.slice(0, 60)}: ${x.closed ? 'closed without an answer' : 'no answer in 12 s'}`);
        continue;
      }
      res.statuses.set(x.reply.status, (res.statuses.get(x.reply.status) ?? 0) + 1);
      if (exemptPath(c.path.split('?')[0]!) && (x.reply.status === 200 || x.reply.status === 304)) {
        res.good++;
        continue;
      }
      const problem = envelopeProblem(x.reply, c.method);
      if (problem) fail(i, `${c.kind} ${c.method} ${c.path.slice(0, 60)} → ${x.reply.status}: ${problem}`);
      else res.good++;
    }
  }));
  return res;
}

/** `count` connections opened at once, each asking for the shadow: every one must get its 200 envelope. */
export async function burst(port: number, count: number): Promise<{ ok: number; problems: string[] }> {
  const bytes = request('GET', '/api/v1/shadow/all');
  const all = await Promise.all(Array.from({ length: count }, () => exchange(port, [{ bytes }], { timeoutMs: 20_000 })));
  const problems: string[] = [];
  let ok = 0;
  for (const x of all) {
    const p = x.reply ? envelopeProblem(x.reply, 'GET') ?? (x.reply.status === 200 ? null : `status ${x.reply.status}`) : 'no answer';
    if (p) problems.push(p);
    else ok++;
  }
  return { ok, problems: [...new Set(problems)] };
}

export interface Slow {
  /** Connections still open (not closed by the server yet). */
  open(): number;
  /** Per connection: ms until the server closed it (null: still open), and whether its answer was an envelope. */
  results(): { closedAfterMs: number | null; answer: 'envelope' | 'none' | 'other' }[];
  stop(): void;
}

/**
 * Slowloris: `headers` connections that send a header line a second and never end their headers, and
 * `bodies` that declare a body and send 10 bytes of it, then nothing. The server must cut them
 * (headersTimeout 10 s, requestTimeout 30 s, checked every 30 s by Node) and keep serving everyone else.
 */
export function slowloris(port: number, headers: number, bodies: number): Slow {
  const t0 = performance.now();
  const conns: { socket: net.Socket; data: Buffer[]; closedAt: number | null; timer?: NodeJS.Timeout }[] = [];
  const open = (first: Buffer, trickle: boolean): void => {
    const socket = net.connect(port, '127.0.0.1');
    const c = { socket, data: [] as Buffer[], closedAt: null as number | null, timer: undefined as NodeJS.Timeout | undefined };
    socket.on('data', (d: Buffer) => c.data.push(d));
    socket.on('error', () => {});
    socket.on('close', () => {
      c.closedAt ??= performance.now() - t0;
      clearInterval(c.timer);
    });
    socket.once('connect', () => {
      socket.write(first);
      let n = 0;
      if (trickle) c.timer = setInterval(() => socket.writable && socket.write(`X-Slow-${n++}: ${'z'.repeat(8)}\r\n`), 1000);
    });
    conns.push(c);
  };
  for (let i = 0; i < headers; i++) open(Buffer.from('GET /api/v1/shadow/all HTTP/1.1\r\nHost: 127.0.0.1\r\n'), true);
  const body = request('POST', '/api/v1/device/writePoints', { headers: { 'Content-Type': 'application/json' }, body: Buffer.from('{"id":"met'), length: 1000, close: false });
  for (let i = 0; i < bodies; i++) open(body, false);
  return {
    open: () => conns.filter((c) => c.closedAt === null).length,
    results: () => conns.map((c) => {
      const raw = Buffer.concat(c.data);
      const reply = parseReply(raw);
      const answer = raw.length === 0 ? 'none' as const : reply && !envelopeProblem(reply, 'GET') ? 'envelope' as const : 'other' as const;
      return { closedAfterMs: c.closedAt, answer };
    }),
    stop: () => {
      for (const c of conns) {
        clearInterval(c.timer);
        c.socket.destroy();
      }
    },
  };
}
