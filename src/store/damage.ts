/**
 * Damaged files in data_dir never stop the start: the store that finds one sets it aside here — moved to
 * `<data_dir>/damaged/<time>/<its path in data_dir>`, never deleted, so nothing reads it again and a person
 * can still look at it — or, when the store repairs it in place (a torn tail cut at a power cut), a copy of
 * the original goes there first. Every entry is logged and listed in /health/shadow (`checks.data_dir`).
 * The `damaged` directory is the user's to delete; no store reads it.
 */
import { copyFile, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../util/logger.js';

export const DAMAGED_DIR = 'damaged';

export interface DamageEntry {
  /** The file's path in data_dir. */
  file: string;
  problem: string;
  /** `set aside`: moved away, the store starts without it; `repaired`: fixed in place, the original copied. */
  action: 'set aside' | 'repaired';
  /** Where the original is now (in data_dir), or null when it could not be moved or copied. */
  keptAt: string | null;
  /** Wall time of the finding, ISO. */
  time: string;
}

/** What stores are handed: they report, this keeps the originals. */
export interface DamageSink {
  setAside(file: string, problem: string): Promise<void>;
  /** `lost`: the repair kept nothing of it (a log of garbage cut to empty): reported as set aside. */
  repaired(file: string, problem: string, lost?: boolean): Promise<void>;
}

export class DataDirDamage implements DamageSink {
  private readonly found: DamageEntry[] = [];
  private log: Logger | undefined;
  /** One directory per start: the files found together stay together. */
  private readonly stamp = new Date().toISOString().replace(/[:.]/g, '-');

  constructor(readonly dataDir: string) {}

  /** Entries found before the logger existed (main.ts reads active.json first) are logged now. */
  attach(log: Logger): void {
    this.log = log;
    for (const entry of this.found) this.warn(entry);
  }

  async setAside(file: string, problem: string): Promise<void> {
    await this.keep(file, problem, 'set aside', rename);
  }

  async repaired(file: string, problem: string, lost = false): Promise<void> {
    await this.keep(file, problem, lost ? 'set aside' : 'repaired', copyFile);
  }

  list(): DamageEntry[] {
    return this.found.map((e) => ({ ...e }));
  }

  /** Something was set aside: data that was there is gone from the running gateway. */
  get lost(): boolean {
    return this.found.some((e) => e.action === 'set aside');
  }

  private async keep(file: string, problem: string, action: DamageEntry['action'], move: (from: string, to: string) => Promise<void>): Promise<void> {
    const abs = path.resolve(this.dataDir, file);
    const rel = path.relative(this.dataDir, abs);
    const inside = !rel.startsWith('..') && !path.isAbsolute(rel);
    const target = path.join(this.dataDir, DAMAGED_DIR, this.stamp, inside ? rel : path.basename(abs));
    let keptAt: string | null = path.relative(this.dataDir, target);
    try {
      await mkdir(path.dirname(target), { recursive: true });
      await move(abs, target);
    } catch (err) {
      // Kept in place (a read-only directory?): the store still starts without it.
      keptAt = null;
      problem = `${problem}; could not keep the original (${(err as Error).message})`;
    }
    const entry: DamageEntry = { file: inside ? rel : abs, problem, action, keptAt, time: new Date().toISOString() };
    this.found.push(entry);
    if (this.log) this.warn(entry);
  }

  private warn(entry: DamageEntry): void {
    this.log?.warn({ file: entry.file, problem: entry.problem, keptAt: entry.keptAt }, `data_dir: ${entry.file} ${entry.action === 'set aside' ? 'was damaged and is set aside' : 'was repaired'}`);
  }
}

/** For stores used without a gateway (tools, tests): damage is only logged by the store itself. */
export const ignoreDamage: DamageSink = { setAside: async () => {}, repaired: async () => {} };
