/**
 * REST load on `GET /api/v1/shadow/devicePoint`: its capacity (autocannon, as `make bench` measures it)
 * and a steady paced load at a given rate over keep-alive connections. The paced load spreads the
 * requests evenly (autocannon's own rate limit fires each second's quota in one burst at the start of
 * the second, which would measure bursts, not a steady half load).
 */
import net from 'node:net';
import autocannon from 'autocannon';

export interface RestCapacity {
  rps: number;
  p99: number;
  errors: number;
}

export async function restCapacity(url: string, seconds: number): Promise<RestCapacity> {
  await autocannon({ url, connections: 50, duration: 1, pipelining: 1 }); // warm-up
  const r = await autocannon({ url, connections: 50, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

export interface PacedLoad {
  /** Answers with status 200 and a `success: true` envelope. */
  ok: number;
  /** Anything else: non-200, a failed envelope, a closed socket, a timeout. */
  failed: number;
  /** Requests not yet sent although due (the gateway, or the load generator, fell behind). */
  behind(): number;
  firstFailure: string | null;
  stop(): Promise<void>;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * `rate` requests/s of `GET url` over `connections` keep-alive sockets, one request in flight on each, request
 * i due at t0 + i/rate. Raw sockets and a minimal response reader (Content-Length bodies, which is all the
 * gateway sends): node:http's client tops out near 4,000 req/s here, below the targets.
 */
export function pacedRest(url: string, rate: number, connections = 16, timeoutMs = 5000): PacedLoad {
  const u = new URL(url);
  const request = Buffer.from(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: keep-alive\r\n\r\n`);
  const t0 = performance.now();
  let sent = 0;
  let running = true;
  const load: PacedLoad = {
    ok: 0, failed: 0, firstFailure: null,
    behind: () => Math.max(0, Math.floor(((performance.now() - t0) * rate) / 1000) - sent),
    async stop() {
      running = false;
      clearInterval(timer);
      const end = Date.now() + timeoutMs;
      while (conns.some((c) => c.busy) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      for (const c of conns) c.socket.destroy();
    },
  };
  const fail = (why: string): void => {
    load.failed++;
    load.firstFailure ??= why;
  };
  interface Conn { socket: net.Socket; busy: boolean; since: number; buf: Buffer }
  const open = (): Conn => {
    const c: Conn = { socket: net.connect(Number(u.port), u.hostname), busy: false, since: 0, buf: Buffer.alloc(0) };
    c.socket.setNoDelay(true);
    c.socket.on('data', (chunk: Buffer) => {
      c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
      const head = c.buf.indexOf(HEAD_END);
      if (head < 0) return;
      const headers = c.buf.subarray(0, head).toString('latin1');
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(headers)?.[1] ?? NaN);
      if (!(length >= 0)) {
        fail(`no Content-Length: ${headers.slice(0, 80)}`);
        c.socket.destroy();
        return;
      }
      if (c.buf.length < head + 4 + length) return;
      const body = c.buf.subarray(head + 4, head + 4 + length).toString('utf8');
      c.buf = c.buf.subarray(head + 4 + length);
      if (headers.startsWith('HTTP/1.1 200') && body.includes('"success":true')) load.ok++;
      else fail(`${headers.slice(0, 12)}: ${body.slice(0, 120)}`);
      c.busy = false;
      pump();
    });
    c.socket.on('error', () => {}); // 'close' follows and accounts for it
    c.socket.on('close', () => {
      if (c.busy) fail('connection closed with a request in flight');
      c.busy = false;
      // A refused connect (the gateway died) must not spin: try again a little later.
      if (running) setTimeout(() => running && (conns[conns.indexOf(c)] = open()), 100);
    });
    return c;
  };
  const conns = Array.from({ length: connections }, open);
  const pump = (): void => {
    if (!running) return;
    const now = performance.now();
    const due = Math.floor(((now - t0) * rate) / 1000);
    for (const c of conns) {
      if (c.busy && now - c.since > timeoutMs) {
        fail(`no answer in ${timeoutMs} ms`);
        c.busy = false;
        c.socket.destroy();
      }
    }
    for (const c of conns) {
      if (sent >= due) break;
      if (c.busy || c.socket.destroyed) continue;
      c.busy = true;
      c.since = now;
      sent++;
      c.socket.write(request);
    }
  };
  const timer = setInterval(pump, 2);
  return load;
}
