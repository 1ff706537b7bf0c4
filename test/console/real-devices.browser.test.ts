/// <reference lib="dom" />
/**
 * The console with real devices (Debian's chromium, playwright-core): the whole model library, a Modbus RTU
 * bus on the pymodbus rig over a socat pty, a 36-point meter (eastron-sdm630) and an 8-coil I/O board on it.
 * No view scrolls sideways at 375 or 1280 px, and axe-core finds nothing serious on any (the Add-device page with the Modbus bus chosen lists every
 * library model); an opened plot is scrolled into view; a test read shows units and plausibility flags;
 * coils are toggles; a scan's probes are not counted as bus timeouts; a restart button where a restart is
 * needed; device descriptions shown and editable.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readModelLibrary } from '../../src/config/models.js';
import type { Gateway } from '../../src/gateway.js';
import { Rig, rigUnavailable } from '../drivers/modbus-rig.js';
import { waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { rawConfig, start } from './fixtures.js';
import { browserUnavailable, launch, openPage, sideways } from './helpers.js';

const why = browserUnavailable() ?? rigUnavailable();
const browserTest = needs(why, 'console real-device tests');
const require = createRequire(import.meta.url);

let browser: Browser | undefined;
let rig: Rig | undefined;
let dir = '';
let gw: Gateway | undefined;

/** The rig's meter and I/O board beside the fixtures' devices. */
function realConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const raw = rawConfig(dir, rig!.master, extra);
  raw.devices = [
    ...(raw.devices as unknown[]),
    { id: 'sdm', model: 'eastron-sdm630', bus: 'rs485', unit_id: 2, poll: '2s', description: 'Main meter, cabinet A' },
    { id: 'io', model: 'waveshare-modbus-rtu-io-8ch', bus: 'rs485', unit_id: 1, poll: '1s' },
  ];
  return raw;
}

/** axe-core's serious and critical findings on the page as it is. */
async function seriousAxe(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
    const r = await axe.run();
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
  });
}

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
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-console-real-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

browserTest('no view scrolls sideways at 375 or 1280 px with the whole library and a Modbus bus chosen', async () => {
  gw = await start(realConfig());
  const base = `http://127.0.0.1:${gw.httpPort}`;
  const modbusModels = Object.values(readModelLibrary().models).filter((m) => JSON.stringify(m.raw).includes('"modbus"')).length;
  const { page, problems } = await openPage(browser!, `${base}/`);
  try {
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      for (const hash of ['#/', '#/device/t1', '#/device/sdm', '#/device/io', '#/add', '#/add/sdm', '#/buses', '#/bus', '#/bus/rs485', '#/config', '#/system']) {
        await page.goto(`${base}/${hash}`);
        await page.waitForSelector('main h1');
        if (hash === '#/add') {
          await page.selectOption('label:has-text("Bus") select', 'rs485');
          // Every Modbus model of the library (and the inline rig meter) is offered.
          await page.waitForFunction((n) => document.querySelectorAll('select[size] option').length > n, modbusModels);
        } else {
          await page.waitForTimeout(300);
        }
        const over = await sideways(page);
        assert.ok(over <= 0, `${hash} scrolls sideways by ${over}px at ${width}px`);
        if (width === 1280) assert.equal(await seriousAxe(page), [], `axe on ${hash}`);
      }
    }
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('Plot on a point at the end of the 36-point meter is scrolled into view', async () => {
  gw = await start(realConfig());
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${gw.httpPort}/#/device/sdm`, { width: 1280, height: 800 });
  try {
    await page.waitForSelector('td.value[data-point="total_reactive_energy"]');
    await page.click('tr:has(th:text-is("total_reactive_energy")) button.link');
    await page.waitForSelector('.chart');
    const where = await page.$eval('.chart', (el) => {
      const r = el.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, height: innerHeight };
    });
    assert.ok(where.top >= 0 && where.bottom <= where.height, `the plot is at ${where.top}..${where.bottom} px of a ${where.height} px window`);
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a test read shows values with units and flags the implausible ones, as probe does (375 px, no sideways scroll)', async () => {
  gw = await start(realConfig());
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${gw.httpPort}/#/add`, { width: 375, height: 800 });
  try {
    await page.fill('input[placeholder="meter-2"]', 'm3');
    await page.selectOption('label:has-text("Bus") select', 'rs485');
    await page.fill('label:has-text("Unit id") input[type="number"] >> nth=0', '2');
    await page.fill('input[type="search"]', 'sdm630');
    await page.selectOption('label:has-text("Model") select[size]', 'eastron-sdm630');
    // The list cuts long lines; the chosen model's whole description shows below it.
    const library = readModelLibrary().models['eastron-sdm630']!.raw as { description: string };
    assert.is(await page.textContent('.model-description'), library.description);
    await page.click('button:has-text("Test read")');
    await page.waitForSelector('.probe [data-point="voltage_l1"]');
    // The rig's unit 2: 232.5 V on L1, 0 V on L2 (no voltage: flagged, as `shadowgate probe` flags it).
    assert.is(await page.textContent('.probe [data-point="voltage_l1"]'), '232.5 V');
    assert.is(await page.textContent('.probe [data-point="current_l1"]'), '5.25 A');
    assert.is(await page.locator('.probe tr:has(th:text-is("voltage_l1")) .flag').count(), 0);
    assert.match(await page.textContent('.probe tr:has(th:text-is("voltage_l2")) .flag') ?? '', /implausible: 0 V: no voltage/);
    assert.match(await page.textContent('.probe') ?? '', /88 points: \d+ ok, [1-9]\d* implausible, 0 not available, 0 failed/);
    const over = await sideways(page);
    assert.ok(over <= 0, `the test read scrolls sideways by ${over}px`);
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a coil is a switch: a click writes it and the read-back shows; read-only inputs get none', async () => {
  gw = await start(realConfig());
  const g = gw;
  const { page, problems } = await openPage(browser!, `http://127.0.0.1:${g.httpPort}/#/device/io`);
  try {
    await page.waitForSelector('td.value[data-point="output_2"]');
    assert.is(await page.locator('#w-output_2[role="switch"]').count(), 1);
    assert.is(await page.locator('input#w-output_2').count(), 0, 'no number box for a coil');
    assert.is(await page.locator('tr:has(th:text-is("input_1")) [role="switch"], tr:has(th:text-is("input_1")) input').count(), 0);
    await page.waitForFunction(() => document.querySelector('#w-output_2')?.getAttribute('aria-checked') === 'false');
    await page.click('#w-output_2');
    await page.waitForFunction(() => document.querySelector('#w-output_2')?.getAttribute('aria-checked') === 'true');
    // What the slave holds, read again through the bus (not the shadow).
    assert.is(Number(await g.io.readPoint('io', 'output_2')), 1);
    await page.click('#w-output_2');
    await page.waitForFunction(() => document.querySelector('#w-output_2')?.getAttribute('aria-checked') === 'false');
    assert.is(Number(await g.io.readPoint('io', 'output_2')), 0);
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a device description is shown in the list and on its page, and edited from the page', async () => {
  gw = await start(realConfig());
  const g = gw;
  const base = `http://127.0.0.1:${g.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/`);
  try {
    await page.waitForSelector('table.devices td:has-text("Main meter, cabinet A")');
    await page.goto(`${base}/#/device/sdm`);
    await page.waitForSelector('p.description:text-is("Main meter, cabinet A")');
    await page.click('a:text-is("Edit")');
    await page.waitForFunction(() => (document.querySelector('label:has(> input[placeholder^="where"]) input') as HTMLInputElement | null)?.value === 'Main meter, cabinet A');
    await page.fill('input[placeholder^="where"]', 'Main meter, cabinet B');
    await page.click('button:has-text("Save")');
    await page.waitForURL(/#\/device\/sdm$/);
    await page.waitForSelector('p.description:text-is("Main meter, cabinet B")');
    const written = (g.config.current() as { devices: { id: string; description?: string }[] }).devices.find((d) => d.id === 'sdm');
    assert.is(written?.description, 'Main meter, cabinet B');
    // A description added to a device that had none.
    await page.goto(`${base}/#/add/m1`);
    await page.fill('input[placeholder^="where"]', 'Rig meter');
    await page.click('button:has-text("Save")');
    await page.waitForSelector('p.description:text-is("Rig meter")');
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a scan of ids 1-10 from the page shows as scan probes on the Buses page, not as timeouts', async () => {
  gw = await start(realConfig());
  const base = `http://127.0.0.1:${gw.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/#/add`);
  try {
    await page.selectOption('label:has-text("Bus") select', 'rs485');
    await page.fill('label:has-text("Scan ids 1 to") input', '10');
    await page.click('button:has-text("Scan the bus")');
    await page.waitForSelector('button.chip', { timeout: 15_000 });
    assert.equal(await page.locator('button.chip').allTextContents(), ['1', '2']);
    await page.goto(`${base}/#/buses`);
    const card = 'article.card:has(h2:has-text("rs485"))';
    await page.waitForSelector(`${card} div:has(> dt:text-is("Scan probes")) dd`);
    assert.match(await page.textContent(`${card} div:has(> dt:text-is("Scan probes")) dd`) ?? '', /^10 \(8 unanswered\)$/);
    // The 8 silent ids were "Timeouts 8" in amber before; a poll's own timeout on a loaded machine may add one.
    const timeouts = Number(await page.textContent(`${card} div:has(> dt:text-is("Timeouts")) dd`));
    assert.ok(timeouts < 8, `Timeouts ${timeouts} after a scan`);
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

browserTest('a change that needs a restart comes with a restart button, on the Configuration and System pages', async () => {
  let restarts = 0;
  const raw = realConfig();
  gw = await start(raw, JSON.stringify(raw), { restart: () => restarts++ });
  const base = `http://127.0.0.1:${gw.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/#/config`);
  page.on('dialog', (d) => void d.accept());
  try {
    await page.waitForFunction(() => (document.querySelector('#config-text') as HTMLTextAreaElement | null)?.value.includes('"sdm"'));
    const edited = JSON.parse(await page.inputValue('#config-text')) as { shadow: Record<string, unknown> };
    edited.shadow.persist_interval = '300ms';
    await page.fill('#config-text', JSON.stringify(edited, null, 2));
    await page.click('button:has-text("Validate and apply")');
    await page.waitForSelector('.warn:has-text("Needs a restart to take effect: shadow")');
    await page.click('button:has-text("Restart now")');
    await page.waitForSelector('[role="status"]:has-text("Restarting")');
    await waitFor(() => restarts === 1, 3000, 'the restart asked for');

    await page.goto(`${base}/#/system`);
    await page.waitForSelector('.restart-card .warn:has-text("waiting for a restart to take effect: shadow")');
    await page.click('.restart-card button:has-text("Restart now")');
    await waitFor(() => restarts === 2, 3000, 'the restart asked for from the System page');
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

test.run();
