/** startHttp: the API on its own node:http server, with a close() that never hangs on keep-alive sockets. */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createApi } from './app.js';
import type { ApiContext } from './context.js';
import { failEnvelope } from './envelope.js';
import { isLongUpload } from './long-upload.js';

export interface HttpHandle {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

/**
 * Lingering close (as for early-answered bodies, envelope.ts): a client still sending when its answer goes
 * out (a megabyte of headers) would get a reset that makes its TCP stack drop the answer, so after the
 * answer the socket keeps reading — Node's parser reports each further chunk as an error, ignored — for
 * at most LINGER_MS, then closes.
 */
const LINGER_MS = 2000;
const answered = new WeakSet<Socket>();

function lingerThenClose(socket: Socket): void {
  answered.add(socket);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * Requests Node cannot parse (bad request line, bad chunk, header overflow) still get an envelope, then
 * the socket closes. When the parse error hits a request already in a handler (a bad chunk in its body),
 * the answer goes through that in-flight response: Node would otherwise emit its own empty 400 for it first.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (answered.has(socket)) return;
  // Node drops a timed-out request from its checks: an upload that guards its own pace (long-upload.ts) goes on.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && isLongUpload(socket)) return;
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const text = status === 431 ? 'request headers too large' : status === 408 ? 'request timeout' : 'bad request';
  const body = JSON.stringify(failEnvelope(status, text));
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (inFlight) {
    if (inFlight.headersSent) {
      socket.destroy();
      return;
    }
    inFlight.statusCode = status;
    inFlight.setHeader('Content-Type', 'application/json; charset=utf-8');
    inFlight.setHeader('Content-Length', Buffer.byteLength(body));
    inFlight.setHeader('Connection', 'close');
    // Answered, the request leaves Node's list of those a closing socket aborts: a handler still reading its
    // body (an upload cut off mid-body: HPE_INVALID_EOF_STATE) would wait for the rest forever.
    socket.once('close', () => {
      if (!inFlight.req.complete) inFlight.req.destroy(new Error(`request body incomplete (${err.code ?? err.message})`));
    });
    inFlight.end(body, () => lingerThenClose(socket));
    return;
  }
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // A timeout (408) means the client stopped sending: nothing to linger for.
  if (status === 408) socket.destroySoon();
  else lingerThenClose(socket);
}

/**
 * CONNECT (a proxy tunnel) is not routed: Node hands the socket to a 'connect' listener or, without one,
 * drops it unanswered. Answered like any other method no route takes.
 */
function onConnect(req: http.IncomingMessage, socket: Duplex): void {
  const target = (req.url ?? '').slice(0, 200);
  const body = JSON.stringify(failEnvelope(405, `method not allowed: CONNECT ${target} (not a proxy)`));
  socket.on('error', () => socket.destroy());
  socket.end(
    `HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, POST, PUT, DELETE\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A whole request's time (headers and body); tests shorten it. */
const REQUEST_TIMEOUT_MS = 30_000;

export async function startHttp(ctx: ApiContext, opts: { host: string; port: number; requestTimeoutMs?: number }): Promise<HttpHandle> {
  const api = createApi(ctx);
  const requestTimeout = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // Node looks for timed-out requests every 30 s by default: a shorter limit is looked at as often as it is long.
  const server = http.createServer({ connectionsCheckingInterval: Math.min(30_000, requestTimeout) }, api.handler);
  // A Pi serves a few clients: a slow or stalled upload should not hold a socket for Node's default 5 min.
  server.requestTimeout = requestTimeout;
  server.headersTimeout = Math.min(10_000, requestTimeout);
  server.on('clientError', onClientError);
  server.on('connect', onConnect);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  ctx.log.info({ host: opts.host, port }, 'REST API listening');
  // At debug level, the whole route table with each route's scope (the auth campaign checks every write route).
  if (ctx.log.isLevelEnabled('debug')) ctx.log.debug({ routes: api.routes() }, 'REST routes');
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Idle keep-alive sockets and in-flight requests would otherwise keep close() (and SIGTERM) waiting.
      server.closeAllConnections();
    }));
  return { server, port, close };
}
