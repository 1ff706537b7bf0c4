/** Secrets never leave through GET /config, and a config sent back with their placeholders keeps them. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ApplyResult, ConfigService } from '../../src/api/context.js';
import { redactConfig, restoreSecrets } from '../../src/api/redact.js';
import { call, get, withApi } from './helpers.js';

const RUNNING = {
  gateway: { id: 'gw' },
  http: { auth: { tokens: ['tok-a', 'tok-b'], read_tokens: ['tok-r'] } },
  mqtt: {
    users: [{ username: 'ha', password_hash: 'scrypt$16384$8$1$c2FsdA==$a2V5', can_write: true }],
    bridge: { url: 'mqtts://up.example:8883', username: 'gw', password: 'bridge-pw', topic_prefix: 'site' },
  },
  export: { shadow: { http: { url: 'https://u:export-pw@collector/ingest' } } },
  system: { wifi: { ssid: 'net', psk: 'wifi-pass', country: 'DE' } },
  devices: [{ id: 'd1', model: 'm', bus: 'sim' }],
};
const SECRETS = ['tok-a', 'tok-b', 'tok-r', 'scrypt$16384$8$1$c2FsdA==$a2V5', 'bridge-pw', 'export-pw', 'wifi-pass'];

test('redactConfig: every secret becomes a placeholder naming its place; the rest is untouched', () => {
  const r = redactConfig(RUNNING) as typeof RUNNING;
  const text = JSON.stringify(r);
  for (const s of SECRETS) assert.not.ok(text.includes(s), s);
  assert.equal(r.http.auth.tokens, ['<secret http.auth.tokens[0]>', '<secret http.auth.tokens[1]>']);
  assert.is(r.mqtt.users[0]!.password_hash, '<secret mqtt.users[0].password_hash>');
  assert.is(r.mqtt.bridge.url, 'mqtts://up.example:8883', 'a URL without a password stays');
  assert.is(r.export.shadow.http.url, '<secret export.shadow.http.url>');
  assert.equal(r.devices, RUNNING.devices);
  assert.equal(RUNNING.http.auth.tokens, ['tok-a', 'tok-b'], 'the running config is not changed');
});

test('restoreSecrets: placeholders back to the running values, also moved or with an entry removed', () => {
  const edited = redactConfig(RUNNING) as typeof RUNNING;
  // Revoke the first token, add a new one: the second placeholder still means the second running token.
  edited.http.auth.tokens = ['<secret http.auth.tokens[1]>', 'tok-new'];
  assert.equal(restoreSecrets(edited, RUNNING), { ...RUNNING, http: { auth: { tokens: ['tok-b', 'tok-new'], read_tokens: ['tok-r'] } } });
});

test('restoreSecrets: a placeholder with no secret at its place is refused, naming it', () => {
  const bad = { http: { auth: { tokens: ['<secret http.auth.tokens[5]>'] } }, devices: [{ id: '<secret devices[0].id>' }] };
  assert.throws(() => restoreSecrets(bad, RUNNING), (e: Error & { details?: { errors: { path: string }[] } }) =>
    e.details!.errors.map((x) => x.path).join() === 'http.auth.tokens[5],devices[0].id');
});

test('deeply nested bodies are not recursed into; __proto__ stays a key', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.ok(restoreSecrets({ devices: deep }, RUNNING));
  const proto = restoreSecrets(JSON.parse('{"__proto__":{"polluted":1}}'), RUNNING) as Record<string, unknown>;
  assert.ok(Object.hasOwn(proto, '__proto__'));
  assert.is((proto as { polluted?: unknown }).polluted, undefined);
});

function fakeConfig(): ConfigService & { applied: unknown[] } {
  const result: ApplyResult = { version: 2, changes: [], restartRequired: [] };
  const applied: unknown[] = [];
  return {
    applied,
    current: () => structuredClone(RUNNING),
    validate: (raw) => (applied.push(raw), { valid: true, errors: [] }),
    apply: async (raw) => (applied.push(raw), result),
    versions: async () => [], rollback: async () => result, putDevice: async () => result, deleteDevice: async () => result,
    putBus: async () => result, deleteBus: async () => result, models: () => [], devices: () => [], scan: async () => [],
    testRead: async () => ({ values: {}, errors: {}, unavailable: {}, points: [], summary: { points: 0, ok: 0, implausible: 0, not_available: 0, failed: 0 } }),
  };
}

test('GET /config with the write token: redacted; PUT and validate get the secrets back; a dangling placeholder is refused', () => {
  const config = fakeConfig();
  return withApi({ tokens: ['w'], config }, async (api) => {
    const auth = { authorization: 'Bearer w', 'content-type': 'application/json' };
    const got = await get(api, '/api/v1/config', auth);
    for (const s of SECRETS) assert.not.ok(got.text.includes(s), s);
    const put = await call(api, 'PUT', '/api/v1/config', { headers: auth, body: JSON.stringify(got.body.data) });
    assert.is(put.body.success, true);
    assert.equal(config.applied[0], RUNNING, 'apply got the real secrets');
    const dangling = { ...got.body.data, mqtt: { bridge: { password: '<secret mqtt.bridge.passwd>' } } };
    // A refused config is the one failure with data (its errors): read without the helper's envelope check.
    const res = await fetch(api.url('/api/v1/config'), { method: 'PUT', headers: auth, body: JSON.stringify(dangling), signal: AbortSignal.timeout(5000) });
    const refused = await res.json() as { success: boolean; data: { errors: { path: string }[] } };
    assert.equal([refused.success, refused.data.errors[0]!.path], [false, 'mqtt.bridge.passwd']);
    const v = await call(api, 'POST', '/api/v1/config/validate', { headers: auth, body: JSON.stringify(dangling) });
    assert.equal([v.body.success, v.body.data.valid, v.body.data.errors[0].path], [true, false, 'mqtt.bridge.passwd']);
    assert.is(config.applied.length, 1, 'nothing applied or validated with a dangling placeholder');
  });
});

test.run();
