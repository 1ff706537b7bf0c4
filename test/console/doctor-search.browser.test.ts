/// <reference lib="dom" />
/**
 * The console's Bus doctor on an RTU bus at the wrong settings, in Debian's chromium (playwright-core): the bus is
 * configured at 9600 8N1, the line (scripts/modbus-rig/line_relay.py) runs at 19200 8O1 with an Eastron SDM630 at
 * unit 1. "Search the line's settings" says the bus's polls pause, finds 19200 8O1 and the meter; "Use these
 * settings for bus rs485" saves the bus at 19200 8O1; "Add" adds the meter in one click and it is polled, online.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { rigUnavailable } from '../drivers/modbus-rig.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { startRelayGateway, type RelayGateway } from '../helpers/relay-line.js';
import { browserUnavailable, fits, launch, openPage } from './helpers.js';

const why = browserUnavailable() ?? rigUnavailable();
const browserTest = needs(why, 'console bus doctor settings search tests');

let browser: Browser | undefined;
let g: RelayGateway | undefined;

test.before(peerHook(why, async () => {
  g = await startRelayGateway('19200,8,O,1', 'sdm630:1', (port, dir) => ({
    gateway: { id: 'doctor-search-console', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port, baud_rate: 9600, parity: 'none', stop_bits: 1 }],
    // A device written down earlier at a unit nobody answers: its polls are the ones that pause.
    devices: [{ id: 'spare', model: 'eastron-sdm630', bus: 'rs485', unit_id: 9, poll: '1s' }],
  }));
  browser = await launch();
}));
test.after(async () => {
  await browser?.close();
  await g?.stop();
});

interface Bus { id: string; baud_rate?: number; parity?: string; stop_bits?: number; running: boolean }

browserTest('search the line\'s settings, use them for the bus in one click, add the meter found: it is polled and online', async () => {
  const base = `http://127.0.0.1:${g!.gw.httpPort}`;
  const { page, problems } = await openPage(browser!, `${base}/#/doctor/rs485`, { width: 375, height: 800 });
  try {
    await page.waitForSelector('main h1:text-is("Bus doctor")');
    await page.waitForSelector('select option[value="rs485"]', { state: 'attached' });
    await page.fill('label:has-text("To") input', '3');
    await page.check('label:has-text("Search the line\'s settings") input');
    // Said before it starts: the bus's devices are not polled meanwhile.
    assert.match((await page.textContent('fieldset .warn'))!, /^Polls of the 1 device on this bus pause for about a minute/);
    await fits(page, 'the doctor view with the search chosen');
    // The search probes each setting with a wait of the answer's wire time + 50 ms. The line here is a relay
    // process of the test: beside a busy job it can hold the meter's answer past every ask of a setting, and the
    // search rightly moves on. So a search that ended without the meter runs once more (its report printed); a
    // second miss fails, and so does a search that does not end.
    let report = '';
    for (let attempt = 1; attempt <= 2; attempt++) {
      await page.click('button:text-is("Run the doctor")');
      await page.waitForSelector('[role="note"]:has-text("its devices are not polled")', { timeout: 10_000 });
      await page.waitForSelector('.doctor-report [role="status"]', { timeout: 90_000 });
      if (await page.$('.doctor-unit[data-unit="1"]')) break;
      report = (await page.textContent('.doctor-report'))!.replace(/\s+/g, ' ');
      console.log(`  search ${attempt} ended without the meter: ${report}`);
    }
    assert.ok(await page.$('.doctor-unit[data-unit="1"]'), `the meter found by one of two searches; the last report: ${report}`);
    assert.is(await page.textContent('.doctor-unit[data-unit="1"] .model'), 'eastron-sdm630');
    assert.is(await page.textContent('.doctor-fixes .found-setting'), '19200 8O1');
    await fits(page, 'the search\'s report with its settings to use');

    await page.click('button:text-is("Use these settings for bus rs485")');
    await page.waitForSelector('.doctor-fixes .ok', { timeout: 15_000 });
    const saved = (await call<Bus[]>(g!.gw.httpPort, '/api/v1/buses')).body.data.find((b) => b.id === 'rs485')!;
    assert.equal([saved.baud_rate, saved.parity, saved.stop_bits], [19200, 'odd', 1]);
    // The button is gone: the bus runs at the settings found now.
    await page.waitForSelector('button:text-is("Use these settings for bus rs485")', { state: 'detached', timeout: 5000 });

    // One click on Add, the usual test read, save: polled and online at the new settings.
    await page.click('.doctor-unit[data-unit="1"] a:text-is("Add")');
    await page.waitForSelector('main h1:text-is("Add a device")');
    assert.is(await page.inputValue('label:has-text("Device id") input'), 'sdm630-1');
    await page.waitForFunction(() => (document.querySelector('select[size]') as HTMLSelectElement | null)?.value === 'eastron-sdm630');
    await page.click('button:text-is("Test read")');
    await page.waitForSelector('.probe [role="status"]', { timeout: 30_000 });
    await page.click('button:text-is("Save")');
    await page.waitForFunction(() => location.hash === '#/device/sdm630-1', undefined, { timeout: 15_000 });
    await waitFor(() => g!.gw.shadow.GetDeviceRecord('sdm630-1')?.online === true, 20_000, 'sdm630-1 online');
    const driver = g!.gw.drivers.get('rs485')!;
    assert.ok(((driver.stats!() as { devices: Record<string, { requests: number }> }).devices['sdm630-1']?.requests ?? 0) > 0, 'sdm630-1 polled');
    assert.equal(problems, []);
  } finally {
    await page.close();
  }
});

test.run();
