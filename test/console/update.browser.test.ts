/// <reference lib="dom" />
/**
 * The System page's update card in Debian's chromium against a real gateway process (RAUC's system.conf moved
 * into a temp dir), with a stand-in for the SD image's root update service writing status.json: a file that
 * is no bundle is refused on the page; a bundle is uploaded with a progress bar (the upload throttled so the
 * bar is seen), arrives whole, and the page follows the install (checking, installing 40 %, rebooting) to a
 * failure whose reason stays on the page after a reload.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { cli, killAll, waitReady } from '../helpers/spawn.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'update console');

let browser: Browser | undefined;
let dir = '';

test.before(peerHook(why, async () => {
  browser = await launch();
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-update-console-'));
}));
test.after(async () => {
  killAll();
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function writeStatus(dataDir: string, status: Record<string, unknown>): Promise<void> {
  const tmp = path.join(dataDir, 'update', '.status.json.tmp');
  await writeFile(tmp, JSON.stringify({ progress: null, from_version: '0.1.0', to_version: '0.2.0', slot: 'B', booted_slot: 'A', ...status, updated_at: new Date().toISOString() }));
  await rename(tmp, path.join(dataDir, 'update', 'status.json'));
}

const card = (page: Page) => page.locator('.system-update');

browserTest('refuse a file that is no bundle; upload a bundle with progress; follow the install to its failure, shown after a reload', async () => {
  const dataDir = path.join(dir, 'data');
  await writeFile(path.join(dir, 'system.conf'), '[system]\ncompatible=shadowgate-test\n');
  await writeFile(path.join(dir, 'config.json'), JSON.stringify({
    gateway: { id: 'upd', data_dir: dataDir, log_level: 'info' }, http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, buses: [],
  }));
  const port = await waitReady(cli(['run', '--config', path.join(dir, 'config.json')], { SHADOWGATE_RAUC_SYSTEM_CONF: path.join(dir, 'system.conf') }), 30_000);
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${port}/#/system`);
  page.on('dialog', (d) => void d.accept());
  await page.getByRole('heading', { name: 'System update' }).waitFor();
  await card(page).getByText('No update yet').waitFor();
  const version = JSON.parse(await readFile('package.json', 'utf8')).version as string;
  assert.is(await card(page).locator('dd').first().textContent(), version);

  const notes = path.join(dir, 'notes.raucb');
  await writeFile(notes, 'just text, renamed');
  await page.getByLabel('Update bundle (.raucb)').setInputFiles(notes);
  await page.getByRole('button', { name: 'Install update…' }).click();
  await card(page).getByRole('alert').filter({ hasText: 'this is not a RAUC update bundle' }).waitFor();

  // 3 MB at 1 MB/s: the upload bar is up for about three seconds.
  const data = Buffer.concat([Buffer.from('hsqs', 'latin1'), randomBytes(3 * 1024 * 1024)]);
  const bundle = path.join(dir, 'shadowgate-0.2.0.raucb');
  await writeFile(bundle, data);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1024 * 1024 });
  await page.getByLabel('Update bundle (.raucb)').setInputFiles(bundle);
  await page.getByRole('button', { name: 'Install update…' }).click();
  const uploading = page.getByRole('progressbar', { name: 'Uploading' });
  await uploading.waitFor();
  const seen = Number(await uploading.getAttribute('value'));
  assert.ok(seen >= 0 && seen < 100, `upload at ${seen}%`);

  // The stand-in root side: takes the request and checks what arrived.
  const requestFile = path.join(dataDir, 'update', 'request.json');
  const request = JSON.parse(await waitFor(() => readFile(requestFile, 'utf8').catch(() => undefined), 20_000, 'request.json'));
  assert.equal([request.size, request.sha256, request.by], [data.length, createHash('sha256').update(data).digest('hex'), 'rest']);
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await card(page).getByText(/Update checking/).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Install update…' }).isDisabled(), 'no second install while one is under way');
  await rm(requestFile);
  await writeStatus(dataDir, { state: 'installing', progress: 40, message: 'installing 0.2.0 into slot B' });
  const installing = page.getByRole('progressbar', { name: 'Installing' });
  await installing.waitFor();
  assert.is(await installing.getAttribute('value'), '40');
  await card(page).getByText('Update installing: installing 0.2.0 into slot B').waitFor();
  await writeStatus(dataDir, { state: 'rebooting', progress: 100, message: 'installed 0.2.0 into slot B; rebooting into it' });
  await card(page).getByText('Update rebooting: installed 0.2.0 into slot B; rebooting into it').waitFor();
  const reason = 'version 0.2.0 did not become healthy within 180 s; back on version 0.1.0 (slot A)';
  await writeStatus(dataDir, { state: 'failed', message: reason });
  await card(page).getByRole('alert').filter({ hasText: `Update failed: ${reason}` }).waitFor();
  assert.not.ok(await page.getByRole('button', { name: 'Install update…' }).isDisabled(), 'over: the next one may be installed');

  await page.reload();
  await card(page).getByRole('alert').filter({ hasText: `Update failed: ${reason}` }).waitFor();
  await card(page).getByText('A', { exact: true }).waitFor();
  assert.equal(problems.filter((p) => !/Failed to load resource/.test(p)), []);
});

test.run();
