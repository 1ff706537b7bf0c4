/**
 * The app's route table with each route's scope (what the auth campaign checks every write route from), the
 * debug line that carries it out of a running gateway, and the transport answers outside polka: CONNECT,
 * and a parse error's answer delivered to a client still sending megabytes (lingering close).
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createApi } from '../../src/api/app.js';
import { assertEnvelope, withApi } from './helpers.js';

test('routes(): every polka route, kit routes with their path and scope, direct ones with their literal path', async () => {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (c, _e, cb) => { lines.push(String(c)); cb(); } }));
  await withApi({ tokens: ['w'], log, extraRoutes: (app) => { app.get('/metrics', (_q, r) => { r.end('m'); }); } }, async () => {
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; routes?: { method: string; path: string; access: string | null }[] }).find((l) => l.msg === 'REST routes');
    assert.ok(logged?.routes, 'the table is logged at debug level');
    const table = logged!.routes!;
    const find = (method: string, path: string) => table.find((r) => r.method === method && r.path === path);
    assert.equal(find('POST', '/api/v1/device/writePoints'), { method: 'POST', path: '/api/v1/device/writePoints', access: 'write' });
    assert.equal(find('GET', '/api/v1/device/writePoint')?.access, 'write');
    assert.equal(find('GET', '/api/v1/shadow/all')?.access, 'read');
    assert.equal(find('GET', '/metrics'), { method: 'GET', path: '/metrics', access: null });
    assert.ok(table.length >= 11);
  });
});

test('routes() is the table polka matches against: a route added later is listed', () => {
  const api = createApi({
    shadow: {} as never, io: {} as never, log: pino({ level: 'silent' }), health: () => ({ status: 'healthy', checks: {} }),
    http: { host: '127.0.0.1', port: 0, body_limit: 1024, allowed_hosts: [], auth: { tokens: [], read_tokens: [], protect_reads: false } },
    extraRoutes: (_app, kit) => kit.route('DELETE', '/new/thing', 'write', () => null),
  });
  assert.equal(api.routes().find((r) => r.path === '/api/v1/new/thing'), { method: 'DELETE', path: '/api/v1/new/thing', access: 'write' });
  assert.is(api.routes().length, (api.app as unknown as { routes: unknown[] }).routes.length);
});

/** Sends the bytes (and `streamMb` MiB more), ends, then reads to the close; `writeError`: a write failed meanwhile. */
function raw(port: number, bytes: Buffer, streamMb = 0): Promise<{ text: string; writeError: string | null }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let writeError: string | null = null;
    const timer = setTimeout(() => reject(new Error('no close in 5 s')), 5000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e: NodeJS.ErrnoException) => (writeError ??= e.code ?? e.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), writeError });
    });
    socket.once('connect', async () => {
      socket.write(bytes);
      const mb = Buffer.alloc(1 << 20, 0x61);
      for (let i = 0; i < streamMb && !socket.destroyed; i++) {
        if (!socket.write(mb)) await new Promise((r) => { socket.once('drain', r); socket.once('close', r); });
      }
      socket.end();
    });
  });
}

const bodyOf = (text: string): string => text.slice(text.indexOf('\r\n\r\n') + 4);

test('CONNECT gets a 405 envelope (Node would drop the socket unanswered)', () =>
  withApi({}, async (api) => {
    const { text } = await raw(api.port, Buffer.from('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
    assert.match(text, /^HTTP\/1\.1 405 /);
    assert.match(assertEnvelope(bodyOf(text), 405, 'CONNECT').errorMsg, /^method not allowed: CONNECT example\.com:443/);
  }));

test('a request line of 16 MB: the client can send it all (no reset under it: lingering close), then reads the 431/400 envelope', () =>
  withApi({}, async (api) => {
    for (let i = 0; i < 5; i++) {
      const { text, writeError } = await raw(api.port, Buffer.from(`GET /api/v1/shadow/all?x=`), 16);
      // Node's http client, Python requests: a failed write ends the request before the answer is read.
      assert.is(writeError, null, 'the connection was reset while the client was sending');
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]);
      assert.ok(status === 431 || status === 400, `answered: ${text.slice(0, 60) || '(nothing)'}`);
      assertEnvelope(bodyOf(text), status, 'huge request line');
    }
  }));

test.run();
