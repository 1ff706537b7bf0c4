/**
 * Kills (issue 15): SIGKILL the real gateway at random moments while the shadow is persisted every
 * persist_interval, history appends (and seals) and a client's retained message keeps retained.json
 * rewriting; restart on the same data_dir each time and judge the restart (kills/checks.ts): it gets ready,
 * restores the newest valid generation, loses at most one persist_interval of what a client saw, keeps an
 * acknowledged write, leaves no corrupt file, replays the retained message, serves history to its last
 * whole block. Before some kills a value is written over REST.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { judgeRestart, type BeforeKill, type Judged } from './kills/checks.js';
import { writeRigConfig } from './kills/config.js';
import { startGateway, type Gateway } from './kills/gateway.js';
import { watch, type Watch } from './kills/mqtt-watch.js';
import { runUntilKill } from './kills/run-once.js';
import type { Campaign, Row } from './table.js';

const PERSIST_MS = 1000;
const POLL_MS = 100;
/** A client retains a message this often (retained.json is rewritten at most once a second). */
const RETAIN_EVERY_MS = 250;
/** The history store's flush period (src/store/history/store.ts default; not configurable). */
const FLUSH_MS = 10_000;
const MAX_DELAY_MS = 12_000;
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : 0;
};

export const kills: Campaign = async ({ reduced, log }) => {
  const trials = reduced ? 5 : 200;
  const root = await mkdtemp(path.join(os.tmpdir(), 'sg-rel-kills-'));
  const dataDir = path.join(root, 'data');
  const configFile = path.join(root, 'config.json');
  // A flag file in a directory that does not exist: "no timesyncd", so saved times count as trusted ages.
  const env = { SHADOWGATE_TIMESYNC_FLAG: path.join(root, 'no-timesyncd', 'synchronized') };
  await writeRigConfig(configFile, { dataDir, persistInterval: `${PERSIST_MS}ms`, poll: `${POLL_MS}ms`, fleet: 20, fleetPoints: 10, historyMaxDisk: '8MB' });
  let gw: Gateway | undefined;
  let w: Watch | undefined;
  const judged: Judged[] = [];
  const failed: string[] = [];
  let notReady = 0;
  let retainedSeq = 0;
  let before: BeforeKill | null = null;
  let everSaved = false;
  const t0 = performance.now();
  try {
    for (let k = 0; k <= trials; k++) {
      try {
        gw = await startGateway(configFile, 30_000, env);
      } catch (err) {
        // Not even ready: this restart failed; the data dir is what the next start gets too.
        notReady++;
        failed.push(`kill ${k}: ${(err as Error).message}`);
        before = null;
        continue;
      }
      const readyAt = Date.now();
      w = await watch(gw.mqttPort, RETAIN_EVERY_MS, retainedSeq);
      if (before) {
        const j = await judgeRestart(gw, before, PERSIST_MS, FLUSH_MS, POLL_MS, RETAIN_EVERY_MS);
        const replayed = w.replayed;
        if ((replayed?.seq ?? null) !== (before.retainedOnDisk?.seq ?? null)) {
          j.failures.push(`broker replayed retained seq ${String(replayed?.seq)}, retained.json holds ${String(before.retainedOnDisk?.seq)}`);
        }
        judged.push(j);
        if (j.failures.length) failed.push(`kill ${k}: ${j.failures.join('; ')}`);
        log(`kill ${k}/${trials}: ${j.failures.length ? `FAIL ${j.failures.join('; ')}` : 'ok'} (loss ${j.lossMs} ms, history lag ${String(j.historyLagMs)} ms)`);
      }
      if (k === trials) break;

      // Full: uniform over 0.2–12 s (across persist ticks and history flushes). Reduced: short runs, and the
      // last one past a history flush, so its restart must serve blocks written in that run.
      const delay = !reduced ? 200 + Math.round(Math.random() * MAX_DELAY_MS)
        : k < trials - 1 ? 200 + Math.round(Math.random() * 2800) : FLUSH_MS + 1000 + Math.round(Math.random() * 1000);
      before = await runUntilKill(gw, w, {
        dataDir, readyAt, delayMs: delay, savedBefore: everSaved,
        writeValue: k % 2 === 1 ? 100 + k + Math.round(Math.random() * 1000) / 1000 : null,
      });
      retainedSeq = before.retainedAcked?.seq ?? retainedSeq;
      everSaved ||= before.disk.seq > 0;
      await w.close();
      w = undefined;
      gw = undefined;
    }
  } finally {
    await w?.close().catch(() => {});
    await gw?.stop().catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
  const losses = judged.map((j) => j.lossMs);
  const worst = Math.max(0, ...losses);
  const survived = judged.filter((j) => j.failures.length === 0).length;
  const corrupt = failed.filter((f) => /corrupt/.test(f)).length;
  const retainedLag = Math.max(0, ...judged.map((j) => j.retainedLagMs ?? 0));
  const lags = judged.flatMap((j) => (j.historyLagMs === null ? [] : [j.historyLagMs]));
  const histLag = lags.length ? `${(Math.max(...lags) / 1000).toFixed(1)} s` : 'n/a';
  const row: Row = {
    test: 'SIGKILL during ingest (shadow persist 1 s, history, MQTT retained)',
    trials,
    survived,
    lost: `≤ ${(worst / 1000).toFixed(2)} s of shadow updates`,
    figure: `restored ${survived}/${trials}; loss worst ${worst} ms, p50 ${pct(losses, 0.5)} ms vs persist_interval ${PERSIST_MS} ms; `
      + `${corrupt} corrupt files; ${judged.filter((j) => j.writeChecked).length} writes checked; `
      + `torn tails cut: history ${judged.reduce((n, j) => n + j.tornTails, 0)}, journal ${judged.filter((j) => j.tornJournal > 0).length}; history on disk to ≤ ${histLag} before the kill (${lags.length} runs > 1 flush), retained.json ≤ ${(retainedLag / 1000).toFixed(2)} s behind`,
    goal: `${trials}/${trials} restored, no corrupt file, loss ≤ 1 persist_interval, history readable to its last whole block`,
    ok: survived === trials && notReady === 0 && failed.length === 0,
  };
  if (failed.length) row.note = `${failed.length} failed: ${failed.slice(0, 5).join(' | ')}${failed.length > 5 ? ' …' : ''}`;
  log(`kills: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return [row];
};
