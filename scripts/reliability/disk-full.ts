/**
 * Disk full (issue 15): the real gateway with its data dir on a small tmpfs; a filler file takes every free
 * page (ENOSPC) and is later removed, `cycles` times (disk-full/cycle.ts judges each). At the end the gateway
 * is stopped and started again on the same files: everything written before, between and after the fills
 * must load without a problem report, and history must serve what its whole blocks on disk hold.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { call } from '../../test/helpers/http.js';
import { COUNTER, DEVICE, writeRigConfig } from './kills/config.js';
import { historyOnDisk, readShadow } from './kills/disk-oracle.js';
import { describe, startGateway, type Gateway } from './kills/gateway.js';
import { watch, type Watch } from './kills/mqtt-watch.js';
import { fillAndFree, type CycleResult } from './disk-full/cycle.js';
import { diskFullUnavailable, mountTmpfs, unmount } from './disk-full/mount.js';
import type { Campaign, Row } from './table.js';

const GOAL = 'serves REST+MQTT while full, degraded naming ENOSPC, history drops counted, no crash, nothing on disk corrupted, resumes by itself';

/** The restart after the cycles: loads cleanly, restores the newest generation, serves history's whole blocks. */
async function restartCheck(configFile: string, dataDir: string, since: number, env: NodeJS.ProcessEnv): Promise<string[]> {
  const failures: string[] = [];
  const disk = await readShadow(dataDir);
  const until = Date.now();
  const hist = await historyOnDisk(dataDir, since, until + 1);
  const gw = await startGateway(configFile, 30_000, env);
  try {
    failures.push(...disk.bad.map((b) => `corrupt: ${b}`));
    failures.push(...gw.lines.filter((l) => l.level >= 40).map((l) => `restart logged ${describe(l)}`));
    const restored = gw.lines.find((l) => l.msg === 'shadow restored');
    if (restored?.['source'] !== disk.source) failures.push(`restart restored ${String(restored?.['source'])}, the files hold ${disk.source}`);
    const h = await call<{ ts: number }[]>(gw.httpPort, `/api/v1/history?device=${DEVICE}&point=${COUNTER}&start=${since}&end=${until}`);
    if (!h.body.success || h.body.data.length !== hist.ts.length) {
      failures.push(`history after restart: ${h.body.success ? h.body.data.length : h.body.errorMsg} samples, whole blocks hold ${hist.ts.length}`);
    }
  } finally {
    await gw.stop();
  }
  return failures;
}

export const diskFull: Campaign = async ({ reduced, log }) => {
  const cycles = reduced ? 1 : 5;
  const test = `disk full (ENOSPC on a 24 MB tmpfs) and freed, ${cycles} cycle${cycles > 1 ? 's' : ''}`;
  const why = diskFullUnavailable();
  if (why) return [{ test, trials: 0, survived: 0, lost: '?', figure: `not run: ${why}`, goal: GOAL, ok: false, note: why }];
  const root = await mkdtemp(path.join(os.tmpdir(), 'sg-rel-diskfull-'));
  const mnt = path.join(root, 'mnt');
  const dataDir = path.join(mnt, 'data');
  const filler = path.join(mnt, 'filler');
  const configFile = path.join(root, 'config.json');
  const env = { SHADOWGATE_TIMESYNC_FLAG: path.join(root, 'no-timesyncd', 'synchronized') };
  await mkdir(mnt);
  await writeRigConfig(configFile, { dataDir, persistInterval: '1s', poll: '100ms', fleet: 20, fleetPoints: 10, historyMaxDisk: '8MB' });
  let mounted = false;
  let gw: Gateway | undefined;
  let w: Watch | undefined;
  const results: CycleResult[] = [];
  const failed: string[] = [];
  const t0 = performance.now();
  try {
    mountTmpfs(mnt, '24m');
    mounted = true;
    const startedAt = Date.now();
    gw = await startGateway(configFile, 30_000, env);
    w = await watch(gw.mqttPort, 250, 0);
    for (let i = 0; i < cycles; i++) {
      const r = await fillAndFree(gw, w, { dataDir, mnt, filler });
      results.push(r);
      if (r.failures.length) failed.push(`cycle ${i + 1}: ${r.failures.join('; ')}`);
      log(`cycle ${i + 1}/${cycles}: ${r.failures.length ? `FAIL ${r.failures.join('; ')}` : 'ok'} (degraded after ${String(r.degradedAfterMs)} ms: ${r.reason}; `
        + `dropped ${r.dropped}; snapshot ${String(r.snapshotAfterMs)} ms, history ${String(r.historyAfterMs)} ms, retained ${String(r.retainedAfterMs)} ms, healthy ${String(r.healthyAfterMs)} ms after the free)`);
    }
    await w.close();
    w = undefined;
    await gw.stop();
    gw = undefined;
    const restart = await restartCheck(configFile, dataDir, startedAt, env);
    if (restart.length) failed.push(`restart: ${restart.join('; ')}`);
    log(`restart on the same files: ${restart.length ? `FAIL ${restart.join('; ')}` : 'ok'}`);
  } catch (err) {
    failed.push(`campaign: ${(err as Error).message}`);
  } finally {
    await w?.close().catch(() => {});
    await gw?.stop().catch(() => {});
    if (mounted) unmount(mnt);
    await rm(root, { recursive: true, force: true });
  }
  const worst = (f: (r: CycleResult) => number | null): string => {
    const xs = results.map(f);
    return xs.some((x) => x === null) ? 'never' : `${(Math.max(...(xs as number[])) / 1000).toFixed(1)} s`;
  };
  const survived = results.filter((r) => r.failures.length === 0).length;
  const row: Row = {
    test,
    trials: cycles,
    survived: failed.some((f) => f.startsWith('restart') || f.startsWith('campaign')) ? Math.min(survived, cycles - 1) : survived,
    lost: `${results.reduce((n, r) => n + r.dropped, 0)} history samples (dropped, counted); shadow: none (saved again ≤ ${worst((r) => r.snapshotAfterMs)} after space returned)`,
    figure: `while full: REST +${Math.min(...results.map((r) => r.restSteps))} counter steps, MQTT ${Math.min(...results.map((r) => r.mqttEvents))} events (min per cycle), `
      + `degraded ≤ ${worst((r) => r.degradedAfterMs)} ("${results[0]?.reason ?? '?'}"); after free: snapshot ≤ ${worst((r) => r.snapshotAfterMs)}, `
      + `history ≤ ${worst((r) => r.historyAfterMs)}, retained.json ≤ ${worst((r) => r.retainedAfterMs)}, healthy ≤ ${worst((r) => r.healthyAfterMs)}`,
    goal: GOAL,
    ok: failed.length === 0 && results.length === cycles,
  };
  if (failed.length) row.note = failed.join(' | ').slice(0, 1500);
  log(`disk-full: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return [row];
};
