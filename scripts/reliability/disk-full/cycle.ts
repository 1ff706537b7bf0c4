/**
 * One fill/free cycle against a running gateway whose data dir is on a small tmpfs. While full it must keep
 * serving REST and MQTT with changing values, say `degraded` naming ENOSPC, count the history samples it
 * drops, not crash or restart, and change no file already on disk. After the filler is removed it must
 * resume by itself: a new snapshot, history blocks with samples from after the free, retained.json with what
 * a client retained while full, and health back to healthy.
 */
import { historyOnDisk, readRetained, readShadow } from '../kills/disk-oracle.js';
import type { Gateway } from '../kills/gateway.js';
import type { Watch } from '../kills/mqtt-watch.js';
import { changed, digests, fillUp, free } from './mount.js';
import { counter, health, metrics, sleep, within } from './probe.js';

export interface CycleResult {
  failures: string[];
  /** History samples the gateway counted as dropped during this cycle. */
  dropped: number;
  reason: string;
  degradedAfterMs: number | null;
  /** REST counter steps and MQTT counter events seen while full. */
  restSteps: number;
  mqttEvents: number;
  snapshotAfterMs: number | null;
  historyAfterMs: number | null;
  retainedAfterMs: number | null;
  healthyAfterMs: number | null;
}

const ENOSPC = /ENOSPC|no space/i;
const DROPPED = 'shadowgate_history_dropped_samples_total';

export async function fillAndFree(gw: Gateway, w: Watch, o: { dataDir: string; mnt: string; filler: string }): Promise<CycleResult> {
  const port = gw.httpPort;
  const failures: string[] = [];
  const res: CycleResult = { failures, dropped: 0, reason: '', degradedAfterMs: null, restSteps: 0, mqttEvents: 0, snapshotAfterMs: null, historyAfterMs: null, retainedAfterMs: null, healthyAfterMs: null };
  // Fill just after a history flush, so the full period spans the next one (they come every 10 s).
  const flushes = (await metrics(port)).get('shadowgate_history_flushes_total') ?? 0;
  await within(12_000, async () => ((await metrics(port)).get('shadowgate_history_flushes_total') ?? 0) > flushes);
  const dropped0 = (await metrics(port)).get(DROPPED) ?? 0;
  const fillAt = Date.now();
  await fillUp(o.filler);
  let topping = false;
  const topper = setInterval(() => {
    if (topping) return;
    topping = true;
    void fillUp(o.filler).catch(() => 0).finally(() => (topping = false));
  }, 200);
  let seqFull = 0;
  let ackedFull = null;
  try {
    const deg = await within(5000, async () => {
      const h = await health(port);
      return h.status !== 'healthy' && Object.values(h.errors).some((e) => ENOSPC.test(e)) ? h : null;
    });
    if (!deg) failures.push('/health/shadow did not turn degraded naming ENOSPC within 5 s of the disk filling');
    else {
      res.degradedAfterMs = Date.now() - fillAt;
      res.reason = Object.entries(deg.errors).filter(([, e]) => ENOSPC.test(e)).map(([k, e]) => `${k}: ${e}`).join('; ');
    }
    const before = await digests(o.mnt, o.filler);
    const c0 = await counter(port);
    const e0 = w.eventsSince(0);
    const dropped = await within(12_000, async () => {
      const d = (await metrics(port)).get(DROPPED) ?? 0;
      return d > dropped0 ? d : null;
    });
    if (dropped === null) failures.push('no history samples counted as dropped across a flush while full');
    else res.dropped = dropped - dropped0;
    // A message retained while full, then the client goes quiet: retained.json must catch up by itself.
    const acked0 = w.acked()?.seq ?? 0;
    await within(3000, async () => (w.acked()?.seq ?? 0) > acked0);
    w.pause();
    await sleep(1500); // past retained.json's 1 s debounce: its write has failed by now
    const c1 = await counter(port);
    res.restSteps = (c1 ?? 0) - (c0 ?? 0);
    res.mqttEvents = w.eventsSince(0) - e0;
    if (c0 === null || c1 === null || res.restSteps <= 0) failures.push(`REST counter did not advance while full (${String(c0)} → ${String(c1)})`);
    if (res.mqttEvents <= 0) failures.push('no MQTT counter events while full');
    if (!gw.alive() || gw.lines.filter((l) => l.msg === 'ready').length !== 1) failures.push('the gateway exited or restarted while full');
    const h = await health(port);
    seqFull = h.persistSeq;
    // Every reason the report gives by now (persistence at its first failed save, history at its first flush).
    res.reason = Object.entries(h.errors).map(([k, e]) => `${k}: ${e}`).join('; ') || res.reason;
    if (h.status === 'healthy') failures.push('/health/shadow healthy while the disk is full');
    if (!ENOSPC.test(h.errors['history'] ?? '')) failures.push(`/health/shadow does not say why history drops samples (history: ${h.errors['history'] ?? 'no error'})`);
    ackedFull = w.acked();
    // Nothing already on disk changes while it is full (every write that fails is rolled back whole). New
    // files may appear (a temp file, history's next log when the last flush rolled it): they are not data
    // that was on disk, and the restart at the end loads them.
    const moved = changed(before, await digests(o.mnt, o.filler)).filter((f) => !f.endsWith(' appeared') && !f.endsWith('.tmp removed'));
    if (moved.length) failures.push(`files changed while full: ${moved.join(', ')}`);
    const disk = await readShadow(o.dataDir);
    if (disk.bad.length) failures.push(`shadow generations corrupt while full: ${disk.bad.join('; ')}`);
    // Every save the gateway reported done must load: a write cut short without an error would count as done.
    const lag = h.lastSaveAt - h.lastSaveMs - disk.savedAt;
    if (h.lastSaveAt > 0 && lag > 20) failures.push(`the last save reported done does not load: the disk restores one ${Math.round(lag)} ms older`);
    await readRetained(o.dataDir).catch((err: unknown) => failures.push(`retained.json corrupt while full: ${(err as Error).message}`));
  } finally {
    clearInterval(topper);
    while (topping) await sleep(20);
    await free(o.filler);
  }
  const freeAt = Date.now();
  // Resumes by itself: each recovery timed on its own, all watched at once.
  const since = (): number => Date.now() - freeAt;
  const acked = ackedFull as { seq: number } | null;
  const [snap, hist, kept, healthy] = await Promise.all([
    within(5000, async () => {
      const h = await health(port);
      return h.persistSeq > seqFull && !h.errors['persistence'] ? since() : null;
    }),
    within(15_000, async () => ((await historyOnDisk(o.dataDir, freeAt, Date.now() + 1)).ts.length > 0 ? since() : null)),
    acked ? within(10_000, async () => (((await readRetained(o.dataDir))?.seq ?? 0) >= acked.seq ? since() : null)) : Promise.resolve(0),
    within(15_000, async () => ((await health(port)).status === 'healthy' ? since() : null)),
  ]);
  w.resume();
  res.snapshotAfterMs = snap;
  res.historyAfterMs = hist;
  res.retainedAfterMs = kept;
  res.healthyAfterMs = healthy;
  if (snap === null) failures.push('no new shadow snapshot within 5 s of space returning');
  if (hist === null) failures.push('no history samples from after the free on disk within 15 s');
  if (kept === null) failures.push(`retained.json did not catch up with the message retained while full (seq ${acked?.seq}) within 10 s`);
  if (healthy === null) failures.push(`/health/shadow not healthy 15 s after space returned: ${JSON.stringify((await health(port)).errors)}`);
  return res;
}
