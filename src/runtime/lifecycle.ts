/**
 * Restores and factory resets are carried out at the gateway's start, right after it took the data_dir lock
 * and before anything there is read: no part holds a file open that is being replaced, and a power cut in
 * the middle is finished at the next start (each step is a rename, and the request is removed last).
 *   1. `factory-reset.pending` (POST /system/reset, or the boot partition's file): data_dir is emptied.
 *   2. `restore-upload.tar.gz` (a backup boot-config took from the boot partition): read and checked like
 *      an upload (backup-read.ts); a bad one is reported and removed, nothing else changes.
 *   3. `restore.pending/` (a checked restore): its config (and history) take the place of the old ones.
 * The outcome is kept in `lifecycle.json` and shown in /health/shadow as `lifecycle`.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteFile, fsyncDir } from '../util/atomic-file.js';
import { LIFECYCLE_FILES as F } from '../util/lifecycle-files.js';
import { LOCK_FILE } from './data-dir-lock.js';
import { UPDATE_FILES } from '../store/update-status.js';
import { PENDING_INFO, RestoreError, STAGING_PREFIX, stageRestore, type StageOptions } from './backup-read.js';

export interface LifecycleStatus {
  action: 'restore' | 'reset';
  ok: boolean;
  /** Wall time it was carried out, ISO 8601. */
  at: string;
  /** `console` (REST) or `boot partition`. */
  source: string;
  message: string;
}

const exists = (file: string): Promise<boolean> => readdir(path.dirname(file)).then((n) => n.includes(path.basename(file)), () => false);

/** Asks for a reset at the next start (the marker says who asked). */
export async function requestReset(dataDir: string, source: string, now: Date): Promise<void> {
  await atomicWriteFile(path.join(dataDir, F.resetPending), JSON.stringify({ source, at: now.toISOString() }));
}

async function readJsonFile(file: string): Promise<Record<string, unknown>> {
  try {
    const v = JSON.parse(await readFile(file, 'utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Everything in data_dir goes but the lock, a backup waiting to be restored on the emptied directory, and the
 * system update's directory (the root update service's status and a bundle it may be installing: not the
 * gateway's data).
 */
async function reset(dataDir: string): Promise<void> {
  const keep = new Set<string>([LOCK_FILE, F.resetPending, F.restoreUpload, UPDATE_FILES.dir]);
  for (const name of await readdir(dataDir)) {
    if (!keep.has(name)) await rm(path.join(dataDir, name), { recursive: true, force: true });
  }
  await fsyncDir(dataDir);
}

/** Moves a staged restore's directories into place; repeatable after a power cut at any step. */
async function applyStaged(dataDir: string): Promise<void> {
  const staged = path.join(dataDir, F.restorePending);
  const old = path.join(dataDir, '.restore-old');
  await mkdir(old, { recursive: true });
  for (const part of ['config', 'history']) {
    if (!(await exists(path.join(staged, part)))) continue;
    if (await exists(path.join(dataDir, part))) {
      await rm(path.join(old, part), { recursive: true, force: true });
      await rename(path.join(dataDir, part), path.join(old, part));
    }
    await rename(path.join(staged, part), path.join(dataDir, part));
    await fsyncDir(dataDir);
  }
  await rm(old, { recursive: true, force: true });
  await rm(staged, { recursive: true, force: true });
  await fsyncDir(dataDir);
}

const describe = (info: Record<string, unknown>): string =>
  `restored the backup of ${String(info.gateway_id)} made ${String(info.created)} (${String(info.config_versions)} configuration versions${info.history ? `, ${String(info.history_files)} history files` : ', no history'})`;

/**
 * Carries out what is pending in data_dir (the caller holds its lock). Returns the outcome of what was done
 * at this start, or undefined when nothing was pending.
 */
export async function applyPending(opts: Omit<StageOptions, 'source'>, log: (msg: string) => void): Promise<LifecycleStatus | undefined> {
  const { dataDir } = opts;
  const at = new Date(opts.now).toISOString();
  let status: LifecycleStatus | undefined;
  // A restore being read when the process died (power cut, kill): never renamed into place, so garbage.
  for (const name of await readdir(dataDir)) {
    if (name.startsWith(STAGING_PREFIX)) await rm(path.join(dataDir, name), { recursive: true, force: true });
  }
  const resetMarker = path.join(dataDir, F.resetPending);
  const resetDone = await exists(resetMarker);
  if (resetDone) {
    const asked = await readJsonFile(resetMarker);
    await reset(dataDir);
    await rm(resetMarker, { force: true });
    await fsyncDir(dataDir);
    status = { action: 'reset', ok: true, at, source: String(asked.source ?? 'console'), message: 'factory reset: data_dir emptied (configuration changes, versions, shadow, history)' };
    log(status.message);
  }
  const upload = path.join(dataDir, F.restoreUpload);
  if (await exists(upload)) {
    try {
      await stageRestore(createReadStream(upload), { ...opts, source: 'boot partition' });
    } catch (err) {
      const why = err instanceof RestoreError ? err.message : `could not be read: ${(err as Error).message}`;
      status = { action: 'restore', ok: false, at, source: 'boot partition', message: `the backup from the boot partition was not restored: ${why}` };
      log(status.message);
    }
    await rm(upload, { force: true });
  }
  const staged = path.join(dataDir, F.restorePending);
  if (await exists(staged)) {
    const info = await readJsonFile(path.join(staged, PENDING_INFO));
    await applyStaged(dataDir);
    status = { action: 'restore', ok: true, at, source: String(info.source ?? 'console'), message: describe(info) };
    log(status.message);
  }
  // A reset followed by a restore (both on the boot partition): the outcome shown is the restore's, saying both.
  if (status && resetDone && status.action === 'restore') status = { ...status, message: `factory reset, then ${status.message}` };
  if (status) await atomicWriteFile(path.join(dataDir, F.status), `${JSON.stringify(status)}\n`);
  return status;
}

/** The last outcome kept in data_dir (from this start or an earlier one). */
export async function lastLifecycle(dataDir: string): Promise<LifecycleStatus | undefined> {
  const v = await readJsonFile(path.join(dataDir, F.status));
  return typeof v.action === 'string' && typeof v.ok === 'boolean' ? (v as unknown as LifecycleStatus) : undefined;
}
