/**
 * The console's restart button, end to end through the real process (`src/main.ts run`): under systemd (it
 * sets INVOCATION_ID) `POST /api/v1/system/restart` with the write token answers, then the gateway stops
 * cleanly and exits with status 75, which the unit restarts (RestartForceExitStatus=75); without the token
 * nothing happens. Run otherwise (nothing would start it again), the gateway refuses and keeps running.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';

const TOKEN = 'restart-token-1';
let dir = '';

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-restart-'));
  await writeFile(path.join(dir, 'config.json'), JSON.stringify({
    gateway: { id: 'restart', data_dir: path.join(dir, 'data'), log_level: 'info' },
    http: { host: '127.0.0.1', port: 0, auth: { tokens: [TOKEN] } },
    mqtt: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [{ name: 'v', type: 'float', sim: { fn: 'constant', value: 1 } }] } },
    devices: [{ id: 'd1', model: 'm', bus: 'sim' }],
  }));
});
test.after.each(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

const restart = (port: number, token?: string) => call<{ restarting: boolean }>(port, '/api/v1/system/restart', {
  method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {},
});

test('under systemd: a restart with the write token stops cleanly and exits 75; without it nothing happens', async () => {
  const child = cli(['run', '--config', path.join(dir, 'config.json')], { INVOCATION_ID: '0123456789abcdef0123456789abcdef' });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitReady(child);
  const info = await call<{ restart: { available: boolean; pending: string[] } }>(port, '/api/v1/system', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(info.body.data.restart, { available: true, pending: [] });
  const refused = await restart(port);
  assert.is(refused.status, 401);
  assert.is(child.exitCode, null, 'still running without a token');
  const asked = await restart(port, TOKEN);
  assert.ok(asked.body.success, asked.body.errorMsg);
  assert.equal(asked.body.data, { restarting: true });
  assert.is(await exited(child, 15_000), 75);
  assert.match(out, /"signal":"restart".*"msg":"stopping"/);
});

test('not under systemd: the restart is refused with the reason and the gateway keeps running', async () => {
  const child = cli(['run', '--config', path.join(dir, 'config.json')], { INVOCATION_ID: '' });
  const port = await waitReady(child);
  const asked = await restart(port, TOKEN);
  assert.not.ok(asked.body.success);
  assert.match(asked.body.errorMsg, /not run by its systemd unit/);
  await new Promise((r) => setTimeout(r, 500));
  assert.is(child.exitCode, null);
  child.kill('SIGTERM');
  assert.is(await exited(child, 15_000), 0);
});

test.run();
