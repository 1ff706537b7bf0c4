/**
 * HTTP over a raw socket: what a fuzzer needs that fetch cannot send (invalid bytes in the request line,
 * bodies shorter than their Content-Length, a body trickled byte by byte), and the one check every
 * answer of the API must pass (the envelope).
 */
import net from 'node:net';

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface Exchange {
  /** The first response on the socket, or null when the server closed without one. */
  reply: RawReply | null;
  /** The server ended the connection (vs. our own timeout). */
  closed: boolean;
  ms: number;
}

/** A piece to send after waiting `delayMs` (a slow body), the last piece optionally followed by a half-close. */
export interface Piece {
  bytes: Buffer;
  delayMs?: number;
}

export function parseReply(raw: Buffer): RawReply | null {
  // An interim 100 Continue (Expect: 100-continue) precedes the answer.
  while (/^HTTP\/1\.[01] 1(0[02-9]|[1-9]\d)\b/.test(raw.subarray(0, 16).toString('latin1')) && raw.indexOf('\r\n\r\n') >= 0) {
    raw = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
  }
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const head = raw.subarray(0, headEnd).toString('latin1');
  const m = /^HTTP\/1\.[01] (\d{3})[^\r\n]*/.exec(head);
  if (!m) return null;
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.subarray(headEnd + 4);
  const len = Number(headers['content-length']);
  if (Number.isFinite(len)) body = body.subarray(0, len);
  return { status: Number(m[1]), headers, body };
}

/** Complete when the Content-Length worth of body is in (the server may keep the socket for a lingering close). */
function complete(raw: Buffer, method: string): boolean {
  const r = parseReply(raw);
  if (!r) return false;
  const len = Number(r.headers['content-length']);
  // HEAD, 204 and 304 carry no body whatever their Content-Length says.
  return r.status === 101 || method === 'HEAD' || r.status === 204 || r.status === 304 || (Number.isFinite(len) && r.body.length >= len);
}

/**
 * Sends the pieces, then waits for a whole response, the server's close, or `timeoutMs` (then destroys the
 * socket). `halfClose` ends our side after the last piece (a truncated body the server then sees end).
 */
export function exchange(port: number, pieces: Piece[], opts: { timeoutMs?: number; halfClose?: boolean; from?: string; method?: string } = {}): Promise<Exchange> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', ...(opts.from ? { localAddress: opts.from } : {}) });
    const chunks: Buffer[] = [];
    let done = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      socket.destroy();
      const raw = Buffer.concat(chunks);
      resolve({ reply: parseReply(raw), closed, ms: performance.now() - t0 });
    };
    timers.push(setTimeout(() => finish(false), opts.timeoutMs ?? 10_000));
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (complete(Buffer.concat(chunks), opts.method ?? 'GET')) finish(true);
    });
    // EPIPE/ECONNRESET while still sending: the server answered early (401, 413) and closed.
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.once('connect', () => {
      let at = 0;
      pieces.forEach((p, i) => {
        at += p.delayMs ?? 0;
        const send = (): void => {
          if (done || socket.destroyed) return;
          socket.write(p.bytes);
          if (i === pieces.length - 1 && opts.halfClose) socket.end();
        };
        if (at === 0) send();
        else timers.push(setTimeout(send, at));
      });
    });
  });
}

/** A request's bytes; `body` gets a Content-Length unless `length` overrides it (a lie) or is null (none). */
export function request(method: string, target: string | Buffer, opts: { headers?: Record<string, string>; body?: Buffer; length?: number | null; close?: boolean } = {}): Buffer {
  const lines = [`Host: 127.0.0.1`];
  if (opts.close !== false) lines.push('Connection: close');
  for (const [k, v] of Object.entries(opts.headers ?? {})) lines.push(`${k}: ${v}`);
  const len = opts.length === undefined ? opts.body?.length : opts.length;
  if (len !== undefined && len !== null) lines.push(`Content-Length: ${len}`);
  return Buffer.concat([
    Buffer.from(`${method} `), Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'),
    Buffer.from(` HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1'), opts.body ?? Buffer.alloc(0),
  ]);
}

/** Why a reply is not the envelope `{success, errorCode, errorMsg, data}` (docs/rest.md), or null when it is. */
export function envelopeProblem(reply: RawReply, method: string): string | null {
  if (!/^application\/json\b/.test(reply.headers['content-type'] ?? '')) return `content-type ${reply.headers['content-type'] ?? 'none'}`;
  // HEAD gets the envelope's headers without its body (RFC 9110).
  if (method === 'HEAD') return null;
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(reply.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return `not JSON: ${JSON.stringify(reply.body.toString('latin1').slice(0, 120))}`;
  }
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return 'not an object';
  if (Object.keys(e).sort().join() !== 'data,errorCode,errorMsg,success') return `keys ${Object.keys(e).join()}`;
  if (typeof e['success'] !== 'boolean' || typeof e['errorCode'] !== 'number' || typeof e['errorMsg'] !== 'string') return 'field types';
  if (e['success']) return e['errorCode'] === 200 && reply.status === 200 ? null : `success with ${String(e['errorCode'])}/${reply.status}`;
  if (e['data'] !== null && !(reply.status === 200 && typeof e['data'] === 'object')) return 'failure with data';
  if ((e['errorMsg'] as string).length === 0) return 'failure without a message';
  const expected = reply.status === 200 ? 500 : reply.status;
  return e['errorCode'] === expected ? null : `errorCode ${String(e['errorCode'])} under HTTP ${reply.status}`;
}
