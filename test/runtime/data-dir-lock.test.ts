/** The data_dir lock across a reboot: a lock written in another boot is stale even when its PID is alive again. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lockDataDir } from '../../src/runtime/data-dir-lock.js';
import { bundleInto, nobody, otherUserMissing, otherUserTree, runAs } from '../helpers/other-user.js';
import { needs } from '../helpers/peers.js';

const bootId = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

needs(!bootId && 'no /proc/sys/kernel/random/boot_id here', 'lock across boots')('a live shadowgate-looking PID holds the lock in this boot, not when the lock was written in another boot', async () => {
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
// The taker runs as nobody, who may not enter the checkout (a 0700 parent, issue 37): it gets the lock module
// bundled into a 0755 directory of its own, and data_dir beside it.
needs(otherUserMissing(), 'lock of another user')('our own lock naming a process of another user is stale (sandboxed service after a power cut)', async () => {
  const user = nobody();
  const tree = await otherUserTree('sg-lock-user-');
  const dir = path.join(tree, 'data');
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', '/usr/lib/shadowgate/selftest'], { stdio: 'ignore' });
  try {
    const module = await bundleInto('src/runtime/data-dir-lock.ts', path.join(tree, 'data-dir-lock.mjs'));
    await mkdir(dir);
    await chmod(dir, 0o777);
    const file = path.join(dir, 'gateway.lock');
    await writeFile(file, `${holder.pid}\n\n`);
    await chown(file, user.uid, user.gid);
    const taker = runAs(user, ['--input-type=module', '-e',
      `import(${JSON.stringify(module)}).then((m) => m.lockDataDir(${JSON.stringify(dir)})).then(() => console.log('taken'), (e) => console.log(e.message))`],
    { cwd: tree });
    assert.is(taker.stdout.trim(), 'taken', `taker said: ${taker.stdout}${taker.stderr}${taker.error?.message ?? ''}`);
  } finally {
    holder.kill();
    await rm(tree, { recursive: true, force: true });
  }
});

test.run();
