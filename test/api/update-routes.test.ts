/**
 * POST/GET /api/v1/system/update over real HTTP with a temp data_dir and a temp RAUC system.conf: a bundle is
 * streamed to disk and handed over with its size and sha256; a cut-off upload, a body that is no bundle, a
 * bundle that cannot fit, an update in progress and a system without A/B updates each leave nothing behind;
 * the status is read whatever the root side left (nothing, garbage, a real status).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/core/clock.js';
import { createUpdates } from '../../src/runtime/update-service.js';
import { silentLogger } from '../../src/util/logger.js';
import { waitFor } from '../helpers/http.js';
import { needs } from '../helpers/peers.js';
import { tmpfsUnavailable, withTmpfs } from '../helpers/tmpfs.js';
import { fakeBundle, updateSandbox } from '../helpers/update-sandbox.js';
import { call, get, withApi, type TestApi } from './helpers.js';

let dir = '';
let dataDir = '';
let systemConf = '';
const TOKEN = 'update-token-0123456789';

test.before.each(async () => {
  ({ dir, dataDir, systemConf } = await updateSandbox('sg-update-'));
});
test.after.each(async () => {
  await rm(dir, { recursive: true, force: true });
});

const updates = () => createUpdates({ dataDir, systemConf, version: '9.8.7', clock: systemClock, log: silentLogger });
const updateDir = () => path.join(dataDir, 'update');
const listUpdateDir = () => readdir(updateDir()).catch(() => [] as string[]);
const bundle = fakeBundle;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const auth = { authorization: `Bearer ${TOKEN}` };

/** POST of a bundle; the envelope as it came (an accepted bundle is HTTP 202, which call() does not take). */
async function post(api: TestApi, body: Buffer, headers: Record<string, string> = auth) {
  const res = await fetch(api.url('/api/v1/system/update'), {
    method: 'POST', body: new Uint8Array(body), headers: { 'content-type': 'application/octet-stream', ...headers }, signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as { success: boolean; errorCode: number; errorMsg: string; data: any } };
}

async function writeStatus(status: Record<string, unknown> | string): Promise<void> {
  await mkdir(updateDir(), { recursive: true });
  await writeFile(path.join(updateDir(), 'status.json'), typeof status === 'string' ? status : JSON.stringify(status));
}

test('a bundle is streamed to update/bundle.raucb and request.json says its size and sha256; GET then says checking', async () => {
  await withApi({ tokens: [TOKEN], updates: updates() }, async (api) => {
    const file = bundle(3 * 1024 * 1024 + 17);
    const r = await post(api, file);
    assert.is(r.status, 202, r.text);
    assert.is(r.body.data.state, 'checking');
    assert.is(r.body.data.request_pending, true);
    assert.is(r.body.data.running_version, '9.8.7');
    assert.equal((await listUpdateDir()).sort(), ['bundle.raucb', 'request.json']);
    assert.ok((await readFile(path.join(updateDir(), 'bundle.raucb'))).equals(file), 'the bundle as sent');
    const request = JSON.parse(await readFile(path.join(updateDir(), 'request.json'), 'utf8'));
    assert.equal({ ...request, requested_at: undefined }, { bundle: 'bundle.raucb', size: file.length, sha256: sha(file), by: 'rest', requested_at: undefined });
    assert.ok(Math.abs(Date.parse(request.requested_at) - Date.now()) < 60_000, request.requested_at);
    // A second one while the first waits for the root side: refused, the first one untouched.
    const again = await post(api, bundle(1024));
    assert.is(again.status, 409);
    assert.match(again.body.errorMsg, /handed over already/);
    assert.ok((await readFile(path.join(updateDir(), 'bundle.raucb'))).equals(file));

    // The root side took it (deleted request.json) but has not written a status yet: still checking, not the update before.
    await writeStatus({ state: 'good', message: 'the update before', updated_at: '2020-01-01T00:00:00Z' });
    await rm(path.join(updateDir(), 'request.json'));
    const taken = await get(api, '/api/v1/system/update');
    assert.equal([taken.body.data.state, taken.body.data.request_pending], ['checking', false]);
    await writeStatus({ state: 'installing', progress: 42, message: 'installing 1.2.3', updated_at: new Date(Date.now() + 1000).toISOString(), booted_slot: 'A', slot: 'B', to_version: '1.2.3' });
    const installing = await get(api, '/api/v1/system/update');
    assert.equal([installing.body.data.state, installing.body.data.progress, installing.body.data.slot, installing.body.data.booted_slot], ['installing', 42, 'B', 'A']);
    const busy = await post(api, bundle(1024));
    assert.is(busy.status, 409);
    assert.match(busy.body.errorMsg, /an update is in progress \(installing 42%\)/);
    // On trial, an install would overwrite the slot the trial falls back to.
    await writeStatus({ state: 'trial', message: 'booted 1.2.3 for a trial', updated_at: new Date(Date.now() + 2000).toISOString(), booted_slot: 'B', slot: 'B', to_version: '1.2.3' });
    const onTrial = await post(api, bundle(1024));
    assert.is(onTrial.status, 409);
    assert.match(onTrial.body.errorMsg, /an update is in progress \(trial\)/);
  });
});

test('an upload cut off mid-body leaves no request and no part file', async () => {
  await withApi({ updates: updates() }, async (api) => {
    const req = http.request({ port: api.port, host: '127.0.0.1', method: 'POST', path: '/api/v1/system/update', headers: { 'content-type': 'application/octet-stream', 'content-length': 64 * 1024 * 1024 } });
    req.on('error', () => {});
    req.write(bundle(4 * 1024 * 1024));
    // The part file grows: the body is on its way to disk.
    await waitFor(async () => (await listUpdateDir()).includes('bundle.raucb.part'), 5000, 'the part file');
    req.destroy();
    await waitFor(async () => (await listUpdateDir()).length === 0, 5000, 'the part file removed');
    assert.equal(await listUpdateDir(), []);
    const after = await get(api, '/api/v1/system/update');
    assert.is(after.body.data.state, 'idle');
    // The same bundle sent whole afterwards is taken: nothing of the cut-off one is in the way.
    assert.is((await post(api, bundle(1024), {})).status, 202);
  });
});

test('a body that is no RAUC bundle is refused with 400 and nothing is written', async () => {
  await withApi({ updates: updates() }, async (api) => {
    const tgz = await post(api, Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), randomBytes(100_000)]), {});
    assert.is(tgz.status, 400);
    assert.match(tgz.body.errorMsg, /not a RAUC update bundle/);
    const empty = await post(api, Buffer.alloc(0), {});
    assert.is(empty.status, 400);
    assert.match(empty.body.errorMsg, /empty/);
    const json = await call(api, 'POST', '/api/v1/system/update', { body: '{"file":"x"}', headers: { 'content-type': 'application/json' } });
    assert.is(json.body.success, false);
    assert.match(json.body.errorMsg, /send the \.raucb file itself/);
    assert.equal(await listUpdateDir(), []);
  });
});

const why = tmpfsUnavailable();
const rootTest = needs(why, 'update bundle larger than the free space');

/** POST over node:http: `declared` as Content-Length, or chunked without one; the answer as it came. */
function postRaw(api: TestApi, body: Buffer, declared: number | undefined): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/octet-stream', ...(declared !== undefined ? { 'content-length': declared } : {}) };
    const req = http.request({ port: api.port, host: '127.0.0.1', method: 'POST', path: '/api/v1/system/update', headers }, (r) => {
      let text = '';
      r.on('data', (d: Buffer) => (text += d.toString()));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer')));
    if (declared === undefined) req.end(body);
    else req.write(body);
  });
}

rootTest('a bundle larger than the free space of data_dir less 32 MB is refused, announced or not; one that fits is taken', async () => {
  // 48 MB of tmpfs: 16 MB may be used.
  await withTmpfs('48m', async (small) => {
    dataDir = small;
    await withApi({ updates: updates() }, async (api) => {
      const announced = await postRaw(api, bundle(1024), 20 * 1024 * 1024);
      assert.is(announced.status, 413, announced.text);
      assert.match(JSON.parse(announced.text).errorMsg, /the bundle \(20\.0 MB\) does not fit: 1\d\.\d MB may be used in .*free space less 32\.0 MB/);
      const chunked = await postRaw(api, bundle(20 * 1024 * 1024), undefined);
      assert.is(chunked.status, 413, chunked.text);
      assert.equal(await listUpdateDir(), []);
      const fits = bundle(10 * 1024 * 1024);
      const taken = await postRaw(api, fits, undefined);
      assert.is(taken.status, 202, taken.text);
      assert.is(JSON.parse(await readFile(path.join(updateDir(), 'request.json'), 'utf8')).sha256, sha(fits));
    });
  });
});

test('without RAUC\'s system.conf: a clear refusal, nothing written; GET says available false', async () => {
  await rm(systemConf);
  await withApi({ updates: updates() }, async (api) => {
    const r = await post(api, bundle(4096), {});
    assert.is(r.status, 501);
    assert.match(r.body.errorMsg, /A\/B system updates are not available on this system \(no .*system\.conf\).*install\.sh/);
    assert.equal(await listUpdateDir(), []);
    const status = await get(api, '/api/v1/system/update');
    assert.equal([status.body.data.available, status.body.data.state], [false, 'idle']);
  });
});

test('with a token set: an upload without it is 401 and nothing is written; the status is a read', async () => {
  await withApi({ tokens: [TOKEN], updates: updates() }, async (api) => {
    const r = await post(api, bundle(4096), {});
    assert.is(r.status, 401);
    assert.equal(await listUpdateDir(), []);
    assert.is((await post(api, bundle(4096), { authorization: 'Bearer wrong-token-xyz' })).status, 401);
    assert.is((await get(api, '/api/v1/system/update')).body.data.available, true);
  });
});

test('GET reads whatever status the root side left: none, garbage, an unknown state, a real one', async () => {
  await withApi({ updates: updates() }, async (api) => {
    const missing = (await get(api, '/api/v1/system/update')).body.data;
    assert.equal([missing.available, missing.state, missing.running_version], [true, 'idle', '9.8.7']);
    assert.match(missing.message, /no update has been installed/);
    await writeStatus('{"state": "installing", "progr');
    const garbage = (await get(api, '/api/v1/system/update')).body.data;
    assert.equal([garbage.state, garbage.progress], ['unknown', null]);
    assert.match(garbage.message, /not JSON/);
    await writeStatus('[1,2]');
    assert.is((await get(api, '/api/v1/system/update')).body.data.state, 'unknown');
    await writeStatus({ state: 'exploded', progress: 'lots' });
    const odd = (await get(api, '/api/v1/system/update')).body.data;
    assert.equal([odd.state, odd.progress], ['unknown', null]);
    assert.match(odd.message, /unknown state "exploded"/);
    const failed = {
      state: 'failed', progress: null, message: 'version 2.0.0 did not become healthy within 180 s; back on version 1.0.0 (slot A)',
      from_version: '1.0.0', to_version: '2.0.0', slot: 'B', booted_slot: 'A', updated_at: '2026-01-02T03:04:05Z',
    };
    await writeStatus(failed);
    const real = (await get(api, '/api/v1/system/update')).body.data;
    assert.equal(real, { available: true, running_version: '9.8.7', ...failed, request_pending: false });
    // A failed update is over: the next one is taken.
    assert.is((await post(api, bundle(2048), {})).status, 202);
  });
});

test('a slow upload outlives the server\'s limit on a whole request\'s time', async () => {
  await withApi({ updates: updates(), requestTimeoutMs: 300 }, async (api) => {
    const file = bundle(64 * 1024);
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request({ port: api.port, host: '127.0.0.1', method: 'POST', path: '/api/v1/system/update', headers: { 'content-type': 'application/octet-stream', 'content-length': file.length } }, (r) => {
        let text = '';
        r.on('data', (d: Buffer) => (text += d.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.setTimeout(10_000, () => req.destroy(new Error('no answer')));
      void (async () => {
        // 8 pieces 200 ms apart: 1.6 s, over five times the 300 ms limit.
        for (let i = 0; i < 8; i++) {
          req.write(file.subarray(i * 8192, (i + 1) * 8192));
          await new Promise((r) => setTimeout(r, 200));
        }
        req.end();
      })();
    });
    assert.is(res.status, 202, res.text);
    assert.is(JSON.parse(await readFile(path.join(updateDir(), 'request.json'), 'utf8')).sha256, sha(file));
  });
});

test.run();
