/// <reference lib="dom" />
/**
 * Browser safety without tokens, in Chromium: a page on another origin (a second small server) tries to
 * write to a gateway that has no token — fetch POST as text/plain and as JSON, form POSTs (text/plain JSON
 * and url-encoded fields, to writePoint and to /config) and an `<img>` on the seed's GET writePoint — and
 * nothing changes in the shadow or the config. The same requests from the gateway's own page succeed, so
 * the check is not vacuous. Both "another site" (another host name) and "same site, another port".
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { browserUnavailable, CHROMIUM } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'cross-site browser tests');

/** The attacker's page: every kind of write a page can make without the gateway's consent. */
const attackPage = (gw: string): string => `<!doctype html><html><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="f1" method="POST" action="${gw}/api/v1/device/writePoint" enctype="text/plain" target="sink1">
  <input name='{"id":"t1","point":"setpoint","value":99,"pad":"' value='"}'></form>
<form id="f2" method="POST" action="${gw}/api/v1/device/writePoint" target="sink2">
  <input name="id" value="t1"><input name="point" value="setpoint"><input name="value" value="98"></form>
<form id="f3" method="POST" action="${gw}/api/v1/config" enctype="text/plain" target="sink3">
  <input name='{"devices":[],"pad":"' value='"}'></form>
<script>
const gw = ${JSON.stringify(gw)};
const body = JSON.stringify({ id: 't1', point: 'setpoint', value: 97 });
const settle = (p) => p.then(() => 'sent', (e) => 'failed: ' + e.message);
const img = new Promise((resolve) => {
  const i = new Image();
  i.onload = i.onerror = () => resolve('img done');
  i.src = gw + '/api/v1/device/writePoint?id=t1&point=setpoint&value=96';
});
const frames = ['sink1', 'sink2', 'sink3'].map((n) => new Promise((resolve) => {
  document.querySelector('iframe[name=' + n + ']').addEventListener('load', () => resolve(n + ' loaded'), { once: true });
}));
for (const f of ['f1', 'f2', 'f3']) document.getElementById(f).submit();
window.results = Promise.all([
  settle(fetch(gw + '/api/v1/device/writePoint', { method: 'POST', body })),
  settle(fetch(gw + '/api/v1/device/writePoint', { method: 'POST', body, mode: 'no-cors', headers: { 'content-type': 'application/json' } })),
  settle(fetch(gw + '/api/v1/device/writePoints', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 't1', values: [{ name: 'setpoint', value: 95 }] }) })),
  settle(fetch(gw + '/api/v1/config', { method: 'POST', body: JSON.stringify({ devices: [] }) })),
  img, ...frames,
]);
</script></body></html>`;

function rawConfig(dir: string): Record<string, unknown> {
  return {
    gateway: { id: 'xsite', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      thermo: { points: [{ name: 'setpoint', type: 'float', access: 'RW', unit: '°C', sim: { fn: 'constant', value: 21.5 } }] },
    },
    devices: [{ id: 't1', model: 'thermo', bus: 'sim', poll: '200ms' }],
  };
}

let browser: Browser | undefined;
let gw: Gateway | undefined;
let attacker: http.Server | undefined;
let dir = '';

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-xsite-'));
  const raw = rawConfig(dir);
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  const gwUrl = `http://127.0.0.1:${gw.httpPort}`;
  attacker = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(attackPage(gwUrl));
  });
  await new Promise<void>((resolve) => attacker!.listen(0, '127.0.0.1', resolve));
  // evil.test resolves to this machine: a page of another site that can reach the gateway (a LAN address).
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--host-resolver-rules=MAP evil.test 127.0.0.1'], timeout: 30_000 });
}));
test.after(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
  await gw?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const setpoint = (): unknown => gw!.shadow.GetDevicePoint('t1', 'setpoint');

for (const [name, host] of [['another site (evil.test)', 'evil.test'], ['same site, another port (127.0.0.1)', '127.0.0.1']] as const) {
  browserTest(`a page of ${name} cannot write to a gateway without token: fetch, form POSTs, <img>; nothing changes`, async () => {
    await waitFor(() => setpoint() === 21.5, 5000, 'first poll');
    const versions = (await call<unknown[]>(gw!.httpPort, '/api/v1/config/versions')).body.data!.length;
    const page = await browser!.newPage();
    page.setDefaultTimeout(8000);
    // Every answer the gateway gave to this page: the requests did reach it, and were refused.
    const answers: string[] = [];
    page.on('response', (r) => {
      const u = new URL(r.url());
      if (u.port === String(gw!.httpPort)) answers.push(`${r.request().method()} ${u.pathname} ${r.status()}`);
    });
    page.on('requestfailed', (r) => {
      const u = new URL(r.url());
      if (u.port === String(gw!.httpPort)) answers.push(`${r.method()} ${u.pathname} failed ${r.failure()?.errorText}`);
    });
    try {
      await page.goto(`http://${host}:${(attacker!.address() as AddressInfo).port}/`);
      const results = await page.evaluate(() => (window as unknown as { results: Promise<string[]> }).results);
      assert.is(results.length, 8, results.join('; '));
      // Give the gateway a poll cycle: a write that went through would show by now.
      await new Promise((r) => setTimeout(r, 600));
      assert.is(setpoint(), 21.5, `setpoint after the attacks; answers: ${answers.join(', ')}`);
      assert.is((await call<unknown[]>(gw!.httpPort, '/api/v1/config/versions')).body.data!.length, versions, 'config versions');
      assert.is((await call<{ id: string }[]>(gw!.httpPort, '/api/v1/devices')).body.data!.length, 1, 'devices');
      // The text/plain fetch and the forms reached the gateway and got 403; the image's answer came back too
      // (Chromium then hides it from the page: ORB, as it would a 200 — the write would already be done).
      for (const a of ['POST /api/v1/device/writePoint 403', 'POST /api/v1/config 403']) {
        assert.ok(answers.includes(a), `${a} in ${answers.join(', ')}`);
      }
      assert.ok(answers.some((a) => /^GET \/api\/v1\/device\/writePoint (403|failed net::ERR_BLOCKED_BY_ORB)$/.test(a)), answers.join(', '));
      assert.not.ok(answers.some((a) => / 200$/.test(a)), answers.join(', '));
    } finally {
      await page.close();
    }
  });
}

browserTest('the gateway\'s own page writes with the same requests (JSON fetch and <img>), and a typed URL works', async () => {
  const base = `http://127.0.0.1:${gw!.httpPort}`;
  const page = await browser!.newPage();
  page.setDefaultTimeout(8000);
  try {
    await page.goto(`${base}/`);
    const r = await page.evaluate(async () => {
      const res = await fetch('/api/v1/device/writePoint', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 't1', point: 'setpoint', value: 23 }) });
      return (await res.json()) as { success: boolean };
    });
    assert.is(r.success, true);
    await waitFor(() => setpoint() === 23, 3000, 'same-origin write');
    await page.evaluate(() => new Promise((resolve) => {
      const i = new Image();
      i.onload = i.onerror = resolve;
      i.src = '/api/v1/device/writePoint?id=t1&point=setpoint&value=24';
    }));
    await waitFor(() => setpoint() === 24, 3000, 'same-origin <img> write');
    await page.goto(`${base}/api/v1/device/writePoint?id=t1&point=setpoint&value=25`);
    await waitFor(() => setpoint() === 25, 3000, 'typed URL');
  } finally {
    await page.close();
  }
});

test.run();
