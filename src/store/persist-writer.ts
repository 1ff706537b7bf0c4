/**
 * node-persist writes a key's file with fs.writeFile, which truncates it in place: a process killed between the
 * truncate and the write (a crash, systemd's SIGKILL after a stop timeout) leaves an empty or half file, read at
 * the next start as "does not look like a valid storage file" (notes/packages.md §4: 0-byte files after kill -9).
 * Every write of an instance goes through its `writeFile(file, content)` hook (setItem → queueWriteFile →
 * writeFile); replaced here by a write to a dot-named temp file (node-persist's directory scans skip those) and a
 * rename over the target, so a kill leaves the old file or the new one, never half. No fsync: what is kept this
 * way is a hint beside data that carries its own durability, and an fsync per save would be one more journal
 * commit on the SD card each time. Checked by a canary in test/deploy/library-internals.test.ts.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import type { Datum, LocalStorage } from 'node-persist';
import { tmpPathFor } from '../util/atomic-file.js';

export function replaceInPlaceWrites(storage: LocalStorage): void {
  storage.writeFile = async (file: string, content: Datum) => {
    const tmp = tmpPathFor(file);
    try {
      await writeFile(tmp, JSON.stringify(content));
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
    return { file, content };
  };
}
