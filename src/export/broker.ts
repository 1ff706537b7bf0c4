/**
 * The embedded Aedes broker (MQTT 3.1.1) on TCP and on WebSocket (own http server, paths `/mqtt` and `/`),
 * with the user directory, the publish ACL and retained messages mirrored to flat files.
 */
import net from 'node:net';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import { WebSocketServer, createWebSocketStream } from 'ws';
import type { Logger } from '../util/logger.js';
import { checkPublish, type Principal, type UserDirectory } from './auth.js';
import type { RetainedStore } from './retained-store.js';
import type { Topics } from './topics.js';

export interface BrokerOptions {
  host: string;
  port: number;
  wsPort: number;
  users: UserDirectory;
  topics: Topics;
  /** HA discovery namespace the gateway owns, when discovery is on. */
  discovery?: { prefix: string; nodePrefix: string };
  retained: RetainedStore;
  log: Logger;
}

interface RetainedPersistence {
  storeRetained(packet: { cmd: 'publish'; topic: string; payload: Buffer; qos: 0 | 1 | 2; retain: true }): Promise<void>;
}

/** A publish from a connected client that passed the ACL. */
export type ClientPublishHandler = (topic: string, payload: Buffer, principal: Principal) => void;

export interface Broker {
  readonly aedes: Aedes;
  readonly port: number;
  readonly wsPort: number;
  /** In-process publish (passes no ACL: the gateway is the owner of its topics). */
  publish(topic: string, payload: string | Buffer, opts?: { retain?: boolean; qos?: 0 | 1 }): Promise<void>;
  /** The same as `publish`, QoS 0, without a promise per message (the exporter's hot path); failures are logged. */
  send(topic: string, payload: string, retain: boolean): void;
  onClientPublish(fn: ClientPublishHandler): void;
  stats(): Record<string, unknown>;
  close(): Promise<void>;
}

const listen = (server: net.Server, port: number, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });

export async function startBroker(opts: BrokerOptions): Promise<Broker> {
  const { log, topics, users, retained } = opts;
  const principals = new WeakMap<Client, Principal>();
  const handlers: ClientPublishHandler[] = [];
  const counters = { refusedConnects: 0, refusedPublishes: 0, published: 0, clientPublishes: 0, outboxDropped: 0 };

  const aedes = await Aedes.createBroker({
    id: 'shadowgate',
    authenticate(client, username, password, done) {
      users.authenticate(username, password).then(
        (principal) => {
          if (principal) {
            principals.set(client, principal);
            done(null, true);
            return;
          }
          counters.refusedConnects++;
          // AuthErrorCode is a const enum that does not exist at runtime (packages.md §5): 4 = bad user name or password.
          const err = new Error('bad user name or password') as AuthenticateError;
          err.returnCode = 4 as AuthenticateError['returnCode'];
          done(err, false);
        },
        (err: unknown) => {
          log.error({ err }, 'mqtt authenticate failed');
          const e = new Error('server unavailable') as AuthenticateError;
          e.returnCode = 3 as AuthenticateError['returnCode'];
          done(e, false);
        },
      );
    },
    authorizePublish(client, packet, cb) {
      if (!client) return cb(null);
      let reason: string | null;
      if (packet.topic.startsWith('$SYS')) reason = '$SYS topics are reserved';
      else reason = checkPublish(principals.get(client) ?? { kind: 'anonymous' }, packet.topic, topics, opts.discovery);
      if (reason) {
        counters.refusedPublishes++;
        log.warn({ client: client.id, topic: packet.topic, reason }, 'mqtt publish refused');
        // MQTT 3.1.1 has no negative PUBACK: aedes closes the connection, which is what the client sees.
        return cb(new Error(reason));
      }
      cb(null);
    },
  });

  // Not in aedes' typings; the memory persistence applies storeRetained synchronously, in call order.
  const persistence = (aedes as unknown as { persistence: RetainedPersistence }).persistence;

  aedes.on('publish', (packet, client) => {
    if (packet.topic.startsWith('$SYS')) return;
    // A publish without a client is the gateway's own (bridge state): rebuilt at start, its payload is not kept.
    if (packet.retain) retained.record(packet.topic, Buffer.from(packet.payload), packet.qos, !client);
    if (!client) return;
    counters.clientPublishes++;
    const principal = principals.get(client) ?? { kind: 'anonymous' };
    for (const h of handlers) {
      try {
        h(packet.topic, Buffer.from(packet.payload), principal);
      } catch (err) {
        log.error({ err, topic: packet.topic }, 'mqtt publish handler failed');
      }
    }
  });
  aedes.on('clientError', (client, err) => log.debug({ client: client.id, err: err.message }, 'mqtt client error'));

  const outbox = new Outbox(aedes, counters);
  // Aedes stores a retained publish asynchronously before delivering it, while a plain publish is
  // delivered at once; its per-client dedupe (by broker counter) then drops the retained one that
  // arrives second. So the gateway stores retained messages itself, synchronously and in order,
  // and delivers them live like any other publish (live delivery clears the retain flag anyway).
  const storeRetained = (topic: string, buf: Buffer, qos: 0 | 1): void => {
    persistence.storeRetained({ cmd: 'publish', topic, payload: buf, qos, retain: true }).catch((err: unknown) =>
      log.error({ err, topic }, 'retained store failed'));
    retained.record(topic, buf, qos, true);
  };
  const onSendDone = (err: Error | undefined, topic: string): void => {
    if (err) log.error({ err, topic }, 'mqtt publish failed');
  };
  const tcp = net.createServer((socket) => aedes.handle(socket));
  const httpServer = http.createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket: connect with ws:// to /mqtt\n');
  });
  const wss = new WebSocketServer({ noServer: true });
  httpServer.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/mqtt' && path !== '/') {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const stream = createWebSocketStream(ws);
      stream.on('error', () => stream.destroy());
      aedes.handle(stream, req);
    });
  });

  let port: number;
  let wsPort: number;
  try {
    port = await listen(tcp, opts.port, opts.host);
    wsPort = await listen(httpServer, opts.wsPort, opts.host);
  } catch (err) {
    tcp.close();
    httpServer.close();
    await new Promise<void>((r) => aedes.close(() => r()));
    throw err;
  }
  log.info({ port, wsPort }, 'mqtt broker listening');

  return {
    aedes,
    port,
    wsPort,
    publish(topic, payload, o = {}) {
      counters.published++;
      const buf = typeof payload === 'string' ? Buffer.from(payload) : payload;
      const qos = o.qos ?? 0;
      if (o.retain) storeRetained(topic, buf, qos);
      return new Promise((resolve, reject) => outbox.push(topic, buf, qos, (err) => (err ? reject(err) : resolve())));
    },
    send(topic, payload, retain) {
      counters.published++;
      const buf = Buffer.from(payload);
      if (retain) storeRetained(topic, buf, 0);
      outbox.push(topic, buf, 0, onSendDone);
    },
    onClientPublish(fn) {
      handlers.push(fn);
    },
    stats: () => ({ ...counters, outboxPending: outbox.pending, clients: aedes.connectedClients, retained: retained.size, retainedFileWrites: retained.writes, tcpPort: port, wsPort }),
    async close() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await new Promise<void>((r) => aedes.close(() => r()));
      await Promise.all([
        new Promise<void>((r) => tcp.close(() => r())),
        new Promise<void>((r) => {
          httpServer.closeAllConnections();
          httpServer.close(() => r());
        }),
      ]);
    },
  };
}

// Aedes' emitter recurses when many in-process publishes are queued at once (a burst of 100k changes
// overflowed the stack in a bench), so the gateway keeps at most MAX_INFLIGHT publishes inside aedes and
// queues the rest here, in order, bounded: past MAX_PENDING the oldest waiting message is dropped and counted.
const MAX_INFLIGHT = 32;
const MAX_PENDING = 100_000;

type Done = (err: Error | undefined, topic: string) => void;

interface OutMsg {
  topic: string;
  payload: Buffer;
  qos: 0 | 1;
  done: Done;
}

class Outbox {
  private inflight = 0;
  private queue: (OutMsg | undefined)[] = [];
  private head = 0;
  private draining = false;

  constructor(private readonly aedes: Aedes, private readonly counters: { outboxDropped: number }) {}

  get pending(): number {
    return this.queue.length - this.head;
  }

  push(topic: string, payload: Buffer, qos: 0 | 1, done: Done): void {
    this.queue.push({ topic, payload, qos, done });
    if (this.pending > MAX_PENDING) {
      const old = this.queue[this.head];
      this.queue[this.head++] = undefined;
      this.counters.outboxDropped++;
      old?.done(undefined, old.topic);
    }
    this.drain();
  }

  // A loop, not recursion: aedes may call back synchronously.
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.inflight < MAX_INFLIGHT && this.pending > 0) {
        const m = this.queue[this.head]!;
        this.queue[this.head++] = undefined;
        if (this.head > 4096 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        this.inflight++;
        this.aedes.publish({ cmd: 'publish', topic: m.topic, payload: m.payload, qos: m.qos, retain: false, dup: false }, (err) => {
          this.inflight--;
          m.done(err ?? undefined, m.topic);
          this.drain();
        });
      }
    } finally {
      this.draining = false;
    }
  }
}
