/**
 * The boot partition's requests, taken by `shadowgate boot-config` (root, before the gateway starts):
 * `shadowgate-restore.tar.gz` (a backup to restore) and `shadowgate-factory-reset` (any file: reset).
 * Each is handed to the gateway as a file in its data_dir (the gateway carries it out at its start, the same
 * way as from the console: runtime/lifecycle.ts) and then removed from the boot partition, so it is applied
 * once. The boot partition is mounted read-only on the image: it is made writable for the removal only.
 * A reset also removes the generated API token, so boot-config makes a new one.
 */
import { execFile } from 'node:child_process';
import { chown, copyFile, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { atomicWriteFile, fsyncDir, tmpPathFor } from '../util/atomic-file.js';
import { LIFECYCLE_FILES as F } from '../util/lifecycle-files.js';
import { makeDir } from '../util/make-dir.js';

export interface BootRequests {
  reset: boolean;
  restore: boolean;
}

export interface BootLifecycleOptions {
  /** The boot partition (the directory of shadowgate.json). */
  bootDir: string;
  /** Run mount(8) around the removal: only on the device (root "/"). */
  live: boolean;
  warn: (line: string) => void;
}

const run = promisify(execFile);
const present = (dir: string, name: string): Promise<boolean> => readdir(dir).then((n) => n.includes(name), () => false);

/** Which requests lie on the boot partition (read before the config is applied: a reset changes the token). */
export async function bootRequests(bootDir: string): Promise<BootRequests> {
  return { reset: await present(bootDir, F.bootReset), restore: await present(bootDir, F.bootRestore) };
}

/**
 * Owner of data_dir, made when missing (a first boot: the gateway has not run yet): the files handed over must
 * be the gateway's to remove. A directory made here belongs to root until the unit's StateDirectory= hands it,
 * with what is in it, to the gateway's user at its start.
 */
async function owner(dataDir: string): Promise<{ uid: number; gid: number }> {
  await makeDir(dataDir, 0o750);
  const st = await stat(dataDir);
  return { uid: st.uid, gid: st.gid };
}

async function copyInto(src: string, dest: string, own: { uid: number; gid: number }): Promise<void> {
  const tmp = tmpPathFor(dest);
  try {
    await copyFile(src, tmp);
    if (process.getuid?.() === 0) await chown(tmp, own.uid, own.gid);
    // copyFile does not sync: a power cut must not leave a torn backup that looks complete (it would be refused anyway).
    const fh = await open(tmp, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(dest));
}

/** Removes the request files from the boot partition; false (and a warning) when it cannot. */
async function removeFromBoot(files: string[], opts: BootLifecycleOptions): Promise<boolean> {
  const remount = async (mode: 'rw' | 'ro'): Promise<void> => {
    if (!opts.live) return;
    try {
      await run('mount', ['-o', `remount,${mode}`, opts.bootDir], { timeout: 20_000 });
    } catch (err) {
      opts.warn(`mount -o remount,${mode} ${opts.bootDir} failed: ${(err as Error).message.split('\n')[0]}`);
    }
  };
  await remount('rw');
  try {
    for (const file of files) await rm(file, { force: true });
    await fsyncDir(opts.bootDir);
    return true;
  } catch (err) {
    opts.warn(`cannot remove ${files.join(', ')} from the boot partition (${(err as Error).message}): not applied, so that it is not applied at every boot; remove it by hand`);
    return false;
  } finally {
    await remount('ro');
  }
}

/**
 * Hands the requests found to the gateway's data_dir and removes them from the boot partition. A request
 * that cannot be handed over (no data_dir yet, disk full) stays on the boot partition for the next boot.
 */
export async function handOver(requests: BootRequests, dataDir: string, opts: BootLifecycleOptions): Promise<string[]> {
  const done: string[] = [];
  const lines: string[] = [];
  if (!requests.reset && !requests.restore) return lines;
  let own: { uid: number; gid: number };
  try {
    own = await owner(dataDir);
  } catch (err) {
    opts.warn(`data_dir ${dataDir}: ${(err as Error).message}: the boot partition's requests wait for the next boot`);
    return lines;
  }
  if (requests.reset) {
    try {
      await atomicWriteFile(path.join(dataDir, F.resetPending), JSON.stringify({ source: 'boot partition', at: new Date().toISOString() }));
      if (process.getuid?.() === 0) await chown(path.join(dataDir, F.resetPending), own.uid, own.gid);
      done.push(path.join(opts.bootDir, F.bootReset));
      lines.push('factory reset asked for on the boot partition: the gateway empties its data_dir at its start; a new API token was made');
    } catch (err) {
      opts.warn(`factory reset: ${(err as Error).message}`);
    }
  }
  if (requests.restore) {
    try {
      await copyInto(path.join(opts.bootDir, F.bootRestore), path.join(dataDir, F.restoreUpload), own);
      done.push(path.join(opts.bootDir, F.bootRestore));
      lines.push(`${F.bootRestore} handed to the gateway: it is checked and restored at the gateway's start (see /api/v1/health/shadow, checks.lifecycle)`);
    } catch (err) {
      opts.warn(`restore: ${(err as Error).message}`);
    }
  }
  if (done.length > 0 && !(await removeFromBoot(done, opts))) {
    // Handed over but still on the boot partition: it would be applied again at every boot. Take it back.
    await rm(path.join(dataDir, F.resetPending), { force: true });
    await rm(path.join(dataDir, F.restoreUpload), { force: true });
    return [];
  }
  return lines;
}
