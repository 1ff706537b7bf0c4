/** Outside the handlers: 404 and 405 envelopes, 413 for bodies over the limit (without reading on), body edge cases. */
import { spawn, spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ownMs, stamp } from '../helpers/lateness.js';
import { needs } from '../helpers/peers.js';
import { assertEnvelope, call, get, postJson, rawHttp, withApi } from './helpers.js';

const requestsMissing = spawnSync('python3', ['-c', 'import requests']).status !== 0 && 'python3-requests is not installed (apt-get install python3-requests)';
const pythonTest = needs(requestsMissing, 'Python requests client');

test('unknown path → HTTP 404 envelope naming method and path', () =>
  withApi({}, async (api) => {
    for (const [method, path, msg] of [
      ['GET', '/x', 'not found: GET /x'],
      ['GET', '/api/v1/shadow/nope?id=1', 'not found: GET /api/v1/shadow/nope'],
      ['POST', '/api/v2/shadow/all', 'not found: POST /api/v2/shadow/all'],
      ['GET', '/', 'not found: GET /'],
      ['DELETE', '/api/v1', 'not found: DELETE /api/v1'],
    ] as const) {
      const r = await call(api, method, path);
      assert.equal([r.status, r.body.success, r.body.errorCode, r.body.errorMsg, r.body.data], [404, false, 404, msg, null], path);
    }
  }));

test('wrong method on a known path → HTTP 405 envelope with Allow', () =>
  withApi({}, async (api) => {
    for (const [method, path, allow] of [
      ['POST', '/api/v1/shadow/all', 'GET, HEAD'],
      ['DELETE', '/api/v1/shadow/device?id=boiler', 'GET, HEAD'],
      ['PUT', '/api/v1/device/writePoint', 'GET, POST, HEAD'],
      ['GET', '/api/v1/device/writePoints', 'POST'],
      ['PATCH', '/api/v1/device/readPoint', 'GET, HEAD'],
    ] as const) {
      const r = await call(api, method, path);
      assert.equal([r.status, r.body.errorCode], [405, 405], `${method} ${path}`);
      assert.match(r.body.errorMsg, `method not allowed: ${method}`);
      assert.is(r.headers.get('allow'), allow, `${method} ${path}`);
    }
    assert.equal(api.io.writes, []);
  }));

test('a long path is cut short in the error text', () =>
  withApi({}, async (api) => {
    const r = await get(api, `/${'a'.repeat(5000)}`);
    assert.is(r.status, 404);
    assert.ok(r.body.errorMsg.length < 300);
  }));

const head = (len?: number, extra = ''): string =>
  'POST /api/v1/device/writePoint HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
  (len === undefined ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${len}\r\n`) + extra + '\r\n';

test('Content-Length over the limit: 413 at once, before a byte of body is sent, connection closed', () =>
  withApi({}, async (api) => {
    // The body is never sent: the answer can only come from the declared length.
    const r = await rawHttp(api.port, head(5 * 1024 * 1024), { ms: 3000 });
    assert.ok(r, 'a response');
    assert.is(r!.status, 413);
    assert.is(r!.headers['connection'], 'close');
    const e = assertEnvelope(r!.body, 413, '413');
    assert.match(e.errorMsg, 'request body too large');
    assert.ok(r!.ms - r!.waitedMs < 1000, `413 took ${r!.ms} ms (${r!.waitedMs.toFixed(0)} of them waiting for a CPU)`);
    assert.is((await get(api, '/api/v1/shadow/all')).body.data.length, 3);
  }));

test('5 MB streamed (chunked, no length): 413 as soon as the limit is crossed, rest not read, server still answers', () =>
  withApi({}, async (api) => {
    const chunk = Buffer.from(`10000\r\n${'a'.repeat(0x10000)}\r\n`);
    const r = await rawHttp(api.port, head(undefined), { stream: chunk, streamBytes: 5 * 1024 * 1024, ms: 5000 });
    assert.ok(r, 'a response');
    assert.is(r!.status, 413);
    assertEnvelope(r!.body, 413, 'chunked 413');
    assert.ok(r!.ms - r!.waitedMs < 2000, `413 took ${r!.ms} ms (${r!.waitedMs.toFixed(0)} of them waiting for a CPU)`);
    assert.equal(api.io.writes, []);
    const after = await get(api, '/api/v1/shadow/all');
    assert.equal([after.status, after.body.data.length], [200, 3]);
  }));

test('413 applies whatever the route: a large body to an unknown path or without a token', () =>
  withApi({ tokens: ['t'] }, async (api) => {
    const r = await rawHttp(api.port, 'POST /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n', { ms: 8000 } /* the server now lingers up to 5 s for the declared body */);
    assert.is(r?.status, 413);
    assertEnvelope(r!.body, 413, 'unknown path');
  }));

test('the limit is http.body_limit: exactly at the limit is accepted, one byte over is 413', () =>
  withApi({ bodyLimit: 200 }, async (api) => {
    const base = JSON.stringify({ id: 'boiler', point: 'mode', value: '' });
    const at = JSON.stringify({ id: 'boiler', point: 'mode', value: 'x'.repeat(200 - base.length) });
    assert.is(Buffer.byteLength(at), 200);
    const ok = await postJson(api, '/api/v1/device/writePoint', at);
    assert.equal([ok.status, ok.body.success], [200, true]);
    const over = await postJson(api, '/api/v1/device/writePoint', `${at} `);
    assert.equal([over.status, over.body.errorCode], [413, 413]);
    // Chunked (length unknown up front) over the limit, with fetch streaming the body.
    const stream = new ReadableStream({
      start(c) { c.enqueue(new TextEncoder().encode(`${at}  `)); c.close(); },
    });
    const res = await fetch(api.url('/api/v1/device/writePoint'), {
      method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(5000),
    } as RequestInit);
    assert.is(res.status, 413);
    assertEnvelope(await res.text(), 413, 'streamed');
  }));

test('bodies that are not a JSON object, invalid JSON → 200 envelope with a clear text; other content types → 415', () =>
  withApi({}, async (api) => {
    const cases: [string, string, string | RegExp][] = [
      ['application/json', '{"id":', /^invalid JSON body: /],
      ['application/json', '[{"id":"boiler"}]', 'request body must be a JSON object'],
      ['application/json', '"boiler"', 'request body must be a JSON object'],
      ['application/json', '42', 'request body must be a JSON object'],
      ['application/json', 'null', 'request body must be a JSON object'],
      ['application/json', 'true', 'request body must be a JSON object'],
      ['text/xml', '<id>boiler</id>', /^unsupported content type: text\/xml/],
      ['text/plain', '{"id":"boiler","point":"mode","value":"x"}', /^unsupported content type: text\/plain/],
      ['multipart/form-data; boundary=x', '--x--', /^unsupported content type: multipart\/form-data/],
    ];
    for (const [type, body, msg] of cases) {
      const r = await call(api, 'POST', '/api/v1/device/writePoint', { body, headers: { 'content-type': type } });
      const status = type.startsWith('application/json') ? 200 : 415;
      assert.equal([r.status, r.body.errorCode], [status, status === 200 ? 500 : 415], body);
      if (typeof msg === 'string') assert.is(r.body.errorMsg, msg, body);
      else assert.match(r.body.errorMsg, msg, body);
    }
    assert.equal(api.io.writes, []);
  }));

test('requests Node cannot parse still get an envelope (400 / 431), and the server keeps answering', () =>
  withApi({}, async (api) => {
    const bad = await rawHttp(api.port, 'GARBAGE\r\n\r\n');
    assert.is(bad?.status, 400);
    assertEnvelope(bad!.body, 400, 'garbage');
    const huge = await rawHttp(api.port, `GET /api/v1/shadow/all HTTP/1.1\r\nHost: t\r\nX-Big: ${'b'.repeat(20000)}\r\n\r\n`);
    assert.is(huge?.status, 431);
    assertEnvelope(huge!.body, 431, 'header overflow');
    assert.is((await get(api, '/api/v1/shadow/all')).status, 200);
  }));

test('close() ends idle keep-alive connections instead of waiting for them', () =>
  withApi({}, async (api) => {
    await get(api, '/api/v1/shadow/all'); // leaves a pooled keep-alive socket in fetch's agent
    const started = stamp();
    await api.handle.close();
    // Less what this machine kept the thread from a CPU; waiting on the socket would be its 5 s keep-alive.
    assert.ok(ownMs(started, stamp()) < 1000, 'close returned quickly');
    // A second close (withApi's finally) is harmless.
  }));

test('a 4 MiB body sent whole by Node\'s http client gets the 413 envelope and no EPIPE after it (lingering close)', () =>
  withApi({}, async (api) => {
    const { Agent, request } = await import('node:http');
    const body = Buffer.alloc(4 * 1024 * 1024, 0x20); // the drain bound; loopback buffers absorb ~2 MiB anyway
    // Keep-alive, as Node's global agent: a client with "Connection: close" hangs up itself after the answer.
    const agent = new Agent({ keepAlive: true });
    try {
      for (let i = 0; i < 5; i++) {
        const got = await new Promise<{ status: number; text: string; errors: string[] }>((resolve) => {
          const errors: string[] = [];
          let status = 0;
          let text = '';
          // Done when the request has closed, so a late EPIPE counts.
          const req = request({ host: '127.0.0.1', port: api.port, path: '/api/v1/device/writePoints', method: 'POST', agent,
            headers: { 'content-type': 'application/json', 'content-length': body.length }, timeout: 8000 }, (res) => {
            status = res.statusCode ?? 0;
            res.on('data', (c: Buffer) => (text += c.toString()));
          });
          req.on('error', (e) => errors.push(e.message));
          req.on('timeout', () => req.destroy(new Error('timeout')));
          req.on('close', () => resolve({ status, text, errors }));
          req.end(body);
        });
        assert.equal(got.errors, [], `try ${i}`);
        assert.is(got.status, 413, `try ${i}`);
        assertEnvelope(got.text, 413, '413');
      }
    } finally {
      agent.destroy();
    }
  }));

pythonTest('the same with Python requests (a client that sends the whole body first)', () =>
  withApi({}, async (api) => {
    const script = [
      'import requests',
      'for i in range(3):',
      `  r = requests.post('http://127.0.0.1:${api.port}/api/v1/device/writePoints', data=b' ' * (4 * 1024 * 1024), headers={'content-type': 'application/json'}, timeout=8)`,
      "  print(r.status_code, r.json()['errorCode'])",
    ].join('\n');
    // Not spawnSync: the server under test runs on this very event loop.
    const r = await new Promise<{ status: number | null; out: string; err: string }>((resolve) => {
      const child = spawn('python3', ['-c', script], { timeout: 30_000 });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.on('close', (status) => resolve({ status, out, err }));
    });
    assert.is(r.status, 0, r.err);
    assert.is(r.out.trim(), '413 413\n413 413\n413 413');
  }));

test.run();
