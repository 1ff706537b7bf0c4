import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkPublish, checkSubscribe, hashPassword, parseHash, UserDirectory, verifyPassword } from '../../src/export/auth.js';
import { Topics } from '../../src/export/topics.js';
import { runHashPassword } from '../../src/cli/hash-password.js';

test('hash format scrypt$N$r$p$salt$key; verify accepts the right password only', async () => {
  const h = await hashPassword('secret');
  assert.match(h, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  const parsed = parseHash(h);
  assert.ok(await verifyPassword('secret', parsed));
  assert.not.ok(await verifyPassword('Secret', parsed));
  assert.is.not(await hashPassword('secret'), h, 'salted');
});

test('malformed hashes are refused with the user named', () => {
  assert.throws(() => parseHash('plain'), /scrypt\$N\$r\$p\$salt\$key/);
  assert.throws(() => parseHash('scrypt$1000$8$1$c2FsdHNhbHQ=$a2V5a2V5a2V5a2V5a2V5a2V5'), /power of two/);
  assert.throws(() => parseHash(`scrypt$${2 ** 22}$8$1$c2FsdHNhbHQ=$a2V5a2V5a2V5a2V5a2V5a2V5`), /power of two/);
  assert.throws(() => new UserDirectory([{ username: 'ha', password_hash: 'x', can_write: true }], false), /mqtt\.users\[0\] \(ha\)/);
});

test('user directory: anonymous only when allowed, cached success still checks the password', async () => {
  const dir = new UserDirectory([{ username: 'ha', password_hash: await hashPassword('pw'), can_write: true }], false);
  assert.is(await dir.authenticate(undefined, undefined), null);
  assert.equal(await dir.authenticate('ha', Buffer.from('pw')), { kind: 'user', username: 'ha', canWrite: true });
  assert.equal(await dir.authenticate('ha', Buffer.from('pw')), { kind: 'user', username: 'ha', canWrite: true });
  assert.is(await dir.authenticate('ha', Buffer.from('bad')), null);
  assert.is(await dir.authenticate('nobody', Buffer.from('pw')), null);
  const open = new UserDirectory([], true);
  assert.equal(await open.authenticate(undefined, undefined), { kind: 'anonymous' });
});

test('publish ACL: set needs can_write, gateway topics never, discovery of this gateway never', () => {
  const t = new Topics('sg');
  const w = { kind: 'user', username: 'w', canWrite: true } as const;
  const r = { kind: 'user', username: 'r', canWrite: false } as const;
  const d = { prefix: 'homeassistant', nodePrefix: 'gw1_' };
  assert.is(checkPublish(w, 'sg/dev1/set', t, d), null);
  assert.is(checkPublish({ kind: 'bridge' }, 'sg/dev1/set', t, d), null);
  assert.match(checkPublish(r, 'sg/dev1/set', t, d)!, /may not write/);
  // Anonymous: only Home Assistant's birth/will topic, and only with discovery on.
  assert.match(checkPublish({ kind: 'anonymous' }, 'sg/dev1/set', t, d)!, /only homeassistant\/status/);
  assert.match(checkPublish({ kind: 'anonymous' }, 'other/x', t, d)!, /only homeassistant\/status/);
  assert.is(checkPublish({ kind: 'anonymous' }, 'homeassistant/status', t, d), null);
  assert.ok(checkPublish({ kind: 'anonymous' }, 'homeassistant/status/x', t, d));
  assert.ok(checkPublish({ kind: 'anonymous' }, 'homeassistant/switch/other_dev/x/config', t, d));
  assert.match(checkPublish({ kind: 'anonymous' }, 'homeassistant/status', t)!, /read only/);
  for (const topic of ['sg/dev1', 'sg/dev1/availability', 'sg/event/data', 'sg/event/offline', 'sg/bridge/state', 'sg/shadow', 'sg/dev1/set/result', 'sg/dev1/other', 'sg']) {
    assert.ok(checkPublish(w, topic, t, d), topic);
  }
  assert.ok(checkPublish(w, 'homeassistant/switch/gw1_dev1/relay1/config', t, d));
  assert.ok(checkPublish(w, 'homeassistant/binary_sensor/gw1/upstream_link/config', t, d), 'the gateway\'s own HA device');
  assert.is(checkPublish(w, 'homeassistant/binary_sensor/gw10/x/config', t, d), null);
  assert.is(checkPublish(r, 'homeassistant/status', t, d), null);
  assert.is(checkPublish(r, 'homeassistant/switch/other_dev/x/config', t, d), null);
});

test('subscribe ACL: anonymous clients only under the base topic (and the discovery prefix when on); users anywhere', () => {
  const t = new Topics('sg');
  const anon = { kind: 'anonymous' } as const;
  for (const f of ['sg', 'sg/#', 'sg/+', 'sg/dev1/availability', 'sg/+/set/result']) assert.is(checkSubscribe(anon, f, t), null, f);
  for (const f of ['#', '+/dev1', '+', 'sgx/#', 'other/x', '$SYS/#', 'homeassistant/#']) assert.match(checkSubscribe(anon, f, t)!, /only to the gateway's topics/, f);
  assert.is(checkSubscribe(anon, 'homeassistant/#', t, { prefix: 'homeassistant' }), null, 'discovery on: its prefix is the gateway\'s too');
  for (const p of [{ kind: 'user', username: 'r', canWrite: false }, { kind: 'bridge' }] as const) assert.is(checkSubscribe(p, '#', t), null);
});

test('topics: one contract, parse is the inverse of build', () => {
  const t = new Topics('sg');
  assert.equal(t.parse(t.state('a')), { kind: 'state', device: 'a' });
  assert.equal(t.parse(t.availability('a')), { kind: 'availability', device: 'a' });
  assert.equal(t.parse(t.set('a')), { kind: 'set', device: 'a' });
  assert.equal(t.parse(t.setResult('a')), { kind: 'setResult', device: 'a' });
  assert.equal(t.parse(t.eventData), { kind: 'eventData' });
  assert.equal(t.parse(t.eventOffline), { kind: 'eventOffline' });
  assert.equal(t.parse(t.bridgeState), { kind: 'bridgeState' });
  assert.equal(t.parse(t.shadow), { kind: 'shadow' });
  assert.is(t.parse('sg/event/set'), null);
  assert.is(t.parse('other/a'), null);
});

test('hash-password CLI: --password, stdin, usage errors', async () => {
  const out: string[] = [];
  assert.is(await runHashPassword(['--password', 'pw'], (l) => out.push(l)), 0);
  assert.ok(await verifyPassword('pw', parseHash(out[0]!)));
  out.length = 0;
  assert.is(await runHashPassword([], (l) => out.push(l), async () => 'from-stdin'), 0);
  assert.ok(await verifyPassword('from-stdin', parseHash(out[0]!)));
  assert.is(await runHashPassword(['--password'], () => {}), 2);
  assert.is(await runHashPassword([], () => {}, async () => ''), 2);
  assert.is(await runHashPassword(['--bogus'], () => {}), 2);
});

test.run();
