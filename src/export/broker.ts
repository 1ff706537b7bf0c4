/**
 * The embedded Aedes broker (MQTT 3.1.1) on TCP and on WebSocket (own http server, paths `/mqtt` and `/`),
 * with the user directory, the publish and subscribe ACLs, a backoff on wrong passwords per source address,
 * a bound on packet size, and retained messages mirrored to flat files.
 */
import net from 'node:net';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import { writeToStream } from 'mqtt-packet';
import { WebSocketServer, createWebSocketStream } from 'ws';
import type { Duplex } from 'node:stream';
import { FailureBackoff, sourceKey } from '../util/auth-backoff.js';
import type { Logger } from '../util/logger.js';
import { checkPublish, checkSubscribe, type Principal, type UserDirectory } from './auth.js';
import { Outbox } from './outbox.js';
import { watchPacketSizes } from './packet-limit.js';
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
  /**
   * Accepted connections wait (unread) until `admit()`: the gateway publishes every device's retained state
   * after it serves, and a client that connects meanwhile must still find all of it when its CONNACK comes.
   */
  hold?: boolean;
  /**
   * false: no TCP or WebSocket listener (`mqtt.enable: false` with a bridge): the broker only feeds the bridge
   * in-process, and no port is taken (the Mosquitto of an HA machine beside it keeps 1883).
   */
  listen?: boolean;
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
  /** Messages queued in the outbox, not yet handed to aedes (it waits for a slow subscriber's socket to drain). */
  readonly backlog: number;
  onClientPublish(fn: ClientPublishHandler): void;
  /** Hands the connections held so far to aedes and stops holding (BrokerOptions.hold). */
  admit(): void;
  stats(): Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * Largest packet a client may send (1 MiB): set commands and Home Assistant's messages are a few hundred
 * bytes; anything larger is closed before aedes buffers it (packet-limit.ts).
 */
export const MAX_CLIENT_PACKET = 1024 * 1024;

const refusal = (message: string, code: 3 | 4 | 5): AuthenticateError => {
  const err = new Error(message) as AuthenticateError;
  // AuthErrorCode is a const enum that does not exist at runtime (packages.md §5): 4 = bad user name or
  // password, 5 = not authorized, 3 = server unavailable.
  err.returnCode = code as AuthenticateError['returnCode'];
  return err;
};

/** The peer's address: the TCP socket's, or for MQTT over WebSocket the upgrade request's. */
const addressOf = (client: Client): string | undefined =>
  (client.req as { socket?: { remoteAddress?: string } } | undefined)?.socket?.remoteAddress ??
  (client.conn as { remoteAddress?: string }).remoteAddress;

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
  const counters = {
    refusedConnects: 0, throttledConnects: 0, refusedPublishes: 0, refusedSubscribes: 0, oversizedPackets: 0,
    published: 0, clientPublishes: 0, outboxDropped: 0,
  };
  const backoff = new FailureBackoff();
  /** Publishes the ACL refused: acknowledged, then dropped by the publish wrapper. */
  const dropped = new WeakSet<object>();
  const warned = new WeakSet<Client>();
  /** Every client connection, TCP or WebSocket: bounded packets, then aedes. */
  const serve = (conn: Duplex, req?: http.IncomingMessage): void => {
    aedes.handle(conn, req as never);
    watchPacketSizes(conn, MAX_CLIENT_PACKET, (announced) => {
      counters.oversizedPackets++;
      log.warn({ announced, limit: MAX_CLIENT_PACKET }, 'mqtt client closed: packet too large or malformed');
      conn.destroy();
    });
  };
  /** Connections waiting for admit(): not read (no 'data' listener yet), only guarded against an unhandled 'error'. */
  let held: { conn: Duplex; req: http.IncomingMessage | undefined }[] | null = opts.hold ? [] : null;
  const ignoreError = (): void => {};
  const handle = (conn: Duplex, req?: http.IncomingMessage): void => {
    if (!held) return serve(conn, req);
    conn.on('error', ignoreError);
    held.push({ conn, req });
  };
  const admit = (): void => {
    const waiting = held ?? [];
    held = null;
    for (const { conn, req } of waiting) {
      conn.off('error', ignoreError);
      if (!conn.destroyed) serve(conn, req);
    }
  };

  // mqtt-packet (Aedes' and the bridge's encoder) otherwise builds, at the first packet it writes, a Buffer for
  // each of the 65,536 two-byte numbers: 6.6 MB of heap, 14 MB of RSS with Node's default flags, kept for the
  // process's life, to save a 2-byte allocation per packet id and topic length.
  writeToStream.cacheNumbers = false;
  const aedes = await Aedes.createBroker({
    id: 'shadowgate',
    authenticate(client, username, password, done) {
      const source = sourceKey(addressOf(client));
      // No user name is no guess (anonymous, allowed or not): only credentials are judged in turn and counted.
      const guess = username !== undefined && username !== '';
      const judge = async (): Promise<{ principal: Principal | null; hold: number } | 'blocked'> => {
        if (guess && backoff.wait(source) > 0) return 'blocked';
        const principal = await users.authenticate(username, password);
        if (principal?.kind === 'user' && principal.canWrite) backoff.succeed(source);
        return { principal, hold: !principal && guess ? backoff.fail(source) : 0 };
      };
      (guess ? backoff.serial(source, judge) : judge()).then(
        (r) => {
          if (r === undefined || r === 'blocked') {
            counters.refusedConnects++;
            counters.throttledConnects++;
            log.warn({ client: client.id, source }, 'mqtt connect refused: too many failed attempts from this address');
            done(refusal('too many failed attempts, try again later', 5), false);
            return;
          }
          if (r.principal) {
            principals.set(client, r.principal);
            done(null, true);
            return;
          }
          counters.refusedConnects++;
          // The answer to a wrong password is held as long as the address is blocked (auth-backoff.ts).
          const answer = (): void => done(refusal('bad user name or password', 4), false);
          if (r.hold > 0) setTimeout(answer, r.hold).unref();
          else answer();
        },
        (err: unknown) => {
          log.error({ err }, 'mqtt authenticate failed');
          done(refusal('server unavailable', 3), false);
        },
      );
    },
    authorizeSubscribe(client, sub, cb) {
      const reason = client ? checkSubscribe(principals.get(client) ?? { kind: 'anonymous' }, sub.topic, topics, opts.discovery) : null;
      if (!reason) return cb(null, sub);
      counters.refusedSubscribes++;
      log.warn({ client: client?.id, topic: sub.topic, reason }, 'mqtt subscribe refused');
      // null: SUBACK 128 for this filter, the connection stays.
      cb(null, null);
    },
    authorizePublish(client, packet, cb) {
      if (!client) return cb(null);
      let reason: string | null;
      if (packet.topic.startsWith('$SYS')) reason = '$SYS topics are reserved';
      else reason = checkPublish(principals.get(client) ?? { kind: 'anonymous' }, packet.topic, topics, opts.discovery);
      if (reason) {
        counters.refusedPublishes++;
        // One line per connection: a client that keeps publishing is no longer stopped by a close.
        if (!warned.has(client)) {
          warned.add(client);
          log.warn({ client: client.id, topic: packet.topic, reason }, 'mqtt publish refused (dropped; further refusals of this client are counted, not logged)');
        }
        // MQTT 3.1.1 has no negative PUBACK: a refused publish is either acknowledged and dropped or its
        // connection closed (MQTT-3.3.5-2). Closing made Home Assistant reconnect and publish again forever,
        // so it is acknowledged as usual and never delivered (the publish wrapper below).
        dropped.add(packet);
      }
      cb(null);
    },
  });

  // aedes has no way to refuse a publish but closing its connection: authorizePublish lets the refused packet
  // through marked, aedes acknowledges it by its QoS (PUBACK, or PUBREC/PUBCOMP) and hands that same object
  // to broker.publish, which skips it: no delivery, no retained store, no 'publish' event.
  const deliver = aedes.publish.bind(aedes) as (packet: object, client: unknown, done?: (err?: Error) => void) => void;
  (aedes as unknown as { publish: typeof deliver }).publish = (packet, client, done) => {
    if (typeof client === 'function') return deliver(packet, client);
    if (dropped.has(packet)) {
      dropped.delete(packet);
      done?.();
      return;
    }
    deliver(packet, client, done);
  };

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
  // Buffer.from of a short string is a slice of a shared 8 KB slab: kept as a retained message it keeps the whole
  // slab alive as long as the topic stays retained (fleet F: 2,000 retained topics held 701 slabs, 5.5 MB).
  const unpooled = (buf: Buffer): Buffer => {
    if (buf.byteLength === buf.buffer.byteLength) return buf;
    const own = Buffer.allocUnsafeSlow(buf.byteLength);
    buf.copy(own);
    return own;
  };
  // Aedes stores a retained publish asynchronously before delivering it, while a plain publish is
  // delivered at once; its per-client dedupe (by broker counter) then drops the retained one that
  // arrives second. So the gateway stores retained messages itself, synchronously and in order,
  // and delivers them live like any other publish (live delivery clears the retain flag anyway).
  const storeRetained = (topic: string, buf: Buffer, qos: 0 | 1): void => {
    persistence.storeRetained({ cmd: 'publish', topic, payload: unpooled(buf), qos, retain: true }).catch((err: unknown) =>
      log.error({ err, topic }, 'retained store failed'));
    retained.record(topic, buf, qos, true);
  };
  /** Set when close() begins: messages still in the outbox then are dropped by design, not failures. */
  let closing = false;
  const onSendDone = (err: Error | undefined, topic: string): void => {
    if (err && closing) counters.outboxDropped++;
    else if (err) log.error({ err, topic }, 'mqtt publish failed');
  };
  const tcp = net.createServer((socket) => handle(socket));
  const httpServer = http.createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket: connect with ws:// to /mqtt\n');
  });
  // ws' own default would take 100 MiB in one frame.
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_PACKET + 16 });
  httpServer.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/mqtt' && path !== '/') {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const stream = createWebSocketStream(ws);
      stream.on('error', () => stream.destroy());
      handle(stream, req);
    });
  });

  let port = 0;
  let wsPort = 0;
  if (opts.listen === false) {
    log.info('mqtt broker without listeners (mqtt.enable is false): the bridge carries the export');
  } else {
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
  }

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
    get backlog() {
      return outbox.pending;
    },
    onClientPublish(fn) {
      handlers.push(fn);
    },
    admit,
    stats: () => ({ ...counters, outboxPending: outbox.pending, clients: aedes.connectedClients, retained: retained.size, retainedFileWrites: retained.writes, tcpPort: port, wsPort }),
    async close() {
      closing = true;
      for (const { conn } of held ?? []) conn.destroy();
      held = null;
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
