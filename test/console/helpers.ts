/// <reference lib="dom" />
/** A real browser for the console tests: Debian's chromium driven by playwright-core (skipped without it). */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import * as assert from 'uvu/assert';

export const CHROMIUM = '/usr/bin/chromium';

export function browserUnavailable(): string | null {
  return existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing (apt-get install chromium; make test installs it)`;
}

export async function launch(): Promise<Browser> {
  // --no-sandbox: the tests run as root in CI, where chromium refuses its sandbox.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], timeout: 30_000 });
}

/** A page that records console errors, page errors and failed requests (a test asserts there are none). */
export async function openPage(browser: Browser, url: string, viewport = { width: 1200, height: 800 }): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(8000);
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // A navigation (reload, goto) aborts the old document's fetches still in flight: Chromium reports them
  // as ERR_ABORTED. Those are the test's doing, not the gateway's; any other failure is recorded.
  let navigatedAt = -Infinity;
  page.on('request', (r) => {
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) navigatedAt = performance.now();
  });
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText ?? '';
    if (why === 'net::ERR_ABORTED' && performance.now() - navigatedAt < 2000) return;
    problems.push(`request failed: ${r.url()} ${why}`);
  });
  await page.goto(url);
  return { page, problems };
}

/** Pixels of a canvas that differ from its first (background) pixel: a drawn plot has many. */
export async function drawnPixels(page: Page, selector: string): Promise<number> {
  return page.$eval(selector, (canvas) => {
    const c = canvas as HTMLCanvasElement;
    const ctx = c.getContext('2d');
    if (!ctx) return 0;
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      // Blue-ish stroke of the series (#1769aa), not grid lines (grey) nor background.
      if (data[i + 2]! > 120 && data[i]! < 80 && data[i + 3]! > 0) n++;
    }
    return n;
  });
}

/** How far the page scrolls sideways (0 when it fits). */
export const sideways = (page: Page): Promise<number> =>
  page.evaluate(() => document.scrollingElement!.scrollWidth - document.scrollingElement!.clientWidth);

/** The page fits a phone (375 px) and a desktop (1280 px) without scrolling sideways. */
export async function fits(page: Page, where: string): Promise<void> {
  for (const width of [375, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await page.waitForTimeout(100);
    const over = await sideways(page);
    assert.ok(over <= 0, `${where} scrolls sideways by ${over}px at ${width}px`);
  }
}
