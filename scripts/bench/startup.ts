/**
 * Start-to-ready with 100k points restored (the gateway bench's last figure), alone, so builds can be
 * compared without the RSS and REST runs:
 *   node --import tsx scripts/bench/startup.ts [--runs N] [ENTRY...]
 * ENTRY is a tsc build's main.js or a release bundle's shadowgate.mjs (default: dist/main.js, and
 * build/shadowgate/shadowgate.mjs when it exists). The entries are started round-robin, so load from
 * other work on the machine (an image build under qemu) falls on each of them alike.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUNDLE, entryOf, MAIN, startChild, writeFleetConfig, type Entry } from './child.js';
import { report, type Result } from './report.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A 1,000 × 100 fleet config whose data dir holds a saved snapshot of all 100k points. */
export async function writeRestoredFleet(dir: string): Promise<string> {
  const file = path.join(dir, 'fleet.json');
  await writeFleetConfig(file, path.join(dir, 'fleet-data'), 1000, 100);
  const first = await startChild(file);
  await settle(2500); // every device polled once, so the snapshot has every point
  await first.stop(); // the final save is the snapshot the next starts restore
  return file;
}

/** Start-to-ready times (ms) of each entry, `runs` starts each, interleaved. */
export async function startToReady(configFile: string, entries: readonly Entry[], runs: number): Promise<number[][]> {
  const times = entries.map((): number[] => []);
  for (let i = 0; i < runs; i++) {
    for (const [k, entry] of entries.entries()) {
      const running = await startChild(configFile, 30_000, entry);
      times[k]!.push(running.readyMs);
      await running.stop();
    }
  }
  return times;
}

export function startupResults(entries: readonly Entry[], times: readonly number[][]): Result[] {
  return entries.map((entry, k) => {
    const sorted = [...times[k]!].sort((a, b) => a - b);
    const rel = path.relative(process.cwd(), entry.file);
    const label = entry.file === MAIN ? 'dist/main.js' : entry.file === BUNDLE ? 'release bundle' : rel.startsWith('..') ? entry.file : rel;
    return {
      name: `start-to-ready, 100k points restored, ${label} (median of ${sorted.length})`,
      measured: sorted[Math.floor(sorted.length / 2)]!, target: 500, unit: 'ms', higherIsBetter: false,
      note: `min ${Math.round(sorted[0]!)} ms, max ${Math.round(sorted.at(-1)!)} ms, process spawn included`,
    };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({ options: { runs: { type: 'string', default: '5' } }, allowPositionals: true });
  const entries = positionals.length > 0
    ? positionals.map(entryOf)
    : [entryOf(MAIN), ...(existsSync(BUNDLE) ? [entryOf(BUNDLE)] : [])];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bench-'));
  try {
    const config = await writeRestoredFleet(dir);
    report(startupResults(entries, await startToReady(config, entries, Math.max(1, Number(values.runs) || 5))));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
