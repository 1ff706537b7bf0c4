/// <reference lib="dom" />
/**
 * The web console in a real browser (Debian's chromium, playwright-core) against a real gateway on the
 * simulator and the pymodbus rig: loads without console errors, shows a value change within 1 s, writes
 * through the page with the read-back (and the error text of a bad value), adds a meter found by a scan
 * (scan → model → test read → save) that is polled at once and survives a restart, refuses a bad config
 * upload showing its problems, rolls back, draws a history plot, passes axe-core (the phone layout: real-devices.browser.test.ts), and asks
 * for a token before any change on a gateway with tokens.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Gateway } from '../../src/gateway.js';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { rawConfig, start } from './fixtures.js';
import { browserUnavailable, drawnPixels, launch, openPage } from './helpers.js';

const why = browserUnavailable() ?? rigUnavailable();
const browserTest = needs(why, 'console browser tests');
const require = createRequire(import.meta.url);

let browser: Browser | undefined;
let rig: Rig | undefined;
let dir = '';
let gw: Gateway | undefined;

test.before(peerHook(why, async () => {
  rig = new Rig('1,2');
  await rig.start();
  browser = await launch();
}));
test.after(async () => {
  await browser?.close();
  await rig?.stop();
});
test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-console-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

browserTest('the devices page loads without errors; a value change shows within 1 s; axe-core', async () => {
  gw = await start(rawConfig(dir, rig!.master));
  const g = gw;
  const base = `http://127.0.0.1:${g.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/`);
  try {
    await page.waitForSelector('table.devices tbody tr >> nth=2');
    assert.is(await page.locator('table.devices tbody tr').count(), 3);
    await page.waitForSelector('.live.on');
    await page.goto(`${base}/#/device/slow`);
    await page.waitForSelector('td.value[data-point="level"]');
    const t0 = Date.now();
    g.shadow.SetDevicePoints('slow', { level: 42.5 });
    await page.waitForFunction(() => document.querySelector('td.value[data-point="level"]')?.textContent === '42.5', undefined, { timeout: 1000 });
    console.log(`  value change → page: ${Date.now() - t0} ms`);

    const axeSource = require.resolve('axe-core/axe.min.js');
    for (const hash of ['#/', '#/device/t1', '#/add', '#/buses', '#/config', '#/system']) {
      await page.goto(`${base}/${hash}`);
      await page.waitForTimeout(400);
      await page.addScriptTag({ path: axeSource });
      const serious = await page.evaluate(async () => {
        const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
        const r = await axe.run();
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
      });
      assert.equal(serious, [], `axe on ${hash}`);
    }

    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a write from the page reaches the device and the read-back shows; a bad value shows its error; the plot draws', async () => {
  gw = await start(rawConfig(dir, rig!.master));
  const g = gw;
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${g.httpPort}/#/device/m1`);
  try {
    await page.fill('#w-limit', '12.5');
    await page.click('form.write:has(#w-limit) button');
    await page.waitForSelector('form.write:has(#w-limit) .ok');
    assert.match(await page.textContent('form.write:has(#w-limit) .ok') ?? '', /read back: 12\.5/);
    // What the slave holds, read again through the bus (a real read, not the shadow).
    assert.is(await g.io.readPoint('m1', 'limit'), 12.5);
    await page.fill('#w-limit', 'abc');
    await page.click('form.write:has(#w-limit) button');
    await page.waitForSelector('form.write:has(#w-limit) .error');
    assert.match(await page.textContent('form.write:has(#w-limit) .error') ?? '', /abc/);
    assert.is(g.shadow.GetWritePointValue('m1', 'limit'), 12.5, 'a refused value stores nothing');

    await page.goto(`http://127.0.0.1:${g.httpPort}/#/device/t1`);
    await page.waitForTimeout(1500); // a few samples of the sine into history
    await page.click('tr:has(th:text-is("temperature")) button.link');
    await page.waitForSelector('.chart canvas');
    await waitFor(async () => (await drawnPixels(page, '.chart canvas')) > 20, 5000, 'plot pixels');
    const shot = await page.locator('.chart').screenshot();
    assert.ok(shot.length > 2000, 'a screenshot of the plot');
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('add a meter from the page (scan, model, test read, save): polled at once, kept after a restart; rollback; a bad upload changes nothing', async () => {
  const raw = rawConfig(dir, rig!.master);
  const fileText = JSON.stringify(raw);
  gw = await start(raw, fileText);
  let g = gw;
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${g.httpPort}/#/add`);
  try {
    await page.fill('input[placeholder="meter-2"]', 'm2');
    await page.selectOption('label:has-text("Bus") select', 'rs485');
    await page.fill('label:has-text("Scan ids 1 to") input', '3');
    await page.click('button:has-text("Scan the bus")');
    await page.waitForSelector('button.chip');
    assert.equal(await page.locator('button.chip').allTextContents(), ['1', '2']);
    await page.click('button.chip:text-is("2")');
    await page.fill('input[type="search"]', 'rig');
    await page.selectOption('label:has-text("Model") select[size]', 'rig-meter');
    await page.click('button:has-text("Test read")');
    await page.waitForSelector('.probe');
    assert.match(await page.textContent('.probe') ?? '', /unit_no\s*2/);
    assert.not.ok(g.shadow.HasDevice('m2'), 'a test read adds nothing');
    await page.click('button:has-text("Save")');
    await page.waitForURL(/#\/device\/m2$/);
    await waitFor(() => g.shadow.GetDevicePoint('m2', 'unit_no') === 2, 5000, 'm2 polled without a restart');
    await page.waitForFunction(() => document.querySelector('td.value[data-point="unit_no"]')?.textContent === '2');

    await g.stop();
    gw = undefined;
    gw = await start(raw, fileText);
    g = gw;
    await waitFor(() => g.shadow.GetDevicePoint('m2', 'unit_no') === 2, 5000, 'm2 after a restart');

    // A bad upload: every problem shown at its path, nothing changed.
    await page.goto(`http://127.0.0.1:${g.httpPort}/#/config`);
    await page.waitForFunction(() => (document.querySelector('#config-text') as HTMLTextAreaElement | null)?.value.includes('"m2"'));
    const before = await page.inputValue('#config-text');
    const bad = { ...raw, devices: [{ id: 'x', model: 'no-such-model', bus: 'sim' }, { id: 'y', model: 'thermo', bus: 'nobus' }] };
    await page.setInputFiles('input[type="file"]', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bad)) });
    await page.waitForFunction(() => (document.querySelector('#config-text') as HTMLTextAreaElement | null)?.value.includes('no-such-model'));
    await page.click('button:has-text("Validate and apply")');
    await page.waitForSelector('ul.problems li');
    const listed = await page.locator('ul.problems li').allTextContents();
    assert.ok(listed.some((l) => l.includes('devices') && l.includes('no-such-model')), listed.join(' | '));
    assert.ok(listed.some((l) => l.includes('nobus')), listed.join(' | '));
    assert.ok(g.shadow.HasDevice('m2') && !g.shadow.HasDevice('x'), 'nothing changed');
    await page.reload();
    await page.waitForFunction(() => (document.querySelector('#config-text') as HTMLTextAreaElement | null)?.value.includes('"m2"'));
    assert.is(await page.inputValue('#config-text'), before);

    // Rollback to the configuration at start: m2 goes.
    await page.click('tr:has-text("configuration at start") button:has-text("Roll back")');
    await page.waitForSelector('.ok:has-text("Applied as version")');
    assert.not.ok(g.shadow.HasDevice('m2'));
    assert.ok(g.shadow.HasDevice('m1'));
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('with tokens, the page asks for one before a change goes through; without it nothing changes', async () => {
  gw = await start(rawConfig(dir, rig!.master, { http: { host: '127.0.0.1', port: 0, auth: { tokens: ['console-token-1'] } } }));
  const g = gw;
  const { page } = await openPage(browser!, `http://127.0.0.1:${g.httpPort}/#/device/t1`);
  try {
    await page.fill('#w-setpoint', '30');
    await page.click('form.write:has(#w-setpoint) button');
    await page.waitForSelector('[role="dialog"]');
    await page.click('[role="dialog"] button:has-text("Cancel")');
    await page.waitForSelector('form.write:has(#w-setpoint) .error');
    assert.is(g.shadow.GetWritePointValue('t1', 'setpoint'), null, 'no write without a token');
    await page.click('form.write:has(#w-setpoint) button');
    await page.fill('[role="dialog"] input', 'wrong-token');
    await page.click('[role="dialog"] button:has-text("Use this token")');
    await page.waitForSelector('form.write:has(#w-setpoint) .error');
    assert.is(g.shadow.GetWritePointValue('t1', 'setpoint'), null, 'no write with a wrong token');
    await page.evaluate(() => sessionStorage.clear());
    await page.click('form.write:has(#w-setpoint) button');
    await page.fill('[role="dialog"] input', 'console-token-1');
    await page.click('[role="dialog"] button:has-text("Use this token")');
    await page.waitForSelector('form.write:has(#w-setpoint) .ok');
    assert.is(g.shadow.GetWritePointValue('t1', 'setpoint'), 30);
  } finally {
    await page.close();
  }
});

// How fast is the bench's (scripts/bench/console.ts: median of 5, goal ≤ 1 s): Chromium's processes beside a busy
// job render as late as the machine lets them, so here only that every row comes (the time is printed).
browserTest('1,000 devices: the devices page renders every one of them (time printed; its goal is the bench\'s)', async () => {
  const devices = Array.from({ length: 1000 }, (_, i) => ({ id: `d${String(i).padStart(4, '0')}`, model: 'quiet', bus: 'sim', poll: '10s' }));
  gw = await start({ ...rawConfig(dir, rig!.master), history: { enable: false }, devices });
  const page = await browser!.newPage({ viewport: { width: 1200, height: 800 } });
  try {
    const t0 = Date.now();
    await page.goto(`http://127.0.0.1:${gw.httpPort}/`);
    await page.waitForSelector('table.devices tbody tr >> nth=999', { timeout: 60_000 });
    console.log(`  first render with 1,000 devices: ${Date.now() - t0} ms (goal ≤ 1000 ms: make bench)`);
    assert.is(await page.locator('table.devices tbody tr').count(), 1000);
  } finally {
    await page.close();
  }
});

test.run();
