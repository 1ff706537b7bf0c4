/**
 * What is on disk after a kill, read before the gateway restarts (read-only: nothing here writes):
 * - the shadow: what a load must restore (newest valid generation plus its journal) with m1's counter and
 *   setpoint write value; any generation that does not validate is reported (a kill cannot tear a file
 *   that is written to a temp name and renamed, so there must be none), a torn journal tail is counted;
 * - retained.json: parses, and the client's retained message in it;
 * - history: the samples of one series in whole blocks (CRC-checked), i.e. what a restart must serve.
 */
import { cp, mkdtemp, open, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HAS_VALUE, HAS_WRITE } from '../../../src/core/table.js';
import { decodeGeneration } from '../../../src/store/snapshot-codec.js';
import { readJournal } from '../../../src/store/shadow-journal.js';
import { openShadowStore } from '../../../src/store/shadow-store.js';
import { silentLogger } from '../../../src/util/logger.js';
import { KIND_NUM, decodeSamples, emptySamples, sampleKind, type Samples } from '../../../src/store/history/format.js';
import { scanBlocks } from '../../../src/store/history/scan.js';
import { SealedSegment } from '../../../src/store/history/segment.js';
import { COUNTER, DEVICE, SETPOINT } from './config.js';
import { RETAINED_TOPIC, type Retained } from './mqtt-watch.js';

export interface ShadowOnDisk {
  seq: number;
  /** The load's own account of what it used, e.g. `gen-b.bin (seq 12) + 3 journal deltas`. */
  source: string;
  /** When the newest save on disk (generation or journal delta) was taken (ms). */
  savedAt: number;
  counter: { value: number; updatedAt: number } | null;
  /** setpoint's write value (null: never written). */
  write: number | null;
  /** Files that did not validate, and the load's problem reports. */
  bad: string[];
  /** Bytes after the journal's last whole record (a kill mid-append; the load ignores them). */
  tornJournal: number;
}

/**
 * What a restart must restore: the store's own load (generation + its journal) run on a copy of the shadow
 * directory, so nothing here touches the gateway's files. Each generation file is also decoded on its own:
 * one that does not validate is a corrupt file, whichever the load picks.
 */
export async function readShadow(dataDir: string): Promise<ShadowOnDisk> {
  const out: ShadowOnDisk = { seq: 0, source: '', savedAt: 0, counter: null, write: null, bad: [], tornJournal: 0 };
  const dir = path.join(dataDir, 'shadow');
  for (const slot of ['a', 'b']) {
    const buf = await readFile(path.join(dir, `gen-${slot}.bin`)).catch(() => null);
    if (buf) await decodeGeneration(buf).catch((err: unknown) => out.bad.push(`gen-${slot}.bin: ${(err as Error).message}`));
  }
  out.tornJournal = (await readJournal(path.join(dir, 'journal.bin')))?.tornBytes ?? 0;
  const copy = await mkdtemp(path.join(os.tmpdir(), 'sg-rel-shadowcopy-'));
  try {
    await cp(dir, copy, { recursive: true }).catch(() => {});
    const store = await openShadowStore({ dir: copy, log: silentLogger });
    const loaded = await store.load();
    out.bad.push(...loaded.problems);
    const s = loaded.snapshot;
    if (!s) return out;
    out.seq = loaded.seq;
    out.source = loaded.source;
    out.savedAt = s.savedAt;
    let k = 0;
    for (const d of s.devices) {
      if (d.id === DEVICE) {
        const c = k + d.points.indexOf(COUNTER);
        const w = k + d.points.indexOf(SETPOINT);
        if ((s.pts.flags[c]! & HAS_VALUE) !== 0) out.counter = { value: s.pts.num[c]!, updatedAt: s.pts.updatedAt[c]! };
        if ((s.pts.flags[w]! & HAS_WRITE) !== 0) out.write = s.pts.writeNum[w]!;
      }
      k += d.points.length;
    }
    return out;
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

/** The client's retained message as retained.json holds it; throws when the file does not parse. */
export async function readRetained(dataDir: string): Promise<Retained | null> {
  let text: string;
  try {
    text = await readFile(path.join(dataDir, 'mqtt', 'retained.json'), 'utf8');
  } catch {
    return null;
  }
  const list = JSON.parse(text) as { topic: string; payload?: string }[];
  const m = list.find((x) => x.topic === RETAINED_TOPIC);
  return m?.payload ? (JSON.parse(m.payload) as Retained) : null;
}

async function seriesId(dir: string, device: string, point: string): Promise<number | null> {
  let id: number | null = null;
  let text = '';
  try {
    text = await readFile(path.join(dir, 'series.jsonl'), 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    try {
      const r = JSON.parse(line) as { id?: number; del?: number; device?: string; point?: string };
      if (r.device === device && r.point === point && typeof r.id === 'number') id = r.id;
      if (r.del !== undefined && r.del === id) id = null;
    } catch {
      break; // a torn line ends the registry, as the store reads it
    }
  }
  return id;
}

/** m1's counter samples in [start, endEx) from every whole block of the history directory. */
export async function historyOnDisk(dataDir: string, start: number, endEx: number): Promise<Samples> {
  const dir = path.join(dataDir, 'history');
  const out = emptySamples();
  const id = await seriesId(dir, DEVICE, COUNTER);
  if (id === null) return out;
  const names = await readdir(dir).catch(() => [] as string[]);
  const seqs = [...new Set(names.map((n) => /^(\d{10})\.(log|seg)$/.exec(n)?.[1]).filter((s): s is string => !!s))].sort();
  for (const s of seqs) {
    if (names.includes(`${s}.seg`)) {
      const seg = await SealedSegment.load(Number(s), path.join(dir, `${s}.seg`));
      if (seg) {
        await seg.readRaw(id, start, endEx, out);
        continue;
      }
    }
    if (!names.includes(`${s}.log`)) continue;
    const fh = await open(path.join(dir, `${s}.log`), 'r');
    try {
      await scanBlocks(fh, 0, (await fh.stat()).size, (buf, off, meta) => {
        if (meta.series === id && sampleKind(meta.kind) === KIND_NUM) decodeSamples(buf, off, meta, start, endEx, out);
      });
    } finally {
      await fh.close();
    }
  }
  return out;
}
