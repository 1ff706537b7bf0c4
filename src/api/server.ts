/** startHttp: the API on its own node:http server, with a close() that never hangs on keep-alive sockets. */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createApi } from './app.js';
import type { ApiContext } from './context.js';
import { failEnvelope } from './envelope.js';

export interface HttpHandle {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

/**
 * Requests Node cannot parse (bad request line, bad chunk, header overflow) still get an envelope, then
 * the socket closes. When the parse error hits a request already in a handler (a bad chunk in its body),
 * the answer goes through that in-flight response: Node would otherwise emit its own empty 400 for it first.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
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
    inFlight.end(body, () => socket.destroy());
    return;
  }
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  socket.destroySoon();
}

export async function startHttp(ctx: ApiContext, opts: { host: string; port: number }): Promise<HttpHandle> {
  const api = createApi(ctx);
  const server = http.createServer(api.handler);
  // A Pi serves a few clients: a slow or stalled upload should not hold a socket for Node's default 5 min.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.on('clientError', onClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  ctx.log.info({ host: opts.host, port }, 'REST API listening');
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Idle keep-alive sockets and in-flight requests would otherwise keep close() (and SIGTERM) waiting.
      server.closeAllConnections();
    }));
  return { server, port, close };
}
