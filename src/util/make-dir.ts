/**
 * `mkdir -p` that always settles. Node's `mkdir(dir, { recursive: true })` never settles for a path under
 * /proc (its parent exists, yet mkdir says ENOENT, and Node retries forever: a gateway with data_dir under /proc
 * spun at 70% CPU with no output). Here each missing parent is made once, and an ENOENT that persists is thrown.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

export async function makeDir(dir: string, mode?: number): Promise<void> {
  try {
    await mkdir(dir, mode === undefined ? undefined : { mode });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if ((await stat(dir)).isDirectory()) return;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: 'ENOTDIR', path: dir, syscall: 'mkdir' });
    }
    const parent = path.dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw err;
    await makeDir(parent, mode);
    await mkdir(dir, mode === undefined ? undefined : { mode }).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST') throw again; // made meanwhile (another part of the start-up): fine
    });
  }
}
