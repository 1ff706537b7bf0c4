/// <reference lib="dom" />
/**
 * The System page's backup, restore and factory reset in Debian's chromium, against real gateway processes
 * run as their systemd unit would (INVOCATION_ID set; a process that exits 75 is started again on the same
 * port): a backup downloaded from gateway A is restored into gateway B from the page, which waits for B to
 * come back with A's devices; a file that is not a backup is refused on the page; the reset button stays
 * disabled until the gateway's id is typed, and the reset takes B back to its own configuration file.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../drivers/modbus-rig.js';
import { call } from '../helpers/http.js';
import { listBackup } from '../helpers/backup.js';
import { needs, peerHook } from '../helpers/peers.js';
import { cli, killAll, waitReady } from '../helpers/spawn.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'backup console');

let browser: Browser | undefined;
let dir = '';
let stopped = false;

// The port comes from the environment, as the unit would set it: a restored config brings A's port otherwise.
const config = (id: string, devices: unknown[]) => ({
  gateway: { id, data_dir: path.join(dir, id, 'data'), log_level: 'info' },
  http: { host: '127.0.0.1', port: 0 },
  mqtt: { enable: false },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: { m: { points: [{ name: 'v', type: 'int', access: 'R', sim: { fn: 'constant', value: 3 } }] } },
  devices,
});

/** Runs a gateway as its unit would: started again after it exits 75; resolves once it first answers. */
async function supervise(id: string, port: number): Promise<{ starts: () => number }> {
  let starts = 0;
  const spawnOnce = (): ReturnType<typeof cli> => {
    starts++;
    const child = cli(['run', '--config', path.join(dir, id, 'config.json')], { INVOCATION_ID: '0123456789abcdef0123456789abcdef', SHADOWGATE_HTTP_PORT: String(port) });
    child.once('exit', (code) => {
      if (code === 75 && !stopped) spawnOnce();
    });
    return child;
  };
  await waitReady(spawnOnce(), 30_000);
  return { starts: () => starts };
}

test.before(peerHook(why, async () => {
  browser = await launch();
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-backup-console-'));
}));
test.after(async () => {
  stopped = true;
  killAll();
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

browserTest('download a backup of A, restore it into B from the page, refuse a foreign file, reset B with its id typed', async () => {
  const [portA, portB] = [await freePort(), await freePort()];
  for (const [id, devices] of [['gw-a', [{ id: 'from-a', model: 'm', bus: 'sim' }]], ['gw-b', [{ id: 'own-b', model: 'm', bus: 'sim' }]]] as const) {
    await mkdir(path.join(dir, id), { recursive: true });
    await writeFile(path.join(dir, id, 'config.json'), JSON.stringify(config(id, [...devices])));
  }
  await supervise('gw-a', portA);
  const b = await supervise('gw-b', portB);

  // A: download from the page.
  const { page: pageA, problems: problemsA } = await openPage(browser!, `http://127.0.0.1:${portA}/#/system`);
  await pageA.getByRole('heading', { name: 'Backup, restore and reset' }).waitFor();
  const [dl] = await Promise.all([pageA.waitForEvent('download'), pageA.getByRole('button', { name: 'Download backup with history' }).click()]);
  assert.match(dl.suggestedFilename(), /^shadowgate-backup-gw-a-\d{8}-\d{6}-history\.tar\.gz$/);
  const file = path.join(dir, dl.suggestedFilename());
  await dl.saveAs(file);
  const entries = await listBackup(await readFile(file));
  assert.is(JSON.parse(entries[0]!.text).gateway_id, 'gw-a');
  await pageA.getByRole('status').filter({ hasText: 'Saved shadowgate-backup-gw-a' }).waitFor();
  assert.equal(problemsA, []);

  // B: a foreign file is refused on the page; B keeps running on its own config.
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${portB}/#/system`);
  page.on('dialog', (d) => void d.accept());
  await page.getByRole('heading', { name: 'Backup, restore and reset' }).waitFor();
  const foreign = path.join(dir, 'notes.tar.gz');
  await writeFile(foreign, 'not a backup at all');
  await page.getByLabel('Backup file to restore').setInputFiles(foreign);
  await page.getByRole('button', { name: 'Restore…' }).click();
  await page.getByRole('alert').filter({ hasText: 'restore refused, nothing changed' }).waitFor();
  assert.is(b.starts(), 1);

  // The real backup: restored, B restarts, the page carries on when it is back.
  await page.getByLabel('Backup file to restore').setInputFiles(file);
  await page.getByRole('button', { name: 'Restore…' }).click();
  await page.getByRole('status').filter({ hasText: 'Restored the backup of gw-a' }).waitFor({ timeout: 60_000 });
  assert.is(b.starts(), 2);
  const devices = (await call<{ id: string }[]>(portB, '/api/v1/devices')).body.data.map((d) => d.id);
  assert.equal(devices, ['from-a']);

  // Reset: disabled until the id (now gw-a's, restored) is typed.
  await page.reload();
  const resetButton = page.getByRole('button', { name: 'Reset to the configuration file' });
  await resetButton.waitFor();
  assert.ok(await resetButton.isDisabled());
  await page.getByLabel(/Factory reset: type this gateway's id/).fill('gw-b');
  assert.ok(await resetButton.isDisabled(), 'the wrong id does not enable it');
  await page.getByLabel(/Factory reset: type this gateway's id/).fill('gw-a');
  await resetButton.click();
  await page.getByRole('status').filter({ hasText: 'Reset: the gateway runs on its configuration file' }).waitFor({ timeout: 60_000 });
  assert.is(b.starts(), 3);
  assert.equal((await call<{ id: string }[]>(portB, '/api/v1/devices')).body.data.map((d) => d.id), ['own-b']);
  await page.getByText(/Last reset \(console/).waitFor();
  assert.equal(problems.filter((p) => !/Failed to load resource|net::ERR/.test(p)), []);
});

test.run();
