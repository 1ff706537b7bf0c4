/**
 * Home Assistant with its defaults against the gateway's own broker: an anonymous HA that subscribes and
 * publishes its birth on one connection stays connected and gets every discovery config; so does an HA
 * logged in as a read-only `mqtt.users` user. Refused publishes are acknowledged and dropped, not answered by
 * a closed connection.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashPassword } from '../../src/export/auth.js';
import { startExport } from '../../src/runtime/export.js';
import { collect, connectClient, endClient, makeFixture, MODEL_POINTS, removeDir, waitFor, withTimeout } from './helpers.js';
import { haLike, type HaLike } from './ha-like.js';

const CONFIGS = 2 * MODEL_POINTS.length;
const brokerStats = (gw: { stats(): Record<string, unknown> }) => gw.stats().broker as { refusedPublishes: number; clients: number };

async function staysAndGetsAll(ha: HaLike): Promise<void> {
  await waitFor(() => ha.configs.size === CONFIGS, 5000, `${CONFIGS} configs (got ${ha.configs.size})`);
  // A closed connection would show within a few hundred ms (HA reconnects after 1 s and publishes again).
  await new Promise((r) => setTimeout(r, 1500));
  assert.is(ha.connects, 1, 'one connect');
  assert.is(ha.closes, 0, 'no close');
  assert.ok(ha.client.connected);
  for (const c of ha.configs.values()) assert.ok(c.state_topic && c.availability_topic, 'a config names its topics');
}

test('HA with its defaults: anonymous, birth on the subscribing connection → stays connected, every config', async () => {
  const f = makeFixture({ mqtt: { homeassistant: { enable: true, prefix: 'homeassistant' } } });
  const gw = await startExport(f.ctx);
  let ha: HaLike | undefined;
  try {
    // The first run of configs went out at start, before HA was there (they are not retained here).
    await new Promise((r) => setTimeout(r, 200));
    ha = await haLike(`mqtt://127.0.0.1:${gw.mqttPort}`);
    await staysAndGetsAll(ha);
    assert.is(brokerStats(gw).refusedPublishes, 0, 'the birth is allowed');
    const exp = gw.stats().exporter as { homeassistant: { births: number; lastBirthAt: number | null; configsSent: number } };
    assert.is(exp.homeassistant.births, 1);
    assert.ok(exp.homeassistant.lastBirthAt! > Date.now() - 60_000);
    assert.ok(exp.homeassistant.configsSent >= 2 * CONFIGS, 'at start and on the birth');
  } finally {
    await ha?.end();
    await gw.stop();
    removeDir(f.dir);
  }
});

test('HA logged in as a read-only mqtt.users user: stays connected, every config', async () => {
  const users = [{ username: 'hass', password_hash: await hashPassword('pw', { N: 1024 }), can_write: false }];
  const f = makeFixture({ mqtt: { allow_anonymous: false, users, homeassistant: { enable: true, prefix: 'homeassistant' } } });
  const gw = await startExport(f.ctx);
  let ha: HaLike | undefined;
  try {
    ha = await haLike(`mqtt://127.0.0.1:${gw.mqttPort}`, { username: 'hass', password: 'pw' });
    await staysAndGetsAll(ha);
  } finally {
    await ha?.end();
    await gw.stop();
    removeDir(f.dir);
  }
});

test('refused publishes are acknowledged (QoS 0, 1, 2) and dropped: no write, no delivery, the connection stays', async () => {
  const f = makeFixture({ mqtt: { homeassistant: { enable: true, prefix: 'homeassistant' } } });
  const gw = await startExport(f.ctx);
  const anon = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
  const watcher = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
  let closes = 0;
  anon.on('close', () => closes++);
  try {
    const seen = await collect(watcher, 'sg/#');
    await new Promise((r) => setTimeout(r, 100));
    seen.length = 0;
    for (const qos of [0, 1, 2] as const) {
      await withTimeout(anon.publishAsync('sg/dev1/set', '{"relay1":1}', { qos }), 3000, `set QoS ${qos} acknowledged`);
      await withTimeout(anon.publishAsync('sg/dev1/availability', 'offline', { qos, retain: true }), 3000, `spoof QoS ${qos} acknowledged`);
    }
    // The gateway's own discovery topics are not for anyone to write, nor are other topics for guests.
    await withTimeout(anon.publishAsync('homeassistant/switch/gw1_dev1/relay1/config', '', { qos: 1, retain: true }), 3000, 'config acknowledged');
    await withTimeout(anon.publishAsync('elsewhere/x', 'y', { qos: 1 }), 3000, 'elsewhere acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    assert.is(closes, 0, 'connection kept');
    assert.ok(anon.connected);
    assert.is(f.io.writes.length, 0, 'nothing written');
    assert.equal(seen.filter((m) => m.topic === 'sg/dev1/availability' || m.topic === 'sg/dev1/set'), [], 'nothing delivered');
    assert.is(brokerStats(gw).refusedPublishes, 8);
    // Still served: a subscribe on the same connection works, and the retained availability is the gateway's.
    const got = await collect(anon, 'sg/dev1/availability');
    await waitFor(() => got.length === 1, 3000, 'retained availability');
    assert.is(got[0]!.payload, 'online');
  } finally {
    await endClient(anon);
    await endClient(watcher);
    await gw.stop();
    removeDir(f.dir);
  }
});

test.run();
