/**
 * Time ranges of history written while the wall clock was not synchronized (rule 11). A Pi without RTC
 * boots months behind until NTP answers: samples recorded before that carry wrong times. They are kept —
 * a site without internet never synchronizes, and its data still matters — and flagged: every raw row
 * and aggregate bucket that touches such a range says `unsynced: true` (docs/history.md). The ranges are a
 * small JSON file beside the segments, rewritten only when a range opens or closes.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteFile } from '../../util/atomic-file.js';
import { ignoreDamage, type DamageSink } from '../damage.js';

export interface Range {
  from: number;
  to: number;
}

export class UnsyncedRanges {
  private ranges: Range[] = [];
  private open: Range | null = null;
  private saving: Promise<void> = Promise.resolve();

  constructor(private readonly file: string, private readonly onError: (err: unknown) => void, private readonly damage: DamageSink = ignoreDamage) {}

  static fileIn(dir: string): string {
    return path.join(dir, 'unsynced-ranges.json');
  }

  async load(): Promise<void> {
    this.ranges = [];
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch {
      return;
    }
    try {
      const list = JSON.parse(text) as unknown;
      if (!Array.isArray(list)) throw new Error('not a list of ranges');
      this.ranges = (list as Range[]).filter((r) => Number.isFinite(r?.from) && Number.isFinite(r?.to));
    } catch (err) {
      await this.damage.setAside(this.file, `unsynchronized-clock ranges unreadable (${(err as Error).message}): history recorded then is no longer flagged`);
    }
  }

  /** A sample was recorded at wall time `ts`, while the clock was (not) synchronized. */
  note(ts: number, synchronized: boolean | null): void {
    if (synchronized !== false) {
      if (this.open) this.close();
      return;
    }
    if (!this.open) {
      this.open = { from: ts, to: ts };
      this.ranges.push(this.open);
      this.save();
    } else {
      this.open.from = Math.min(this.open.from, ts);
      this.open.to = Math.max(this.open.to, ts);
    }
  }

  /** The clock synchronized (or the gateway stops): the open range ends and is written. */
  close(): void {
    if (!this.open) return;
    this.open = null;
    this.save();
  }

  flagged(from: number, to: number): boolean {
    return this.ranges.some((r) => r.from <= to && from <= r.to);
  }

  get list(): readonly Range[] {
    return this.ranges;
  }

  async flush(): Promise<void> {
    await this.saving;
  }

  private save(): void {
    const text = JSON.stringify(this.ranges);
    this.saving = this.saving.then(() => atomicWriteFile(this.file, text)).catch(this.onError);
  }
}
