/** Crash-safe file replacement: write a temp file, fsync it, rename over the target, fsync the directory. */
import { open, rename, mkdir, unlink } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';

let seq = 0;

export async function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${++seq}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  // Without the directory fsync a power cut can lose the rename itself (ext4 data=ordered still may).
  const dh = await open(dir, 'r').catch(() => null);
  if (dh) {
    await dh.sync().catch(() => {});
    await dh.close();
  }
}
