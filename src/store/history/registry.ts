/**
 * Series registry: (device, point) → numeric series id stored in every block.
 *
 * One JSON line per change in `series.jsonl`. Ids are never reused: a deleted device's old blocks
 * keep their ids, so a device added again with the same name starts from an empty history instead
 * of inheriting the old one. The file is rewritten compactly on open (temp + fsync + rename) when it
 * holds deleted series or a torn last line (dropped then).
 */
import { open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../util/logger.js';
import { ignoreDamage, type DamageSink } from '../damage.js';
import { readRegistryLines, type RegistryRecord } from './registry-lines.js';
import { SeriesTable } from './series-table.js';

export const REGISTRY_FILE = 'series.jsonl';

/** fh.write may be short (a disk filling up); the next write then throws ENOSPC. */
async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  for (let done = 0; done < data.length;) done += (await fh.write(data, done, data.length - done)).bytesWritten;
}

export class SeriesRegistry {
  /** Typed arrays sized once from maxSeries (or the file's series, when more): series-table.ts. */
  private readonly table: SeriesTable;
  private pending: string[] = [];
  private nextId = 1;
  private fileBytes = 0;
  private lines = 0;

  private constructor(private readonly path: string, private readonly maxSeries: number, capacity: number) {
    this.table = new SeriesTable(capacity);
  }

  static async open(dir: string, maxSeries: number, log: Logger, damage: DamageSink = ignoreDamage): Promise<SeriesRegistry> {
    const path = join(dir, REGISTRY_FILE);
    let bytes = Buffer.alloc(0);
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err }, 'history: series registry unreadable');
    }
    // A file written under a larger max_points keeps all its series (new ones are refused past maxSeries):
    // room for one series a line at most.
    let lines = 0;
    for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) lines++;
    const reg = new SeriesRegistry(path, maxSeries, Math.max(maxSeries, lines + 1));
    const { records, torn } = readRegistryLines(bytes, (rec) => reg.apply(rec));
    if (torn) log.warn('history: series registry ends with a torn line; dropped');
    // Rewritten only when it holds more than its live series (deleted ones, several `next` lines) or a torn or
    // unterminated line: rewriting 100k compact lines at every start was ~5 MB and an fsync of flash per boot.
    // Nothing readable at all is damage, not a torn last line: the file is kept aside whole.
    if (torn && records === 0) await damage.setAside(reg.path, 'history series registry unreadable: the history recorded so far cannot be named');
    else if (torn) await damage.repaired(reg.path, `history series registry: a torn line after ${records} records dropped`);
    if (torn || (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) || records !== reg.table.size + 1) {
      await reg.rewrite();
    } else {
      reg.fileBytes = bytes.length;
      reg.lines = records;
    }
    return reg;
  }

  get size(): number {
    return this.table.size;
  }

  get bytes(): number {
    return this.fileBytes;
  }

  get dirty(): boolean {
    return this.pending.length > 0;
  }

  lookup(device: string, point: string): number | undefined {
    return this.table.get(device, point);
  }

  isLive(id: number): boolean {
    return this.table.has(id);
  }

  /** The id for a series, registering it; undefined when the registry is full (sample refused). */
  idFor(device: string, point: string): number | undefined {
    const found = this.table.get(device, point);
    if (found !== undefined) return found;
    if (this.table.size >= this.maxSeries) return undefined;
    const id = this.nextId++;
    this.table.set(id, device, point);
    this.pending.push(JSON.stringify({ id, device, point }));
    return id;
  }

  /** Forgets every series of a device; returns their ids. */
  deleteDevice(device: string): number[] {
    const ids = this.table.idsOf(device);
    for (const id of ids) {
      this.table.delete(id);
      this.pending.push(JSON.stringify({ del: id }));
    }
    return ids;
  }

  /** Appends pending lines with one write + fdatasync; blocks naming new ids are written only after this. */
  async persist(): Promise<void> {
    if (!this.pending.length) return;
    // Compaction keeps the file proportional to live series, not to the gateway's uptime.
    if (this.lines + this.pending.length > 4 * this.maxSeries + 1024) {
      this.pending = [];
      await this.rewrite();
      return;
    }
    const batch = this.pending;
    this.pending = [];
    const data = Buffer.from(`${batch.join('\n')}\n`);
    const fh = await open(this.path, 'a');
    try {
      await writeAll(fh, data);
      await fh.datasync();
    } catch (err) {
      // A short write (disk full) must not leave half a line for the retry to append after: that line would
      // end the registry at the next open and orphan every series named after it.
      await fh.truncate(this.fileBytes).catch(() => {});
      this.pending = batch.concat(this.pending);
      throw err;
    } finally {
      await fh.close();
    }
    this.fileBytes += data.length;
    this.lines += batch.length;
  }

  private apply(rec: RegistryRecord): boolean {
    if (rec.kind === 'next') {
      this.nextId = Math.max(this.nextId, rec.next);
    } else if (rec.kind === 'del') {
      this.table.delete(rec.id);
    } else if (Number.isInteger(rec.id) && rec.id >= 1 && rec.id <= 0xffffffff) {
      this.table.set(rec.id, rec.device, rec.point);
      this.nextId = Math.max(this.nextId, rec.id + 1);
    } else {
      return false;
    }
    return true;
  }

  private async rewrite(): Promise<void> {
    const lines = [JSON.stringify({ next: this.nextId })];
    for (const id of this.table.liveIds()) lines.push(JSON.stringify(this.table.entry(id)));
    const data = Buffer.from(`${lines.join('\n')}\n`);
    const tmp = `${this.path}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await writeAll(fh, data);
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => {});
      await rm(tmp, { force: true }).catch(() => {});
      throw err; // the registry on disk stays as it was: a short temp file is never renamed over it
    }
    await fh.close();
    await rename(tmp, this.path);
    this.fileBytes = (await stat(this.path)).size;
    this.lines = lines.length;
  }
}
