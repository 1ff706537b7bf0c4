/**
 * The web console's figures (issue 14): first render of the devices page with 1,000 simulated devices,
 * and the gateway's RSS growth while three consoles stay open on a device page (live updates flowing).
 * Real browser (Debian's chromium via playwright-core) against the built gateway (dist/main.js).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startChild, writeFleetConfig } from './child.js';
import type { Result } from './report.js';

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function benchConsole(): Promise<Result[]> {
  if (!existsSync('/usr/bin/chromium')) {
    console.log('SKIP console bench: /usr/bin/chromium is missing');
    return [];
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bench-console-'));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    // 1,000 devices × 10 points changing? Constant points: the render is what is measured.
    await writeFleetConfig(path.join(dir, 'c.json'), path.join(dir, 'data'), 1000, 10, '1s');
    const gw = await startChild(path.join(dir, 'c.json'));
    try {
      const renders: number[] = [];
      for (let i = 0; i < 5; i++) {
        const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
        const t0 = performance.now();
        await page.goto(`http://127.0.0.1:${gw.port}/`);
        await page.waitForSelector('table.devices tbody tr >> nth=999', { timeout: 15_000 });
        renders.push(performance.now() - t0);
        await page.close();
      }
      renders.sort((a, b) => a - b);
      await sleep(3000);
      const before = rssMb(gw.child.pid!);
      const pages = [];
      for (let i = 0; i < 3; i++) {
        const page = await browser.newPage();
        await page.goto(`http://127.0.0.1:${gw.port}/#/`);
        pages.push(page);
      }
      await sleep(20_000);
      const after = rssMb(gw.child.pid!);
      for (const p of pages) await p.close();
      const config = '1,000 simulated devices × 10 points polled every 1 s, MQTT and history off, dist/main.js';
      return [
        { name: 'console: first render of the devices page, median of 5', measured: renders[2]!, target: 1000, unit: 'ms', higherIsBetter: false, note: config },
        { name: 'console: gateway RSS growth with 3 consoles open for 20 s', measured: after - before, target: 5, unit: 'MB', higherIsBetter: false,
          note: `${before.toFixed(1)} → ${after.toFixed(1)} MB; ${config}` },
      ];
    } finally {
      await gw.stop();
    }
  } finally {
    await browser.close();
    await rm(dir, { recursive: true, force: true });
  }
}
