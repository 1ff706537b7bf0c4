import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startShadowExport, validateShadowExport } from '../../src/export/shadow-export.js';
import { startExport } from '../../src/runtime/export.js';
import { silentLogger } from '../../src/util/logger.js';
import { ownMs, stamp } from '../helpers/lateness.js';
import { collect, connectClient, endClient, makeFixture, removeDir, tempDir, waitFor } from './helpers.js';

/** A local HTTP endpoint whose behaviour each test scripts per request. */
async function endpoint(handler: (n: number, body: string, res: http.ServerResponse) => void) {
  let n = 0;
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      bodies.push(body);
      handler(++n, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`;
  const close = () => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
  return { url, bodies, close, count: () => n };
}

const deps = (over: Partial<Parameters<typeof startShadowExport>[1]> = {}) => ({
  gatewayId: 'gw1', shadowJson: () => [{ id: 'dev1' }], publishMqtt: () => {}, now: () => Date.now(),
  log: silentLogger, httpBackoff: 20, ...over,
});

test('config errors of targets are all reported at start', () => {
  assert.throws(() => validateShadowExport({ enable: true, format: 'json', interval: 0, targets: ['http', 'file', 'mqtt', 'ftp' as never] }, false),
    (err: Error) => ['interval', 'http.url', 'file.path', '"mqtt" needs mqtt.enable', 'unknown target "ftp"'].every((s) => err.message.includes(s)));
  assert.throws(() => validateShadowExport({ enable: true, format: 'json', interval: 10, targets: ['http'], http: { url: 'ftp://x', timeout: 10, queue_max: 1 } }, true), /not an http\(s\) URL/);
  validateShadowExport({ enable: false, format: 'json', interval: 0, targets: ['http'] }, false);
});

test('http target: timeout on a hung endpoint, retry with backoff, then delivery in order', async () => {
  const ep = await endpoint((n, _b, res) => {
    if (n === 1) return; // hangs: the 50 ms timeout must fire
    if (n === 2) return void res.writeHead(503).end();
    res.writeHead(204).end();
  });
  const ex = await startShadowExport({ enable: true, format: 'json', interval: 60_000, targets: ['http'], http: { url: ep.url, timeout: 50, queue_max: 10 } }, deps());
  try {
    const t0 = Date.now();
    ex.exportNow();
    ex.exportNow();
    await waitFor(() => (ex.stats().http as { sent: number }).sent === 2, 3000, 'two exports delivered');
    const s = ex.stats().http as { failures: number; dropped: number };
    assert.ok(s.failures >= 2, `failures ${s.failures}`);
    assert.is(s.dropped, 0);
    assert.ok(Date.now() - t0 >= 50 + 20 + 40, 'timeout plus two backoff delays');
    const delivered = ep.bodies.slice(-2).map((b) => JSON.parse(b));
    assert.is(delivered.length, 2);
    assert.ok(delivered[0].ts <= delivered[1].ts);
    assert.equal(delivered[0].devices, [{ id: 'dev1' }]);
    assert.is(delivered[0].gateway, 'gw1');
  } finally {
    await ex.stop();
    await ep.close();
  }
});

test('http target: a slow endpoint never blocks exports; the queue is bounded, oldest dropped', async () => {
  const ep = await endpoint((_n, _b, res) => setTimeout(() => res.writeHead(200).end(), 150));
  let seq = 0;
  const ex = await startShadowExport({ enable: true, format: 'json', interval: 60_000, targets: ['http'], http: { url: ep.url, timeout: 1000, queue_max: 3 } },
    deps({ shadowJson: () => ({ seq: ++seq }) }));
  try {
    const t0 = stamp();
    for (let i = 0; i < 20; i++) ex.exportNow();
    assert.ok(ownMs(t0, stamp()) < 50, 'exportNow returns at once'); // less any time the thread waited for a CPU
    const s = ex.stats().http as { dropped: number; queued: number };
    assert.is(s.queued, 3);
    assert.ok(s.dropped >= 16, `dropped ${s.dropped}`);
    await waitFor(() => (ex.stats().http as { queued: number }).queued === 0, 3000, 'queue drained');
    const seqs = ep.bodies.map((b) => JSON.parse(b).devices.seq);
    assert.equal(seqs.slice(-3), [18, 19, 20], 'the newest exports survive');
  } finally {
    await ex.stop();
    await ep.close();
  }
});

test('http target: an endpoint that is down is retried, and stop() ends the retries', async () => {
  const ex = await startShadowExport({ enable: true, format: 'json', interval: 60_000, targets: ['http'], http: { url: 'http://127.0.0.1:9/none', timeout: 200, queue_max: 2 } }, deps());
  ex.exportNow();
  await waitFor(() => ((ex.stats().http as { failures: number }).failures ?? 0) >= 2, 3000, 'retries');
  await ex.stop();
  const f = (ex.stats().http as { failures: number }).failures;
  await new Promise((r) => setTimeout(r, 150));
  assert.is((ex.stats().http as { failures: number }).failures, f, 'no retry after stop');
});

test('file target snapshot: one valid JSON document replaced atomically, no temp files left', async () => {
  const dir = tempDir('snap');
  const path = join(dir, 'out', 'shadow.json');
  let seq = 0;
  const ex = await startShadowExport({ enable: true, format: 'json', interval: 60_000, targets: ['file'], file: { path, mode: 'snapshot', max_size: 0 } },
    deps({ shadowJson: () => ({ seq: ++seq }) }));
  try {
    for (let i = 0; i < 5; i++) ex.exportNow();
    await ex.stop();
    const doc = JSON.parse(readFileSync(path, 'utf8'));
    assert.is(doc.devices.seq, 5);
    assert.equal(readdirSync(join(dir, 'out')), ['shadow.json']);
  } finally {
    removeDir(dir);
  }
});

test('file target append: JSON lines, rotated to .1 at max_size', async () => {
  const dir = tempDir('append');
  const path = join(dir, 'shadow.jsonl');
  let seq = 0;
  const ex = await startShadowExport({ enable: true, format: 'json', interval: 60_000, targets: ['file'], file: { path, mode: 'append', max_size: 400 } },
    deps({ shadowJson: () => ({ seq: ++seq, pad: 'x'.repeat(40) }) }));
  try {
    for (let i = 0; i < 12; i++) {
      ex.exportNow();
      await new Promise((r) => setTimeout(r, 5)); // lets each append finish (a busy writer keeps only the newest)
    }
    await ex.stop();
    assert.ok(existsSync(`${path}.1`), 'rotated');
    assert.ok(statSync(path).size <= 400 && statSync(`${path}.1`).size <= 400);
    const lines = [readFileSync(`${path}.1`, 'utf8'), readFileSync(path, 'utf8')].join('').trim().split('\n').map((l) => JSON.parse(l).devices.seq);
    assert.is(lines.at(-1), 12);
    for (let i = 1; i < lines.length; i++) assert.ok(lines[i]! > lines[i - 1]!, 'in order');
    const st = ex.stats().file as { rotations: number; written: number; skipped: number };
    assert.ok(st.rotations >= 2);
    assert.is(st.written + st.skipped, 12, 'every export written, or skipped for a newer one');
  } finally {
    removeDir(dir);
  }
});

test('mqtt target: the periodic export lands on <base>/shadow', async () => {
  const f = makeFixture({ shadowExport: { enable: true, format: 'json', interval: 50, targets: ['mqtt'] } });
  const gw = await startExport(f.ctx);
  const c = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
  try {
    const got = await collect(c, 'sg/shadow');
    await waitFor(() => got.length >= 2, 3000, 'two exports');
    const doc = JSON.parse(got[0]!.payload);
    assert.equal(doc.devices, [{ id: 'dev1', online: true }, { id: 'dev2', online: false }]);
  } finally {
    await endClient(c);
    await gw.stop();
    removeDir(f.dir);
  }
});

test.run();
