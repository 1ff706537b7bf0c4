/**
 * What one restart after a SIGKILL must show, judged against what a client saw before the kill and what the
 * files held (read before the restart). Each check adds a failure text; an empty list means "survived".
 */
import { call } from '../../../test/helpers/http.js';
import { COUNTER, DEVICE, SETPOINT } from './config.js';
import type { ShadowOnDisk } from './disk-oracle.js';
import type { Gateway } from './gateway.js';
import type { Retained, Seen } from './mqtt-watch.js';

/** What was known at the kill of the previous run. */
export interface BeforeKill {
  killAt: number;
  /** ms the gateway had run (ready → kill). */
  uptime: number;
  lastSeen: Seen | null;
  /** Counter values a client saw, with their update times. */
  seen: Map<number, number>;
  write: { value: number; ackAt: number } | null;
  retainedAcked: Retained | null;
  disk: ShadowOnDisk;
  /** A generation was on disk before this run (so one must be there after its kill too). */
  savedBefore: boolean;
  retainedOnDisk: Retained | null;
  /** Why retained.json did not parse (null: it did, or there is none). */
  retainedCorrupt: string | null;
  history: { count: number; lastTs: number | null };
  historyFrom: number;
  /** Longest save the gateway reported (/health/shadow, polled) during the run, ms. */
  maxSaveMs: number;
}

export interface Judged {
  failures: string[];
  /** Shadow loss, ms: counter updates a client saw that the restore lacks, times the poll period. */
  lossMs: number;
  writeChecked: boolean;
  /** Retained messages acknowledged but not in retained.json, times their period, ms. */
  retainedLagMs: number | null;
  historyLagMs: number | null;
  tornTails: number;
  /** Bytes after the shadow journal's last whole record (a kill mid-append), ignored by the load. */
  tornJournal: number;
  staleTemps: number;
}

/** Startup log lines a kill may legitimately cause (the designs' own recoveries, not corruption). */
const BENIGN = [
  'removed temp files left by an interrupted save',
  'history: torn tail truncated to the last whole record',
];

/**
 * What the restored counter must be, given the updates a client saw: the snapshot is one instant of the
 * event loop, stamped with the same millisecond clock as the updates (Date.now()). An update stamped before
 * that millisecond was applied before the snapshot and must be in it; one stamped in the save's own
 * millisecond may have come just before or just after it (a poll timer due in the same ms), so either is
 * right; none from after the save can be in it.
 */
export function snapshotOrder(seen: ReadonlyMap<number, number>, r: { value: number; updatedAt: number }, savedAt: number): string[] {
  const failures: string[] = [];
  const before = [...seen].filter(([, ts]) => ts < savedAt).sort((x, y) => y[1] - x[1])[0];
  if (before && r.value < before[0]) failures.push(`restored counter ${r.value}, but ${before[0]} was seen at ${before[1]}, before the save at ${savedAt}`);
  if (r.updatedAt > savedAt) failures.push(`restored counter ${r.value} updated at ${r.updatedAt}, after the save at ${savedAt}`);
  const seenAt = seen.get(r.value);
  // A restored value a client had seen must carry the same update time (a mixed-up or stale file would not).
  if (seenAt !== undefined && seenAt !== r.updatedAt) failures.push(`restored counter ${r.value} at ${r.updatedAt}, a client saw it at ${seenAt}`);
  return failures;
}

export async function judgeRestart(gw: Gateway, b: BeforeKill, persistMs: number, flushMs: number, pollMs: number, retainEveryMs: number): Promise<Judged> {
  const failures: string[] = [];
  const j: Judged = { failures, lossMs: 0, writeChecked: false, retainedLagMs: null, historyLagMs: null, tornTails: 0, tornJournal: b.disk.tornJournal, staleTemps: 0 };
  // Files: every generation validates (temp + rename: a kill cannot tear one), retained.json parses.
  failures.push(...b.disk.bad.map((x) => `corrupt shadow file ${x}`));
  if (b.retainedCorrupt) failures.push(`corrupt retained.json: ${b.retainedCorrupt}`);
  for (const l of gw.lines) {
    if (l.level < 40) continue;
    if (l.msg === BENIGN[0]) j.staleTemps++;
    else if (l.msg === BENIGN[1]) j.tornTails++;
    else failures.push(`startup logged ${l.level >= 50 ? 'error' : 'warning'} "${l.msg}" ${JSON.stringify(l['problem'] ?? l['err'] ?? l['file'] ?? '')}`);
  }
  const restored = gw.lines.find((l) => l.msg === 'shadow restored');
  // Nothing on disk is legitimate only before the first save ever (a kill within the first interval).
  if (!b.disk.counter && b.savedBefore) failures.push('no shadow generation with m1 on disk, though one was saved before');
  else if (b.disk.counter && !restored) failures.push('no "shadow restored" at start');
  else if (restored && (restored['seq'] !== b.disk.seq || restored['source'] !== b.disk.source)) {
    failures.push(`restored ${String(restored['source'])}, the files hold ${b.disk.source}`);
  }

  // Loss: the counter steps once per poll, so the updates a client saw and the restore does not hold are
  // (last seen − restored) polls; times the poll period, the time of updates lost. Downtime between runs is no
  // loss (nothing was measured then), which a difference of timestamps would count.
  const r = b.disk.counter;
  if (b.lastSeen) j.lossMs = Math.max(0, b.lastSeen.value - (r?.value ?? 0)) * pollMs;
  if (r) failures.push(...snapshotOrder(b.seen, r, b.disk.savedAt));
  if (j.lossMs > persistMs) {
    failures.push(`lost ${j.lossMs / pollMs} updates = ${j.lossMs} ms (> persist_interval ${persistMs} ms): killed ${b.killAt - b.disk.savedAt} ms after`
      + ` the restored snapshot, ${b.uptime} ms after ready; saves took up to ${b.maxSaveMs} ms`);
  }
  // The running gateway resumed from the restored counter (the simulated meter counts on from the shadow).
  const now = await call<{ value: number | null }>(gw.httpPort, `/api/v1/shadow/devicePoint?id=${DEVICE}&point=${COUNTER}`);
  const v = now.body.data?.value;
  if (r && (typeof v !== 'number' || v < r.value)) failures.push(`counter over REST is ${String(v)} after restart, restored ${r.value}`);

  // A write acknowledged before the snapshot that was restored must be in it, and served.
  const dev = await call<{ points: { name: string; write_value: number | null }[] }>(gw.httpPort, `/api/v1/shadow/device?id=${DEVICE}`);
  const served = dev.body.data?.points?.find((p) => p.name === SETPOINT)?.write_value ?? null;
  if (served !== b.disk.write) failures.push(`write value over REST ${String(served)}, on disk ${String(b.disk.write)}`);
  if (b.write) {
    j.writeChecked = true;
    if (b.disk.savedAt >= b.write.ackAt && b.disk.write !== b.write.value) {
      failures.push(`write ${b.write.value} acknowledged before the restored save, restored ${String(b.disk.write)}`);
    }
  }

  // Retained: retained.json parsed (else readRetained threw before) and the broker replayed what it holds.
  // Its lag in messages (one every retainEveryMs), so the downtime between runs does not count.
  if (b.retainedAcked) j.retainedLagMs = Math.max(0, b.retainedAcked.seq - (b.retainedOnDisk?.seq ?? 0)) * retainEveryMs;

  // History: served exactly up to the last whole block on disk.
  const h = await call<{ ts: number }[]>(gw.httpPort, `/api/v1/history?device=${DEVICE}&point=${COUNTER}&start=${b.historyFrom}&end=${b.killAt}`);
  if (!h.body.success) failures.push(`history query failed: ${h.body.errorMsg}`);
  else {
    const rows = h.body.data;
    const lastTs = rows.length ? rows[rows.length - 1]!.ts : null;
    if (rows.length !== b.history.count || lastTs !== b.history.lastTs) {
      failures.push(`history served ${rows.length} samples up to ${String(lastTs)}, whole blocks on disk hold ${b.history.count} up to ${String(b.history.lastTs)}`);
    }
    // Only a run longer than a flush has written blocks of its own: the lag of shorter ones says nothing.
    // History opens just after "ready" (a small store opens in ms), so a run of flushMs after ready has had its
    // first flush (0.5 s of slack).
    const flushed = b.uptime > flushMs + 500;
    if (lastTs !== null && flushed) j.historyLagMs = b.killAt - lastTs;
    // Blocks are appended every flushMs: a run longer than that has its data on disk to within one flush.
    if (flushed && (lastTs === null || b.killAt - lastTs > flushMs + 2000)) {
      failures.push(`history ends ${lastTs === null ? 'nowhere' : `${b.killAt - lastTs} ms`} before a kill after ${b.uptime} ms of running`);
    }
  }
  return j;
}
