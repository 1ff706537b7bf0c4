/**
 * One run of the gateway up to its SIGKILL: an optional write over REST at a random moment, the kill after
 * `delayMs` from ready, then what a client had seen and what the files hold (read before any restart).
 */
import { call } from '../../../test/helpers/http.js';
import type { BeforeKill } from './checks.js';
import { DEVICE, SETPOINT } from './config.js';
import { historyOnDisk, readRetained, readShadow } from './disk-oracle.js';
import type { Gateway } from './gateway.js';
import type { Watch } from './mqtt-watch.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface RunOptions {
  dataDir: string;
  readyAt: number;
  delayMs: number;
  /** Write this value to m1's setpoint at a random moment before the kill (null: no write). */
  writeValue: number | null;
  savedBefore: boolean;
}

export async function runUntilKill(gw: Gateway, w: Watch, o: RunOptions): Promise<BeforeKill> {
  let maxSaveMs = 0;
  // The gateway's own save durations, to explain a loss beyond the bound.
  const poller = setInterval(() => {
    void call<{ checks: { persistence: { lastSaveMs: number } } }>(gw.httpPort, '/api/v1/health/shadow')
      .then((h) => (maxSaveMs = Math.max(maxSaveMs, h.body.data.checks.persistence.lastSaveMs)), () => {});
  }, 200);
  let write: BeforeKill['write'] = null;
  let killAt: number;
  try {
    if (o.writeValue !== null) {
      await sleep(Math.random() * o.delayMs * 0.9);
      const res = await call(gw.httpPort, `/api/v1/device/writePoint?id=${DEVICE}&point=${SETPOINT}&value=${o.writeValue}`);
      if (res.body.success) write = { value: o.writeValue, ackAt: Date.now() };
    }
    await sleep(Math.max(0, o.readyAt + o.delayMs - Date.now()));
  } finally {
    clearInterval(poller);
    killAt = Date.now();
    await gw.kill();
  }
  const lastSeen = w.last();
  const retainedAcked = w.acked();
  const historyFrom = killAt - 60_000;
  const hist = await historyOnDisk(o.dataDir, historyFrom, killAt + 1);
  let retainedOnDisk = null;
  let retainedCorrupt: string | null = null;
  try {
    retainedOnDisk = await readRetained(o.dataDir);
  } catch (err) {
    retainedCorrupt = (err as Error).message;
  }
  return {
    killAt, uptime: killAt - o.readyAt, lastSeen, seen: w.seen, write, retainedAcked,
    disk: await readShadow(o.dataDir), savedBefore: o.savedBefore, retainedOnDisk, retainedCorrupt,
    history: { count: hist.ts.length, lastTs: hist.ts.length ? Math.max(...hist.ts) : null }, historyFrom, maxSaveMs,
  };
}
