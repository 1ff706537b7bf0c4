import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { attachEventStream } from '../../src/api/event-stream.js';
import { hostGuard } from '../../src/api/host-guard.js';
import { EventBus, type ShadowEvents } from '../../src/core/events.js';
import { waitFor } from '../export/helpers.js';

async function server() {
  const s = http.createServer((_q, r) => r.end('ok'));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { s, port: (s.address() as AddressInfo).port };
}

function open(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; msgs: any[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const msgs: any[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
    const t = setTimeout(() => reject(new Error('ws open timeout')), 3000);
    ws.once('open', () => {
      clearTimeout(t);
      resolve({ ws, msgs });
    });
    ws.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

test('a page of another site cannot open the stream (its Origin or Sec-Fetch-Site); the gateway\'s own page and non-browsers can', async () => {
  const bus = new EventBus<ShadowEvents>();
  const { s, port } = await server();
  const es = attachEventStream(s, bus, { authorize: () => true, hostRefused: hostGuard([]) });
  const opened: WebSocket[] = [];
  const tryOpen = (headers: Record<string, string>): Promise<boolean> =>
    open(`ws://127.0.0.1:${port}/api/v1/ws`, headers).then(({ ws }) => (opened.push(ws), true), () => false);
  try {
    assert.is(await tryOpen({ origin: 'http://evil.example' }), false, 'another origin');
    assert.is(await tryOpen({ origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site' }), false, 'cross-site');
    assert.is(await tryOpen({ origin: `http://127.0.0.1:${port}` }), true, 'same origin');
    assert.is(await tryOpen({ origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' }), true, 'same-origin');
    assert.is(await tryOpen({}), true, 'no Origin: not a browser');
    // DNS rebinding: the attacker's page is same-origin to the browser, but its name is in Host.
    assert.is(await tryOpen({ host: `evil.example:${port}`, origin: `http://evil.example:${port}`, 'sec-fetch-site': 'same-origin' }), false, 'a rebound name');
    assert.is(await tryOpen({ host: `evil.example:${port}` }), true, 'not a browser: any Host');
  } finally {
    for (const ws of opened) ws.close();
    es.close();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

test('events as JSON, device filter, and auth', async () => {
  const bus = new EventBus<ShadowEvents>();
  const { s, port } = await server();
  const es = attachEventStream(s, bus, { authorize: (req) => req.headers.authorization === 'Bearer t' });
  const auth = { authorization: 'Bearer t' };
  const clients: WebSocket[] = [];
  try {
    await assert.not.ok(await open(`ws://127.0.0.1:${port}/api/v1/ws`).then(() => true, () => false), 'no token → refused');
    const all = await open(`ws://127.0.0.1:${port}/api/v1/ws`, auth);
    const one = await open(`ws://127.0.0.1:${port}/api/v1/ws?device=b`, auth);
    clients.push(all.ws, one.ws);
    bus.emit('dataChange', { id: 'a', values: [{ name: 't', value: 1 }], time: 1_700_000_000_000 });
    bus.emit('online', { id: 'b', online: false, state: 'Offline', time: 1_700_000_000_001 });
    bus.emit('online', { id: 'b', online: true, state: 'Initializing', time: 1_700_000_000_002 });
    await waitFor(() => all.msgs.length === 3 && one.msgs.length === 2, 3000, 'messages');
    assert.equal(all.msgs[0], { type: 'dataChange', id: 'a', values: [{ name: 't', value: 1 }], time: all.msgs[0].time, ts: 1_700_000_000_000 });
    assert.match(all.msgs[0].time, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.equal(one.msgs.map((m) => [m.type, m.id]), [['offline', 'b'], ['online', 'b']]);
    assert.is(es.stats().clients, 2);
  } finally {
    for (const c of clients) c.terminate();
    es.close();
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

test('a client that does not read is dropped once its buffer passes maxBuffered', async () => {
  const bus = new EventBus<ShadowEvents>();
  const { s, port } = await server();
  const es = attachEventStream(s, bus, { authorize: () => true, maxBuffered: 64 * 1024 });
  const fast = await open(`ws://127.0.0.1:${port}/api/v1/ws`);
  const slow = await open(`ws://127.0.0.1:${port}/api/v1/ws`);
  let slowClosed = false;
  slow.ws.on('close', () => (slowClosed = true));
  // The slow peer stops reading from its socket: bytes pile up on the gateway's side.
  (slow.ws as unknown as { _socket: import('node:net').Socket })._socket.pause();
  try {
    const big = 'x'.repeat(2000);
    for (let i = 0; i < 3000 && es.stats().dropped === 0; i++) {
      bus.emit('dataChange', { id: 'a', values: [{ name: 's', value: big }], time: i });
      if (i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    assert.is(es.stats().dropped, 1, 'slow client dropped');
    assert.is(es.stats().clients, 1);
    await waitFor(() => fast.msgs.length > 100, 5000, 'fast client keeps receiving');
    (slow.ws as unknown as { _socket: import('node:net').Socket })._socket.resume();
    await waitFor(() => slowClosed, 3000, 'slow socket closed');
  } finally {
    fast.ws.terminate();
    slow.ws.terminate();
    es.close();
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

test.run();
