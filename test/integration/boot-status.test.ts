/**
 * $SHADOWGATE_BOOT_STATUS: a gateway that runs on the last good config because the user's file is broken
 * says so in /health/shadow (status degraded, checks.boot_config), over real HTTP from the real `run`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';

interface Health { status: string; checks: Record<string, unknown> }

const BROKEN = {
  ok: false, at: '2026-01-01T12:00:00.000Z', source: '/boot/firmware/shadowgate.json', sha256: 'ab'.repeat(32),
  applied: 'last-good', message: '/boot/firmware/shadowgate.json is invalid (1 problem); the gateway runs on the last good config',
  problems: ['shadow.persist_interval: must be a duration like 500ms, 30s, 5m, 1h30m, 14d (got "5 minutes")'], token: 'generated',
};

let dir = '';
test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bootstatus-'));
  // No buses or devices: without the boot status, this gateway is healthy.
  await writeFile(path.join(dir, 'config.json'), JSON.stringify({
    gateway: { id: 'boot-test' }, http: { host: '127.0.0.1' }, mqtt: { enable: false }, history: { enable: false },
  }));
});
test.after(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

async function healthWith(env: NodeJS.ProcessEnv, whileRunning?: () => Promise<void>): Promise<Health[]> {
  const child = cli(['run', '--config', path.join(dir, 'config.json')], {
    SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_DATA_DIR: path.join(dir, 'data'), SHADOWGATE_BOOT_STATUS: '', ...env,
  });
  try {
    const port = await waitReady(child);
    const first = (await call<Health>(port, '/api/v1/health/shadow')).body.data;
    await whileRunning?.();
    const second = (await call<Health>(port, '/api/v1/health/shadow')).body.data;
    return [first, second];
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
}

test('an ok=false boot status degrades the health and is shown as checks.boot_config; read once at start', async () => {
  const file = path.join(dir, 'status-broken.json');
  await writeFile(file, JSON.stringify(BROKEN));
  const [health, later] = await healthWith({ SHADOWGATE_BOOT_STATUS: file }, async () => {
    // The status changes only at the next boot; the gateway does not read it per request.
    await writeFile(file, JSON.stringify({ ...BROKEN, ok: true }));
  });
  assert.is(health!.status, 'degraded');
  assert.equal(health!.checks.boot_config, BROKEN);
  // Compared part by part: checks.process (uptime, RSS) moves between any two requests.
  assert.is(later!.status, 'degraded');
  assert.equal(later!.checks.boot_config, BROKEN);
});

test('without the variable, or with an ok=true status, the same gateway is healthy', async () => {
  const [plain] = await healthWith({});
  assert.is(plain!.status, 'healthy');
  assert.not.ok('boot_config' in plain!.checks);

  const file = path.join(dir, 'status-ok.json');
  const good = { ...BROKEN, ok: true, applied: 'source', problems: [], message: 'valid' };
  await writeFile(file, JSON.stringify(good));
  const [ok] = await healthWith({ SHADOWGATE_BOOT_STATUS: file });
  assert.is(ok!.status, 'healthy');
  assert.equal(ok!.checks.boot_config, good);
});

test('an unreadable status file does not stop the gateway', async () => {
  const [health] = await healthWith({ SHADOWGATE_BOOT_STATUS: path.join(dir, 'absent.json') });
  assert.is(health!.status, 'healthy');
  assert.not.ok('boot_config' in health!.checks);
});

test.run();
