/**
 * `GET /api/v1/ws`: the shadow's events as JSON WebSocket messages `{type, id, values?, time, ts}` on the
 * REST server (ws@8, noServer). `?device=a,b` filters by device. A client that does not read is dropped
 * once `maxBuffered` bytes wait for it: one slow dashboard must not hold the gateway's memory.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import type { EventBus, ShadowEvents } from '../core/events.js';
import { localTimeText } from '../util/local-time.js';
import { crossSiteReason } from './site.js';

const localTime = (ms: number): string => (Number.isFinite(ms) ? localTimeText(ms) : '');

export interface EventStreamOptions {
  /** Default `/api/v1/ws`. */
  path?: string;
  /** Same rule as REST reads (token when `protect_reads`). */
  authorize(req: http.IncomingMessage): boolean;
  /** Why a browser's handshake names a Host that is not this gateway's (host-guard.ts), or null. */
  hostRefused?: (req: http.IncomingMessage) => string | null;
  /** Bytes queued for one client before it is dropped; default 1 MiB. */
  maxBuffered?: number;
  /** Ping period to reap dead peers; default 30 s. */
  pingInterval?: number;
}

export interface EventMessage {
  type: 'dataChange' | 'online' | 'offline';
  id: string;
  values?: { name: string; value: unknown }[];
  state?: string;
  time: string;
  ts: number;
}

export interface EventStream {
  close(): void;
  stats(): { clients: number; sent: number; dropped: number };
}

export function attachEventStream(
  server: http.Server,
  bus: EventBus<ShadowEvents>,
  opts: EventStreamOptions,
): EventStream {
  const path = opts.path ?? '/api/v1/ws';
  const maxBuffered = opts.maxBuffered ?? 1024 * 1024;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const filters = new Map<WebSocket, Set<string> | null>();
  const alive = new WeakMap<WebSocket, boolean>();
  const counters = { sent: 0, dropped: 0 };
  const owner = {};

  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== path) {
      // Another upgrade handler on this server may own the path; answer only when none does.
      if (server.listenerCount('upgrade') === 1) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    // A page of another site may not read the stream either (site.ts): REST answers are kept from such a
    // page by the browser (no CORS headers), a WebSocket's are not, so its handshake is checked here.
    if (crossSiteReason(req) !== null || (opts.hostRefused?.(req) ?? null) !== null) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    if (!opts.authorize(req)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    const devices = url.searchParams.get('device');
    wss.handleUpgrade(req, socket, head, (ws) => {
      filters.set(ws, devices ? new Set(devices.split(',').filter(Boolean)) : null);
      alive.set(ws, true);
      ws.on('pong', () => alive.set(ws, true));
      ws.on('close', () => filters.delete(ws));
      ws.on('error', () => ws.terminate());
      // Clients only listen; whatever they send is ignored.
    });
  };
  server.on('upgrade', onUpgrade);

  const send = (id: string, msg: EventMessage): void => {
    let text: string | null = null;
    for (const [ws, filter] of filters) {
      if (filter && !filter.has(id)) continue;
      if (ws.readyState !== WebSocket.OPEN) continue;
      if (ws.bufferedAmount > maxBuffered) {
        counters.dropped++;
        filters.delete(ws);
        ws.terminate();
        continue;
      }
      text ??= JSON.stringify(msg);
      ws.send(text);
      counters.sent++;
    }
  };

  bus.on(owner, 'dataChange', (e) =>
    send(e.id, { type: 'dataChange', id: e.id, values: e.values, time: localTime(e.time), ts: e.time }),
  );
  bus.on(owner, 'online', (e) =>
    send(e.id, { type: e.online ? 'online' : 'offline', id: e.id, state: e.state, time: localTime(e.time), ts: e.time }),
  );

  const pinger = setInterval(() => {
    for (const ws of filters.keys()) {
      if (!alive.get(ws)) {
        filters.delete(ws);
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, opts.pingInterval ?? 30_000);
  pinger.unref();

  return {
    close() {
      clearInterval(pinger);
      bus.off(owner);
      server.off('upgrade', onUpgrade);
      for (const ws of filters.keys()) ws.terminate();
      filters.clear();
      wss.close();
    },
    stats: () => ({ clients: filters.size, ...counters }),
  };
}
