/// <reference lib="dom" />
/**
 * The console's banner when an edited config file undid console changes: shown on the devices page after
 * the start, lists what on request, and "Return to the console's version" brings the device back and
 * clears the banner. A real gateway (started as `run` does) and Debian's chromium.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { readActiveConfig } from '../../src/runtime/config-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { browserUnavailable, launch, openPage } from './helpers.js';

const why = browserUnavailable();
const browserTest = needs(why, 'file drift banner');

let browser: Browser | undefined;
let dir = '';
let gw: Gateway | undefined;

test.before(peerHook(why, async () => {
  browser = await launch();
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-drift-console-'));
}));
test.after(async () => {
  await gw?.stop();
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const fileConfig = (dataDir: string, devices: unknown[]): Record<string, unknown> => ({
  gateway: { id: 'drift', data_dir: dataDir, log_level: 'silent' },
  http: { host: '127.0.0.1', port: 0 },
  mqtt: { enable: false },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: { m: { points: [{ name: 'n', type: 'int', sim: { fn: 'counter' } }] } },
  devices: [{ id: 'd1', model: 'm', bus: 'sim' }, ...devices],
});

async function start(fileText: string): Promise<Gateway> {
  // As `shadowgate run` does: the console's version runs while the file is the one it came from.
  const raw = JSON.parse(fileText) as { gateway: { data_dir: string } };
  const use = ((await readActiveConfig(raw.gateway.data_dir, fileText)) ?? raw) as Record<string, unknown>;
  return startGateway(validateConfig(use, { env: {} }), { log: silentLogger, raw: use, fileText });
}

browserTest('the banner says what the edited file undid, and one click returns to the console\'s version', async () => {
  const dataDir = path.join(dir, 'data');
  gw = await start(JSON.stringify(fileConfig(dataDir, [])));
  const added = await call(gw.httpPort, '/api/v1/config/device?id=d2', {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', bus: 'sim' }),
  });
  assert.ok(added.body.success, added.body.errorMsg);
  await gw.stop();
  // The file edited without the console's device.
  gw = await start(JSON.stringify(fileConfig(dataDir, [{ id: 'd3', model: 'm', bus: 'sim' }]), null, 2));
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${gw.httpPort}/`);
  const banner = page.locator('#file-drift');
  await banner.waitFor();
  assert.match(await banner.innerText(), /undid 1 change of the console's version \d+/);
  await page.getByRole('button', { name: 'Show what' }).click();
  await page.locator('#file-drift li').first().waitFor();
  assert.equal(await page.locator('#file-drift li').allInnerTexts(), ['devices[d2] dropped']);
  // The file added d3 of its own: the return names it and keeps the file's version before anything is discarded.
  await page.getByRole('button', { name: "Return to the console's version" }).click();
  const confirm = page.locator('#file-drift-confirm');
  await confirm.waitFor();
  assert.match(await confirm.innerText(), /discards what the file changed of its own \(1\)[\s\S]*devices\[d3\] added by the file[\s\S]*stays in the history as version \d+/);
  assert.equal((await call<{ id: string }[]>(gw.httpPort, '/api/v1/devices')).body.data.map((d) => d.id), ['d1', 'd3'], 'nothing changed before the confirmation');
  await page.getByRole('button', { name: "Return, discarding the file's edits" }).click();
  await banner.waitFor({ state: 'detached' });
  const ids = await waitFor(async () => {
    const list = (await call<{ id: string }[]>(gw!.httpPort, '/api/v1/devices')).body.data.map((d) => d.id);
    return list.includes('d2') ? list : undefined;
  }, 5000, 'd2 back');
  assert.equal(ids, ['d1', 'd2']);
  // Reloaded: no banner any more.
  await page.reload();
  await page.locator('main').waitFor();
  await page.waitForTimeout(300);
  assert.is(await banner.count(), 0);
  assert.equal(problems, []);
  await page.close();
});

test.run();
