/** Bearer-token auth: writes need a token when tokens are set, reads too with protect_reads, open without tokens. */
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call, get, postJson, withApi } from './helpers.js';

const WRITE = '/api/v1/device/writePoint?id=boiler&point=setpoint&value=21';

test('no tokens configured: writes and reads are open', () =>
  withApi({}, async (api) => {
    assert.is((await get(api, WRITE)).body.success, true);
    assert.is((await get(api, '/api/v1/shadow/all')).body.success, true);
  }));

test('tokens set: write without token → 401 envelope with WWW-Authenticate, nothing written', () =>
  withApi({ tokens: ['s3cret-token', 'second'] }, async (api) => {
    for (const r of [
      await get(api, WRITE),
      await call(api, 'POST', WRITE),
      await postJson(api, '/api/v1/device/writePoints', { id: 'boiler', values: [{ name: 'setpoint', value: 1 }] }),
    ]) {
      assert.equal([r.status, r.body.success, r.body.errorCode], [401, false, 401]);
      assert.match(r.body.errorMsg, 'Bearer');
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer\b/);
    }
    assert.equal(api.io.writes, []);
  }));

test('tokens set: a wrong token or a wrong scheme → 401; the right one (either token, any case of "Bearer") works', () =>
  withApi({ tokens: ['s3cret-token', 'second'] }, async (api) => {
    for (const header of ['Bearer nope', 'Bearer s3cret-toke', 'Bearer s3cret-token-and-more', 'Basic czNjcmV0LXRva2Vu', 's3cret-token', 'Bearer ']) {
      const r = await get(api, WRITE, { authorization: header });
      assert.equal([r.status, r.body.errorCode], [401, 401], header);
      assert.ok(r.headers.get('www-authenticate'), header);
    }
    assert.equal(api.io.writes, []);
    assert.is((await get(api, WRITE, { authorization: 'Bearer s3cret-token' })).body.success, true);
    assert.is((await get(api, WRITE, { authorization: 'bearer second' })).body.success, true);
    assert.is(api.io.writes.length, 2);
  }));

test('a token configured as its SHA-256 (a restored backup\'s) opens writes; its hash text itself does not', () => {
  const hash = `sha256:${createHash('sha256').update('s3cret-token').digest('hex')}`;
  return withApi({ tokens: [hash] }, async (api) => {
    assert.is((await get(api, WRITE)).status, 401);
    assert.is((await get(api, WRITE, { authorization: `Bearer ${hash}` })).status, 401, 'the hash is not a token');
    assert.is((await get(api, WRITE, { authorization: 'Bearer s3cret-tokeN' })).status, 401);
    assert.is((await get(api, WRITE, { authorization: 'Bearer s3cret-token' })).body.success, true);
    assert.is(api.io.writes.length, 1);
  });
});

test('tokens set without protect_reads: reads stay open', () =>
  withApi({ tokens: ['s3cret-token'] }, async (api) => {
    for (const path of ['/api/v1/shadow/all', '/api/v1/shadow/stats', '/api/v1/health/shadow', '/api/v1/device/readPoint?id=boiler&point=temp']) {
      assert.is((await get(api, path)).status, 200, path);
    }
  }));

test('protect_reads: reads need the token too', () =>
  withApi({ tokens: ['s3cret-token'], protectReads: true }, async (api) => {
    for (const path of ['/api/v1/shadow/all', '/api/v1/shadow/device?id=boiler', '/api/v1/shadow/stats', '/api/v1/health/shadow', '/api/v1/device/readPoint?id=boiler&point=temp']) {
      const denied = await get(api, path);
      assert.equal([denied.status, denied.body.errorCode], [401, 401], path);
      const bad = await get(api, path, { authorization: 'Bearer wrong' });
      assert.is(bad.status, 401, path);
      const ok = await get(api, path, { authorization: 'Bearer s3cret-token' });
      assert.equal([ok.status, ok.body.success], [200, true], path);
    }
    // readPoint was refused before it reached the device.
    assert.is(api.io.reads.length, 1);
  }));

test('auth is checked before the body is read: a bad-JSON write without token is a 401, not a JSON error', () =>
  withApi({ tokens: ['s3cret-token'] }, async (api) => {
    const r = await postJson(api, '/api/v1/device/writePoint', '{not json');
    assert.is(r.status, 401);
  }));

test.run();
