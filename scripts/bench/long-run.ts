/**
 * The long-run memory figure: fleet F (every shipped feature on, 10% of 100,000 values changing every second)
 * with a small `history.max_disk`, so the history fills it within minutes and then seals and drops segments
 * as a full card does for good; RSS is sampled before the history is full and after, and the figure is the
 * growth between the first minutes of a full history and the window's end (what a gateway holds per sealed
 * segment shows here as growth). No MQTT subscriber: the broker's outbox is the footprint bench's concern.
 * Knobs: LONGRUN_MAX_DISK (default 64MB: 2 MiB segments, about 30 of them sealed at once, where the default
 * 512MB holds about 60 of 8 MiB), LONGRUN_MIN (default 20 minutes).
 * Run alone: `node --import tsx scripts/bench/long-run.ts` (the release bundle when built: make dist).
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, dirBytes, entryOf, MAIN, rssOf, startChild } from './child.js';
import { describeFleet, FLEET_F, fleetConfig } from './fleet-f.js';
import { freePort } from '../../test/drivers/modbus-rig.js';
import { report } from './report.js';

const MAX_DISK = process.env.LONGRUN_MAX_DISK ?? '64MB';
const MINUTES = Number(process.env.LONGRUN_MIN ?? 20);
const MB = 2 ** 20;
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sealed = (dir: string): number => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.seg')).length : 0);

export async function benchLongRun(): Promise<void> {
  const entry = existsSync(BUNDLE) ? entryOf(BUNDLE) : entryOf(MAIN);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-longrun-'));
  const dataDir = path.join(dir, 'data');
  const historyDir = path.join(dataDir, 'history');
  const config = fleetConfig(dataDir, { http: await freePort(), mqtt: await freePort(), ws: await freePort() }, FLEET_F);
  (config.history as Record<string, unknown>).max_disk = MAX_DISK;
  const file = path.join(dir, 'fleet.json');
  await writeFile(file, JSON.stringify(config));
  const cfg = `${describeFleet(FLEET_F).replace(/ \+ 1 subscriber to [^,]*/, ' (no subscriber)')}; history.max_disk ${MAX_DISK}; ${entry.file === BUNDLE ? 'release bundle, the unit\'s flags' : 'dist/main.js'}; ${MINUTES} min`;
  console.log(`long run: ${cfg}`);
  const gw = await startChild(file, 90_000, entry);
  const samples: { min: number; rss: number; disk: number; segs: number }[] = [];
  let fullAt: number | null = null;
  try {
    const t0 = performance.now();
    const limit = Number(/^(\d+)MB$/.exec(MAX_DISK)?.[1] ?? 64) * MB;
    while (performance.now() - t0 < MINUTES * 60_000) {
      await settle(30_000);
      const min = (performance.now() - t0) / 60_000;
      const s = { min, rss: rssOf(gw.child.pid!), disk: dirBytes(historyDir), segs: sealed(historyDir) };
      samples.push(s);
      if (fullAt === null && s.disk >= 0.85 * limit) fullAt = min;
      console.log(`  t=${min.toFixed(1)} min RSS ${(s.rss / MB).toFixed(1)} MB, history ${(s.disk / MB).toFixed(1)} MB in ${s.segs} sealed segments${fullAt !== null ? ' (full)' : ''}`);
    }
  } finally {
    await gw.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const full = fullAt === null ? [] : samples.filter((s) => s.min >= fullAt!);
  if (full.length < 4) {
    console.log(`MISS long run: the history did not fill ${MAX_DISK} with enough time left (full at ${fullAt?.toFixed(1) ?? 'never'} min)`);
    return;
  }
  const head = full.slice(0, 3);
  const tail = full.slice(-3);
  const mean = (xs: typeof full) => xs.reduce((a, s) => a + s.rss, 0) / xs.length;
  const growth = (mean(tail) - mean(head)) / MB;
  const maxSegs = Math.max(...full.map((s) => s.segs));
  report([{
    name: 'memory: RSS growth once the history is full (sealing and dropping segments)', measured: growth, target: 5, unit: 'MB', higherIsBetter: false,
    note: `${(mean(head) / MB).toFixed(1)} → ${(mean(tail) / MB).toFixed(1)} MB (means of the first and last 3 samples after full at ${fullAt!.toFixed(1)} min), up to ${maxSegs} sealed segments; ${cfg}`,
  }]);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchLongRun();
