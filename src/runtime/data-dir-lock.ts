/**
 * One gateway per data_dir: `<data_dir>/gateway.lock` holds the PID of the gateway using it, created with
 * O_EXCL before anything there is read, restored or set aside, and removed on stop. Two gateways on one
 * data_dir would restore the same shadow and then overwrite each other's saves.
 *
 * Node has no flock(2), and the packages that add one are native modules (built per Node version) or
 * mtime-based (proper-lockfile: a timer must refresh the lock, and a stalled event loop loses it). A PID
 * file is enough for a system service: a lock left by a gateway that died (SIGKILL, power cut) names a PID
 * that no longer runs, or one that is not a shadowgate (after a reboot) — then it is stale and taken over.
 * The lock file's age is not used: a Pi without RTC boots with its clock behind and NTP steps it later.
 */
import { open, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { StartupError } from './startup-failure.js';
import { makeDir } from '../util/make-dir.js';

export const LOCK_FILE = 'gateway.lock';

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

/**
 * Is `pid` a running process that could be the gateway that wrote the lock (`lockOwner`: the lock file's
 * owner), by its user and command line?
 */
async function gatewayAlive(pid: number, lockOwner: number | undefined): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
    // EPERM: it runs under another user than ours. When we wrote the lock ourselves (same owner), that process
    // is not its writer: after a power cut under systemd's sandbox (ProcSubset=pid hides the boot id,
    // ProtectProc=invisible the other users' command lines) the last boot's PID names a root helper of this boot.
    if (lockOwner !== undefined && lockOwner === process.getuid?.()) return false;
  }
  // After a reboot the PID may belong to anything (Node-RED is a node process too): only a command line that
  // runs shadowgate counts — the bundle (shadowgate.mjs), dist/main.js or src/main.ts. No /proc: trust the PID.
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return cmdline === undefined || /shadowgate|\bmain\.[cm]?[jt]s\0run\b/.test(cmdline);
}

/**
 * This boot's id (Linux): a lock written in another boot is stale whatever its PID now names. Empty where
 * /proc/sys is hidden (systemd's ProcSubset=pid, as in our unit): then the owner check above decides.
 */
const bootId = (): Promise<string> => readFile('/proc/sys/kernel/random/boot_id', 'utf8').then((t) => t.trim(), () => '');

async function create(file: string): Promise<boolean> {
  try {
    const fh = await open(file, 'wx', 0o644);
    try {
      await fh.writeFile(`${process.pid}\n${await bootId()}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Creates data_dir if needed and takes its lock; a StartupError names the cause and the fix. */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, LOCK_FILE);
  await makeDir(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    if (await create(file)) {
      return { file, release: () => rm(file, { force: true }) };
    }
    const [pidText = '', lockBoot = ''] = (await readFile(file, 'utf8').catch(() => '')).split('\n');
    const lockOwner = await stat(file).then((s) => s.uid, () => undefined);
    const pid = Number(pidText.trim());
    // After a power cut the PID of the last boot's gateway can name anything of this boot (in a VM or on a
    // Pi the boot order repeats, and our own helpers have "shadowgate" in their paths): another boot's lock is stale.
    const sameBoot = lockBoot.trim() === '' || lockBoot.trim() === (await bootId());
    if (sameBoot && (await gatewayAlive(pid, lockOwner))) {
      throw new StartupError(`gateway.data_dir ${dataDir} is in use by another shadowgate (PID ${pid}): stop it, or give this one its own gateway.data_dir`);
    }
    // Stale (its gateway died without stopping) or unreadable: taken over.
    await rm(file, { force: true });
  }
  throw new StartupError(`gateway.data_dir ${dataDir}: cannot take ${LOCK_FILE} (another gateway is starting on it?): try again, or set gateway.data_dir`);
}
