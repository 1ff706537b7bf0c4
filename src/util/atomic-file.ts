/**
 * Crash-safe file replacement. A plain writeFile truncates in place, so a kill -9 or power cut mid-write
 * leaves a 0-byte or partial file (measured with node-persist: notes/packages.md §4). Here the data goes
 * to a temp file in the same directory (rename is only atomic within one file system), is fsynced, then
 * renamed over the target, and the directory is fsynced so the rename itself survives a power cut.
 */
import { mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

let counter = 0;

/** Dot-prefixed so node-persist's directory scans skip it; pid + counter so concurrent writers never share one. */
export function tmpPathFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${++counter}.tmp`);
}

export const isTmpName = (name: string): boolean => name.startsWith('.') && name.endsWith('.tmp');

export interface AtomicWriteOptions {
  /** Exact permission bits (the umask does not apply), e.g. 0o600 for a secret. Default 0o644 less the umask. */
  mode?: number;
  /** Group id to give the file (needs root or membership); set before the rename, so no reader sees it wrong. */
  gid?: number;
}

export async function atomicWriteFile(file: string, data: Uint8Array | string, opts: AtomicWriteOptions = {}): Promise<void> {
  await atomicWrite(file, (fh) => fh.writeFile(data), opts);
}

/** As atomicWriteFile, from chunks written in order (a large file written without one buffer of all of it). */
export async function atomicWriteChunks(file: string, chunks: Iterable<Uint8Array>, opts: AtomicWriteOptions = {}): Promise<void> {
  await atomicWrite(file, async (fh) => {
    for (const chunk of chunks) {
      for (let done = 0; done < chunk.length;) done += (await fh.write(chunk, done, chunk.length - done)).bytesWritten;
    }
  }, opts);
}

async function atomicWrite(file: string, write: (fh: FileHandle) => Promise<void>, opts: AtomicWriteOptions): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = tmpPathFor(file);
  const fh = await open(tmp, 'w', opts.mode ?? 0o644);
  try {
    try {
      if (opts.mode !== undefined) await fh.chmod(opts.mode);
      if (opts.gid !== undefined) await fh.chown(-1, opts.gid);
      await write(fh);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await fsyncDir(path.dirname(file));
}

/** Makes renames and unlinks in `dir` durable (ext4 does not promise that without it). */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Temp files left by a crash mid-write are garbage (the target was never replaced); returns the names removed. */
export async function removeStaleTmp(dir: string): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(dir)) {
    if (!isTmpName(name)) continue;
    await rm(path.join(dir, name), { force: true });
    removed.push(name);
  }
  return removed;
}
