/**
 * The console's files on the REST port: precompressed gzip when accepted, plain otherwise, an ETag that
 * answers 304, HEAD without a body, the API's 404 envelope for anything else; and the build's budget.
 */
import { readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';

function get(port: number, p: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method, headers, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

test('the console is served at / precompressed, with ETag/304 and HEAD; other paths stay 404 envelopes', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-static-'));
  let gw: Gateway | undefined;
  try {
    const raw = { gateway: { id: 's', data_dir: dir, log_level: 'silent' }, http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false }, buses: [], devices: [] };
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const port = gw.httpPort;
    const gz = await get(port, '/', { 'accept-encoding': 'gzip, deflate' });
    assert.is(gz.status, 200);
    assert.is(gz.headers['content-encoding'], 'gzip');
    assert.match(String(gz.headers['content-type']), /text\/html/);
    assert.match(gunzipSync(gz.body).toString(), /<script type="module" src="app.js">/);
    const plain = await get(port, '/app.js');
    assert.is(plain.headers['content-encoding'], undefined);
    assert.match(String(plain.headers['content-type']), /javascript/);
    const again = await get(port, '/app.js', { 'if-none-match': String(plain.headers.etag) });
    assert.is(again.status, 304);
    const head = await get(port, '/app.css', {}, 'HEAD');
    assert.is(head.status, 200);
    assert.is(head.body.length, 0);
    assert.ok(Number(head.headers['content-length']) > 1000);
    const missing = await get(port, '/nope.js');
    assert.is(missing.status, 404);
    assert.is(JSON.parse(missing.body.toString()).errorCode, 404);
  } finally {
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('the built console stays within 150 KB gzipped (make build fails over it too)', () => {
  const files = readdirSync('dist/console').filter((f) => f.endsWith('.gz'));
  assert.ok(files.length >= 3, `built files: ${files.join(', ')}`);
  const total = files.reduce((n, f) => n + statSync(path.join('dist/console', f)).size, 0);
  console.log(`  console: ${(total / 1024).toFixed(1)} KB gzipped`);
  assert.ok(total <= 150 * 1024, `${total} bytes`);
});

test.run();
