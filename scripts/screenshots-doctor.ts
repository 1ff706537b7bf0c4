/**
 * The commissioning guide's screenshots (docs/commissioning.md), taken again with:
 *
 *   node --import tsx scripts/screenshots-doctor.ts [--out DIR]      (DIR defaults to docs/)
 *
 * A real gateway (src/main.ts, as `npm run dev` runs it) with one RTU bus and no device, on a socat pty pair
 * whose other end is scripts/modbus-rig/devices.py serving three real device images (an Eastron SDM630 at
 * unit 1, an XY-MD02 at 2, a Waveshare relay board at 3), and Debian's chromium (playwright-core) on its
 * console: the Bus doctor view after a run at 1280 and at 375 px, then the add-device form "Add" filled in.
 * Writes commissioning-doctor.png, commissioning-doctor-phone.png and commissioning-add.png, each cropped to
 * the content. Then it does what a user does next (test read, save) and checks the device is polled.
 *
 * Needs chromium, socat and python3-pymodbus (the console tests' `make test` installs them). Everything lives
 * in a unique temp dir, the gateway's HTTP port is picked by the system (port 0, read from its "ready" line),
 * every process started here is stopped by its PID, and every wait has a timeout (the whole run: 4 minutes).
 * Not part of `make test`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { rigUnavailable } from '../test/drivers/modbus-rig.js';
import { DeviceRig } from '../test/helpers/device-rig.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = '/usr/bin/chromium';
const WHOLE_RUN_MS = 240_000;
const DEVICES = 'sdm630:1,xy-md02:2,ws-relay:3';
/** The unit ids the doctor asks: the rig's three and some silent ones around them. */
const TO = 16;

const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs' } } });
process.chdir(ROOT);
const OUT = path.resolve(values.out!);

function log(line: string): void {
  process.stderr.write(`screenshots: ${line}\n`);
}

/** SIGTERM by PID, SIGKILL after `graceMs`; resolves once the child is gone. */
function stopChild(child: ChildProcess | null, graceMs = 5000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => {
      try { process.kill(child.pid!, 'SIGKILL'); } catch { /* gone */ }
    }, graceMs);
    child.once('exit', () => { clearTimeout(hard); resolve(); });
    try { process.kill(child.pid!, 'SIGTERM'); } catch { clearTimeout(hard); resolve(); }
  });
}

/** The console build is older than its sources: build it (dist/console), as `make build` does. */
function buildConsoleIfStale(): void {
  const built = 'dist/console/app.js';
  const newest = (dir: string): number => Math.max(...readdirSync(dir, { withFileTypes: true }).map((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? newest(p) : statSync(p).mtimeMs;
  }));
  if (existsSync(built) && statSync(built).mtimeMs >= newest('src/console')) return;
  log('building the console (dist/console)');
  const r = spawnSync(process.execPath, ['scripts/build-console.mjs'], { stdio: 'inherit', timeout: 60_000 });
  if (r.status !== 0) throw new Error('the console build failed');
}

/** Starts the gateway on `configFile` (handed to `spawned` at once, to be stopped); resolves with its HTTP port once it logs "ready". */
function startGateway(configFile: string, spawned: (child: ChildProcess) => void): Promise<{ port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'run', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned(child);
  let tail = '';
  child.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString()).slice(-2000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway was not ready within 30 s: ${tail}`)), 30_000);
    let buf = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.includes('"msg":"ready"')) continue;
        clearTimeout(timer);
        resolve({ port: (JSON.parse(line) as { httpPort: number }).httpPort });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited (${code}) before it was ready: ${tail}`));
    });
  });
}

/**
 * A screenshot of the page from its top to the bottom of `selector` (plus a margin); the page's full width, or
 * with `narrow` up to the right edge of `selector` (plus the same margin as on its left).
 */
async function shoot(page: Page, selector: string, file: string, narrow = false): Promise<void> {
  const box = await page.locator(selector).boundingBox();
  if (!box) throw new Error(`${selector} is not on the page`);
  const full = page.viewportSize()!.width;
  const width = narrow ? Math.min(full, Math.ceil(box.x * 2 + box.width)) : full;
  const scrollY = await page.evaluate(() => window.scrollY);
  const height = Math.ceil(box.y + scrollY + box.height + 16);
  await page.screenshot({ path: file, clip: { x: 0, y: 0, width, height }, fullPage: true, animations: 'disabled', caret: 'hide' });
  log(`${path.relative(ROOT, file)}: ${width}×${height}, ${Math.round((await stat(file)).size / 1024)} KB`);
}

async function waitUntil(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const missing = existsSync(CHROMIUM) ? rigUnavailable() : `${CHROMIUM} is missing (apt-get install chromium)`;
  if (missing) throw new Error(missing);
  buildConsoleIfStale();
  mkdirSync(OUT, { recursive: true });

  const dir = await mkdtemp(path.join(tmpdir(), 'sg-shots-'));
  const rig = new DeviceRig(DEVICES);
  let gateway: ChildProcess | null = null;
  let browser: Browser | undefined;
  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    await browser?.close().catch(() => undefined);
    await stopChild(gateway);
    await rig.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  const watchdog = setTimeout(() => {
    log(`gave up after ${WHOLE_RUN_MS / 1000} s`);
    void cleanup().finally(() => process.exit(1));
  }, WHOLE_RUN_MS);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanup().finally(() => process.exit(130)));

  try {
    await rig.start();
    // A gateway just flashed, with the line's bus added and no device yet: what the guide starts from.
    const configFile = path.join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify({
      gateway: { id: 'shadowgate', data_dir: path.join(dir, 'data'), log_level: 'info' },
      http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, parity: 'none', stop_bits: 1 }],
      devices: [],
    }, null, 2));
    const started = await startGateway(configFile, (child) => (gateway = child));
    const base = `http://127.0.0.1:${started.port}`;
    log(`gateway on ${base}, rig on ${rig.master}`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 30_000 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));

    // 1. The doctor view after a run, at 1280 px.
    await page.goto(`${base}/#/doctor/rs485`);
    await page.waitForSelector('main h1:text-is("Bus doctor")');
    await page.waitForSelector('select option[value="rs485"]', { state: 'attached' });
    await page.fill('label:has-text("To") input', String(TO));
    await page.click('button:text-is("Run the doctor")');
    await page.waitForSelector('.doctor-progress progress');
    await page.waitForSelector('.doctor-report', { timeout: 120_000 });
    const units = await page.$$eval('.doctor-unit', (els) => els.map((e) => `${e.getAttribute('data-unit')} ${e.querySelector('.model')?.textContent ?? '?'}`));
    log(`units found: ${units.join(', ')}`);
    if (units.length !== 3) throw new Error(`expected the rig's three units, the doctor found: ${units.join(', ') || 'none'}`);
    // The first unit with other candidates (the relay board: an I/O board reads alike) unfolded, with each one's score and why.
    const folded = await page.$('.doctor-unit details summary');
    await folded?.click();
    await page.mouse.move(0, 0);
    await shoot(page, '.doctor-report', path.join(OUT, 'commissioning-doctor.png'));

    // 2. The same at 375 px (a phone), the candidates folded again.
    await folded?.click();
    await page.setViewportSize({ width: 375, height: 800 });
    await page.waitForTimeout(300);
    await shoot(page, '.doctor-report', path.join(OUT, 'commissioning-doctor-phone.png'));

    // 3. "Add" on unit 1: the add-device form filled in.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.click('.doctor-unit[data-unit="1"] a:text-is("Add")');
    await page.waitForSelector('main h1:text-is("Add a device")');
    await page.waitForFunction(() => (document.querySelector('select[size]') as HTMLSelectElement | null)?.value === 'eastron-sdm630');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.move(0, 0);
    await page.waitForTimeout(300);
    await shoot(page, 'main form', path.join(OUT, 'commissioning-add.png'), true);

    // What the user does next: a test read, save, and the device is polled.
    await page.click('button:text-is("Test read")');
    await page.waitForSelector('.probe [role="status"]', { timeout: 30_000 });
    log(`test read: ${await page.textContent('.probe [role="status"]')}`);
    await page.click('button:text-is("Save")');
    await page.waitForFunction(() => location.hash === '#/device/sdm630-1', undefined, { timeout: 15_000 });
    await waitUntil('sdm630-1 online', async () => {
      const r = await fetch(`${base}/api/v1/shadow/device?id=sdm630-1`).then((x) => x.json() as Promise<{ data?: { online?: boolean } }>, () => null);
      return r?.data?.online === true;
    }, 20_000);
    log('sdm630-1 saved and polled (online)');
    if (problems.length > 0) throw new Error(`page errors: ${problems.join('; ')}`);
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
}

main().then(() => process.exit(0), (e: Error) => {
  log(`failed: ${e.message}`);
  process.exit(1);
});
