/**
 * A small tmpfs for the data dir and a filler file that takes every free page of it (ENOSPC for everyone
 * else), topped up while full (a failed write that is rolled back frees its pages again). Root only: the
 * campaign says why it cannot run otherwise.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { open, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Why the campaign cannot run here (null: it can): it needs root to mount a tmpfs. */
export function diskFullUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'disk-full needs root to mount a small tmpfs (run as root)';
  const probe = mkdtempSync(path.join(os.tmpdir(), 'sg-rel-mountprobe-'));
  try {
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { encoding: 'utf8' });
    if (r.status !== 0) return `cannot mount a tmpfs here: ${(r.stderr || r.error?.message || '').trim()}`;
    spawnSync('umount', [probe]);
    return null;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

export function mountTmpfs(dir: string, size: string): void {
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mount tmpfs on ${dir}: ${(r.stderr || r.error?.message || '').trim()}`);
}

/** Unmounts; lazily if something still holds it (the caller has already stopped the gateway by then). */
export function unmount(dir: string): void {
  if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
}

const CHUNK = Buffer.alloc(256 * 1024);
const PAGE = Buffer.alloc(4096);

/** Appends zeros to `file` until ENOSPC (large chunks, then pages); returns the bytes added. */
export async function fillUp(file: string): Promise<number> {
  const fh = await open(file, 'a');
  let added = 0;
  try {
    for (const buf of [CHUNK, PAGE]) {
      for (;;) {
        try {
          const { bytesWritten } = await fh.write(buf);
          added += bytesWritten;
          if (bytesWritten < buf.length) break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    await fh.close();
  }
  return added;
}

export async function free(file: string): Promise<void> {
  await rm(file, { force: true });
}

/** sha256 of every file under `dir` but `skip`, by path relative to dir. */
export async function digests(dir: string, skip: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (p === skip) continue;
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out.set(path.relative(dir, p), createHash('sha256').update(await readFile(p)).digest('hex'));
    }
  };
  await walk(dir);
  return out;
}

/** Files that changed, appeared or disappeared between two digests. */
export function changed(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [f, h] of a) if (b.get(f) !== h) out.push(b.has(f) ? `${f} changed` : `${f} removed`);
  for (const f of b.keys()) if (!a.has(f)) out.push(`${f} appeared`);
  return out;
}
