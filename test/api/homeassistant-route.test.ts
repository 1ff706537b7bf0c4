/**
 * `GET /api/v1/homeassistant` on a real gateway (simulator bus, REST and MQTT on port 0): the broker address
 * and login to give HA, the prefix, and — after an HA-like client connects anonymously and announces itself —
 * that HA was seen, when, and how many configs went out. No password hash, no bridge credentials.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashPassword } from '../../src/export/auth.js';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { haLike, type HaLike } from '../export/ha-like.js';
import { waitFor } from '../export/helpers.js';

interface Status {
  discovery: boolean;
  prefix: string;
  broker: { host: string; port: number; anonymousAllowed: boolean; users: { username: string; canWrite: boolean }[]; login: string };
  seen: { haSeen: boolean; births: number; lastBirthAt: string | null; lastBirthTs: number | null; configsSent: number };
  bridge: { url: string; topicPrefix: string; connected: boolean } | null;
}

async function status(gw: Gateway): Promise<{ text: string; data: Status }> {
  const res = await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/homeassistant`, { signal: AbortSignal.timeout(3000) });
  assert.is(res.status, 200);
  const text = await res.text();
  return { text, data: (JSON.parse(text) as { data: Status }).data };
}

test('Connect Home Assistant: broker and login, then HA seen with its birth time and the configs sent', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-ha-route-'));
  const raw = {
    gateway: { id: 'gw', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    history: { enable: false },
    mqtt: {
      enable: true, host: '127.0.0.1', port: 0, ws_port: 0, allow_anonymous: true,
      users: [{ username: 'hass', password_hash: await hashPassword('pw', { N: 1024 }), can_write: true }],
      homeassistant: { enable: true, prefix: 'homeassistant' },
      // An upstream that is not there: the status shows it without its password.
      bridge: { url: 'mqtt://gw:secret@127.0.0.1:9', topic_prefix: 'site-a', queue_max: '1MB' },
    },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { tick: { points: [{ name: 'count', type: 'int', sim: { fn: 'counter', step: 1 } }, { name: 'temp', type: 'float', unit: '°C', sim: { fn: 'constant', value: 20 } }] } },
    devices: [{ id: 'a1', model: 'tick', bus: 'sim', poll: '100ms' }, { id: 'a2', model: 'tick', bus: 'sim', poll: '100ms' }],
  };
  let gw: Gateway | undefined;
  let ha: HaLike | undefined;
  try {
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const before = await status(gw);
    assert.equal([before.data.discovery, before.data.prefix], [true, 'homeassistant']);
    assert.equal([before.data.broker.host, before.data.broker.port, before.data.broker.anonymousAllowed], ['127.0.0.1', gw.mqttPort, true]);
    assert.equal(before.data.broker.users, [{ username: 'hass', canWrite: true }]);
    assert.match(before.data.broker.login, /hass/);
    assert.equal([before.data.seen.haSeen, before.data.seen.births, before.data.seen.lastBirthAt], [false, 0, null]);
    assert.equal([before.data.bridge?.url, before.data.bridge?.topicPrefix], ['mqtt://127.0.0.1:9', 'site-a']);
    for (const secret of ['scrypt$', 'secret']) assert.not.ok(before.text.includes(secret), `no ${secret}`);

    // HA with its defaults, on the address and port the status gave.
    ha = await haLike(`mqtt://${before.data.broker.host}:${before.data.broker.port}`);
    const h = ha;
    // Two devices × two points, and the gateway's own device (a bridge is configured).
    await waitFor(() => h.configs.size === 5, 5000, '5 configs at HA');
    const g = gw;
    let after = await status(g);
    await waitFor(() => after.data.seen.births === 1, 3000, 'birth counted');
    after = await status(g);
    assert.ok(after.data.seen.haSeen);
    assert.match(after.data.seen.lastBirthAt!, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.ok(Math.abs(after.data.seen.lastBirthTs! - Date.now()) < 60_000);
    assert.ok(after.data.seen.configsSent >= 10, `at start and on the birth: ${after.data.seen.configsSent}`);
  } finally {
    await ha?.end();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
