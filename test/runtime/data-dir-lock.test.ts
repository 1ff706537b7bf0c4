/** The data_dir lock across a reboot: a lock written in another boot is stale even when its PID is alive again. */
import { spawn, spawnSync } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lockDataDir } from '../../src/runtime/data-dir-lock.js';

test('a live shadowgate-looking PID holds the lock in this boot, not when the lock was written in another boot', async () => {
  const bootId = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => '')).trim();
  if (!bootId) return console.log('SKIP: no /proc boot_id here');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-lock-'));
  // A process whose command line names shadowgate, as a helper of the image (or the last boot's gateway's PID reused).
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', '/usr/lib/shadowgate/selftest'], { stdio: 'ignore' });
  try {
    const file = path.join(dir, 'gateway.lock');
    await writeFile(file, `${holder.pid}\n${bootId}\n`);
    await lockDataDir(dir).then(() => assert.unreachable('taken while its holder runs in this boot'), (err: Error) => assert.match(err.message, /in use by another shadowgate/));
    await writeFile(file, `${holder.pid}\nanother-boot\n`);
    const lock = await lockDataDir(dir);
    assert.is((await readFile(file, 'utf8')).split('\n')[0], String(process.pid), 'taken over: written with this PID');
    await lock.release();
  } finally {
    holder.kill();
    await rm(dir, { recursive: true, force: true });
  }
});

// As in the image after a power cut: the unit runs as its own user with /proc/sys hidden (no boot id in the lock)
// and other users' command lines invisible; the PID in the lock now names a root helper with shadowgate in its path.
test('our own lock naming a process of another user is stale (sandboxed service after a power cut)', async () => {
  if (process.getuid?.() !== 0) return console.log('SKIP: needs root to run the taker as another user');
  const nobody = Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(nobody) || nobody <= 0) return console.log('SKIP: no user nobody');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-lock-'));
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', '/usr/lib/shadowgate/selftest'], { stdio: 'ignore' });
  try {
    await chmod(dir, 0o777);
    const file = path.join(dir, 'gateway.lock');
    await writeFile(file, `${holder.pid}\n\n`);
    await chown(file, nobody, nobody);
    const module = path.resolve('src/runtime/data-dir-lock.ts');
    const taker = spawnSync(process.execPath, ['--import', 'tsx', '-e',
      `import(${JSON.stringify(module)}).then((m) => m.lockDataDir(${JSON.stringify(dir)})).then(() => console.log('taken'), (e) => console.log(e.message))`],
    { uid: nobody, gid: nobody, encoding: 'utf8', timeout: 30_000, env: { ...process.env, HOME: dir, TSX_DISABLE_CACHE: '1' } });
    assert.is(taker.stdout.trim(), 'taken', `taker said: ${taker.stdout}${taker.stderr}`);
  } finally {
    holder.kill();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
