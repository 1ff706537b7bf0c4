/**
 * Browser safety without tokens: requests from another site's page (by Sec-Fetch-Site or Origin) cannot
 * write or read secrets; the gateway's own pages, typed URLs and clients that are not browsers (curl: no
 * Origin, no Sec-Fetch-Site) keep working. Real HTTP with the headers a browser sends.
 */
import { request } from 'node:http';
import os from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { crossSiteReason } from '../../src/api/site.js';
import { assertEnvelope, withApi } from './helpers.js';

interface Got { status: number; body: ReturnType<typeof assertEnvelope> }

/** node:http (fetch would not let a test set Origin or Host); every reply checked as an envelope. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 5000 }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: assertEnvelope(text, res.statusCode ?? 0, `${method} ${path}`) }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.on('error', reject);
    req.end(body);
  });
}

const CROSS = { 'sec-fetch-site': 'cross-site', origin: 'http://evil.example' };
const WRITE = '{"id":"boiler","point":"mode","value":"hacked"}';

test('cross-site writes are 403 in the envelope and change nothing: fetch POST (JSON and text/plain), form POST, <img> GET writePoint', () =>
  withApi({}, async (api) => {
    const tries: [string, string, Record<string, string>, string | undefined][] = [
      ['POST', '/api/v1/device/writePoint', { ...CROSS, 'content-type': 'text/plain;charset=UTF-8' }, WRITE],
      ['POST', '/api/v1/device/writePoint', { ...CROSS, 'content-type': 'application/json' }, WRITE],
      ['POST', '/api/v1/device/writePoints', { ...CROSS, 'content-type': 'application/x-www-form-urlencoded' }, 'id=boiler&point=mode&value=x'],
      ['GET', '/api/v1/device/writePoint?id=boiler&point=mode&value=hacked', { 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'image', 'sec-fetch-mode': 'no-cors' }, undefined],
      // Another port of the same address is another origin (same-site): another web app on the box.
      ['GET', '/api/v1/device/writePoint?id=boiler&point=mode&value=hacked', { 'sec-fetch-site': 'same-site', 'sec-fetch-dest': 'image' }, undefined],
      // An older browser without Sec-Fetch-*: Origin alone decides.
      ['POST', '/api/v1/device/writePoint', { origin: 'http://evil.example', 'content-type': 'text/plain' }, WRITE],
      ['POST', '/api/v1/device/writePoint', { origin: 'null', 'content-type': 'application/x-www-form-urlencoded' }, 'id=boiler&point=mode&value=x'],
      ['PUT', '/api/v1/no/such/route', { ...CROSS }, undefined],
      ['DELETE', '/api/v1/config/device?id=boiler', { ...CROSS }, undefined],
    ];
    for (const [method, path, headers, body] of tries) {
      const r = await send(api.port, method, path, headers, body);
      assert.is(r.status, 403, `${method} ${path} ${JSON.stringify(headers)}`);
      assert.match(r.body.errorMsg, /^cross-site request refused: /);
    }
    assert.equal(api.io.writes, []);
    assert.is(api.shadow.GetDevicePoint('boiler', 'mode'), null);
  }));

test('the gateway\'s own pages, typed URLs and curl keep writing; the console by IP or by name, on any port', () =>
  withApi({ allowedHosts: ['gateway.local'] }, async (api) => {
    const host = `127.0.0.1:${api.port}`;
    const ok: [string, string, Record<string, string>, string | undefined][] = [
      // curl / scripts: no Origin, no Sec-Fetch-Site (the seed's GET writePoint included).
      ['GET', '/api/v1/device/writePoint?id=boiler&point=mode&value=a', {}, undefined],
      ['POST', '/api/v1/device/writePoint', { 'content-type': 'application/json' }, WRITE],
      // curl -d labels JSON as a form; Python requests sends no type: still JSON for non-browsers.
      ['POST', '/api/v1/device/writePoint', { 'content-type': 'application/x-www-form-urlencoded' }, WRITE],
      ['POST', '/api/v1/device/writePoint', {}, WRITE],
      // The console (Chromium): same-origin; typed in the address bar: none.
      ['POST', '/api/v1/device/writePoint', { 'sec-fetch-site': 'same-origin', origin: `http://${host}`, 'content-type': 'application/json' }, WRITE],
      ['GET', '/api/v1/device/writePoint?id=boiler&point=mode&value=b', { 'sec-fetch-site': 'none', 'sec-fetch-dest': 'document' }, undefined],
      // A browser without Sec-Fetch-*, console opened by name (Host and Origin both name it), or by IP on port 80.
      ['POST', '/api/v1/device/writePoint', { host: 'gateway.local:8081', origin: 'http://gateway.local:8081', 'content-type': 'application/json' }, WRITE],
      ['POST', '/api/v1/device/writePoint', { host: '192.168.1.20', origin: 'http://192.168.1.20', 'content-type': 'application/json' }, WRITE],
      ['POST', '/api/v1/device/writePoint', { host: 'GATEWAY.local', origin: 'https://gateway.local', 'content-type': 'application/json' }, WRITE],
    ];
    for (const [method, path, headers, body] of ok) {
      const r = await send(api.port, method, path, headers, body);
      assert.equal([r.status, r.body.success], [200, true], `${method} ${path} ${JSON.stringify(headers)}`);
    }
    assert.is(api.io.writes.length, ok.length);
  }));

test('Origin naming another host than the one asked (by IP vs by name, another port) is refused', () =>
  withApi({ allowedHosts: ['gateway.local'] }, async (api) => {
    for (const [host, origin] of [
      ['192.168.1.20:8081', 'http://gateway.local:8081'],
      ['gateway.local:8081', 'http://gateway.local:8080'],
      ['gateway.local', 'http://gateway.local:8081'],
      ['gateway.local:8081', 'file://'],
    ] as const) {
      const r = await send(api.port, 'POST', '/api/v1/device/writePoint', { host, origin, 'content-type': 'application/json' }, WRITE);
      assert.is(r.status, 403, `${host} ${origin}`);
    }
    assert.equal(api.io.writes, []);
  }));

test('DNS rebinding: a browser\'s request under a Host that is not the gateway\'s is refused on every route; curl, IPs, hostname.local and allowed_hosts are served', () =>
  withApi({ allowedHosts: ['gateway.lan', '*.home.arpa'] }, async (api) => {
    // The attacker's page, now resolving to the gateway: same-origin to the browser, the attacker's name in Host.
    const page = { host: `evil.example:${api.port}`, origin: `http://evil.example:${api.port}`, 'sec-fetch-site': 'same-origin' };
    for (const [method, path, body] of [
      ['GET', '/api/v1/shadow/all', undefined],
      ['GET', '/api/v1/device/writePoint?id=boiler&point=mode&value=hacked', undefined],
      ['POST', '/api/v1/device/writePoint', WRITE],
      ['GET', '/', undefined],
    ] as const) {
      const r = await send(api.port, method, path, { ...page, 'content-type': 'application/json' }, body);
      assert.is(r.status, 403, `${method} ${path}`);
      assert.match(r.body.errorMsg, /^Host evil\.example:\d+ is not a name of this gateway .*http\.allowed_hosts$/);
    }
    // An older browser sends Origin only, a top-level navigation Sec-Fetch-Site: none: both are browsers.
    assert.is((await send(api.port, 'GET', '/api/v1/shadow/all', { host: 'evil.example', 'sec-fetch-site': 'none' })).status, 403);
    assert.equal(api.io.writes, []);
    const served: Record<string, string>[] = [
      { host: 'evil.example' }, // curl, a script, Home Assistant: no browser, no rebinding victim
      { host: `[::1]:${api.port}`, 'sec-fetch-site': 'same-origin' },
      { host: `localhost:${api.port}`, 'sec-fetch-site': 'none' },
      { host: `${os.hostname()}.local:${api.port}`, 'sec-fetch-site': 'same-origin' },
      { host: `Gateway.LAN:${api.port}`, 'sec-fetch-site': 'same-origin' },
      { host: 'pi.home.arpa', 'sec-fetch-site': 'same-origin' },
    ];
    for (const headers of served) assert.is((await send(api.port, 'GET', '/api/v1/shadow/all', headers)).status, 200, JSON.stringify(headers));
  }));

test('a browser\'s JSON goes as application/json only: text/plain is 415, a form or untyped JSON body from a page 415', () =>
  withApi({}, async (api) => {
    const same = { 'sec-fetch-site': 'same-origin' };
    for (const [headers, body] of [
      [{ ...same, 'content-type': 'text/plain;charset=UTF-8' }, WRITE],
      [{ 'content-type': 'text/plain' }, WRITE],
      [{ ...same, 'content-type': 'application/x-www-form-urlencoded' }, WRITE],
      [{ ...same }, WRITE],
    ] as const) {
      const r = await send(api.port, 'POST', '/api/v1/device/writePoint', headers, body);
      assert.equal([r.status, r.body.errorCode], [415, 415], JSON.stringify(headers));
      assert.match(r.body.errorMsg, /^unsupported content type/);
    }
    // A real form's fields from the console's own page still work.
    const form = await send(api.port, 'POST', '/api/v1/device/writePoint', { ...same, 'content-type': 'application/x-www-form-urlencoded' }, 'id=boiler&point=mode&value=f');
    assert.is(form.body.success, true);
    assert.equal(api.io.writes.map((w) => w.values[0]!.value), ['f']);
  }));

test('reads of secrets (config with tokens) are refused cross-site; plain reads stay open (no CORS: a page cannot read them)', () =>
  withApi({ config: {
    current: () => ({ http: { auth: { tokens: ['secret-token'] } } }), validate: () => ({ valid: true, errors: [] }),
    apply: async () => ({ version: 1, changes: [], restartRequired: [] }), versions: async () => [], rollback: async () => ({ version: 1, changes: [], restartRequired: [] }),
    putDevice: async () => ({ version: 1, changes: [], restartRequired: [] }), deleteDevice: async () => ({ version: 1, changes: [], restartRequired: [] }),
    putBus: async () => ({ version: 1, changes: [], restartRequired: [] }), deleteBus: async () => ({ version: 1, changes: [], restartRequired: [] }),
    models: () => [], devices: () => [], scan: async () => [], testRead: async () => ({ values: {}, errors: {}, unavailable: {}, points: [], summary: { points: 0, ok: 0, implausible: 0, not_available: 0, failed: 0 } }),
  } }, async (api) => {
    const cross = await send(api.port, 'GET', '/api/v1/config', { 'sec-fetch-site': 'cross-site' });
    assert.is(cross.status, 403);
    const own = await send(api.port, 'GET', '/api/v1/config', { 'sec-fetch-site': 'same-origin' });
    assert.is(own.status, 200);
    const curl = await send(api.port, 'GET', '/api/v1/config/versions', {});
    assert.is(curl.status, 200);
    const read = await send(api.port, 'GET', '/api/v1/shadow/all', { 'sec-fetch-site': 'cross-site' });
    assert.is(read.status, 200);
  }));

test('crossSiteReason: Sec-Fetch-Site wins over Origin; malformed Origin or Host refused', () => {
  const r = (headers: Record<string, string>): string | null => crossSiteReason({ headers } as never);
  assert.is(r({ 'sec-fetch-site': 'same-origin', origin: 'http://other', host: 'me' }), null);
  assert.ok(r({ 'sec-fetch-site': 'cross-site', origin: 'http://me', host: 'me' }));
  assert.ok(r({ origin: 'http://me', host: 'me:bad:port' }));
  assert.ok(r({ origin: 'not a url', host: 'me' }));
  assert.is(r({ origin: 'http://[::1]:8081', host: '[::1]:8081' }), null);
  assert.is(r({ host: 'me' }), null);
});

test.run();
