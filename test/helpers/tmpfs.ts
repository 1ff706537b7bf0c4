/**
 * A tiny tmpfs for tests of a full disk (real ENOSPC, short writes included), and a filler that takes every
 * free page of it. Needs root: `tmpfsUnavailable()` says why not (tests register through `needs` in test/helpers/peers.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

let probed: string | null | undefined;

export function tmpfsUnavailable(): string | null {
  if (probed !== undefined) return probed;
  if (process.getuid?.() !== 0) return (probed = 'needs root to mount a tmpfs');
  const dir = mkdtempSync(path.join(tmpdir(), 'sg-tmpfs-probe-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status === 0) spawnSync('umount', [dir]);
  rmSync(dir, { recursive: true, force: true });
  return (probed = r.status === 0 ? null : `cannot mount a tmpfs: ${(r.stderr || r.error?.message || '').trim()}`);
}

/** Runs `fn` on a fresh tmpfs of `size` (e.g. "256k"); always unmounted and removed. */
export async function withTmpfs(size: string, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sg-tmpfs-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mount tmpfs: ${r.stderr}`);
  try {
    await fn(dir);
  } finally {
    if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Appends zeros to `file` until ENOSPC, then `leave` bytes are given back (room for a short write). */
export async function fill(file: string, leave = 0): Promise<void> {
  const fh = await open(file, 'a');
  try {
    for (const size of [65536, 4096, 1]) {
      const buf = Buffer.alloc(size);
      for (;;) {
        try {
          if ((await fh.write(buf)).bytesWritten < size) break;
        } catch {
          break;
        }
      }
    }
    if (leave > 0) await fh.truncate(Math.max(0, (await fh.stat()).size - leave));
  } finally {
    await fh.close();
  }
}

export const unfill = (file: string): Promise<void> => rm(file, { force: true });
