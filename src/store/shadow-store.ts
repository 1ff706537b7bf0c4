/**
 * Crash-safe persistence of the device shadow (DESIGN.md §3, notes/packages.md §4).
 *
 * Two generation files, `gen-a.bin` and `gen-b.bin`, each self-validating (length, magic, SHA-256).
 * A save always writes the slot that does NOT hold the newest valid generation, atomically (temp file,
 * fsync, rename, fsync dir), with a sequence number one above everything seen. So at every instant, even
 * mid-write under kill -9 or a power cut, at least the previous generation is intact; load picks the
 * newest valid one and reports every file it had to reject.
 *
 * node-persist keeps the manifest (last committed seq/slot/checksum) through setItem/getItem. Its own writer
 * truncates the key's file in place, so a process killed mid-write (a crash, systemd's SIGKILL) left an empty
 * manifest that the next start reported as damage; its instance hook `writeFile` is replaced by temp + rename
 * (persist-writer.ts). The generations carry the durability (temp file + fsync + rename); the manifest is a
 * hint written after each one, so a manifest lost to a power cut is reported and the generations' own headers decide. A
 * manifest that is ahead of every valid generation tells a load that the
 * newest generation was lost, which a missing file alone cannot. The bulk data does not go through
 * node-persist: its setItem deep-copies via JSON (stringify + parse of megabytes on the main thread).
 */
import { createHash } from 'node:crypto';
import { readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import nodePersist from 'node-persist';
import type { LocalStorage } from 'node-persist';
import type { Shadow } from '../core/shadow.js';
import type { ShadowSnapshot } from '../core/snapshot.js';
import type { Logger } from '../util/logger.js';
import { ignoreDamage, type DamageSink } from './damage.js';
import { atomicWriteChunks, fsyncDir, removeStaleTmp } from '../util/atomic-file.js';
import { type Encoded, GenerationEncoder } from './generation-encoder.js';
import { GenerationError, decodeGeneration } from './snapshot-codec.js';
import { DeltaTracker, applyDeltas } from './shadow-delta.js';
import { JournalFile, readJournal } from './shadow-journal.js';
import { replaceInPlaceWrites } from './persist-writer.js';
import { makeDir } from '../util/make-dir.js';

const SLOTS = ['a', 'b'] as const;
type Slot = (typeof SLOTS)[number];
const MANIFEST_KEY = 'shadow-manifest';
const fileOf = (slot: Slot): string => `gen-${slot}.bin`;
const JOURNAL = 'journal.bin';
/**
 * A new full generation once the journal holds this many times the generation's bytes: the bytes written per
 * change stay near a delta's, and a restore reads at most ~4 generations' worth.
 */
const JOURNAL_FACTOR = 3;
/**
 * Saves that would only move times (a poll of an idle device refreshes its update times, nothing else) are
 * written at most this often: each is a block and a journal commit on the SD card, ~200 MB a day for an idle
 * gateway at a 5 s interval. Values, states and write values keep the persist_interval bound.
 */
const TIMES_ONLY_MS = 60_000;

export interface LoadResult {
  /** Newest valid generation, or null (first start, or nothing valid: then `problems` says so). */
  snapshot: ShadowSnapshot | null;
  seq: number;
  /** Which file was used, e.g. `gen-b.bin (seq 12)`, or why none was. */
  source: string;
  /** Every file rejected and why; non-empty means data may have been lost and must be logged loudly. */
  problems: string[];
}

export interface ShadowStore {
  readonly dir: string;
  load(): Promise<LoadResult>;
  /** Encodes synchronously (the short main-thread part), then hashes and writes off-thread. */
  save(snapshot: ShadowSnapshot): Promise<void>;
  /** Same as save(takeSnapshot(shadow, now)) without the intermediate snapshot: what the persister uses. */
  saveShadow(shadow: Shadow, now: number): Promise<void>;
  /** Removes every persisted generation and the manifest (data dir reset); the store stays usable. */
  destroy(): Promise<void>;
  /** After the last save: closes the journal's file (the store is not used again). */
  close(): Promise<void>;
  /** Main-thread time of the last save's encode, ms. */
  readonly lastEncodeMs: number;
  /** Sequence number of the newest generation on disk (0: none). */
  readonly seq: number;
  /** Saves written as journal deltas / as full generations since start, and the journal's size. */
  readonly deltaSaves: number;
  readonly fullSaves: number;
  readonly journalBytes: number;
}

interface Manifest {
  seq: number;
  slot: Slot;
  savedAt: number;
  bytes: number;
  devices: number;
  points: number;
}

export interface OpenShadowStoreOptions {
  /** `<data_dir>/shadow`; created if missing. */
  dir: string;
  log: Logger;
  /** Where damaged files go (store/damage.ts); default: left in place, only reported as problems. */
  damage?: DamageSink;
}

export async function openShadowStore(opts: OpenShadowStoreOptions): Promise<ShadowStore> {
  const dir = path.resolve(opts.dir);
  const { log } = opts;
  const damage = opts.damage ?? ignoreDamage;
  await makeDir(dir);
  const stale = await removeStaleTmp(dir);
  if (stale.length > 0) log.warn({ dir, files: stale }, 'removed temp files left by an interrupted save');

  // expiredInterval 0: its sweep would re-read and parse every file every 2 min. No forgiveParseErrors:
  // a bad manifest must be reported, not read as "no manifest". writeQueue off: saves are serialized here.
  const storage: LocalStorage = nodePersist.create({ dir, expiredInterval: 0, writeQueue: false, ttl: false });
  await storage.init();
  storage.stopWriteQueueInterval(); // init starts it even with writeQueue off; nothing uses it
  replaceInPlaceWrites(storage);

  let newest: Slot | null = null;
  let seq = 0;
  let loaded: Promise<LoadResult> | null = null;
  /** Device ids each slot holds on disk: a save that drops a device rewrites both slots (rule 8). */
  const slotIds: Record<Slot, Set<string> | null> = { a: null, b: null };
  const encoder = new GenerationEncoder();
  const journal = new JournalFile(path.join(dir, JOURNAL));
  const tracker = new DeltaTracker();
  let baseBytes = 0;
  /** Clock time of the last delta written (for TIMES_ONLY_MS). */
  let lastDeltaAt = -Infinity;
  let deltaSaves = 0;
  let fullSaves = 0;
  let chain: Promise<unknown> = Promise.resolve();
  /** Settles when the full generation being streamed from the tracker is written (or failed). */
  let streaming: Promise<void> | null = null;
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn, fn);
    chain = run.catch(() => {});
    return run;
  };

  /**
   * The manifest is written after its generation is committed, so a torn one (a crash during node-persist's
   * in-place write) means that generation is on disk: nothing was lost, it is logged, not a problem.
   */
  async function readManifest(): Promise<Manifest | null> {
    try {
      const m = (await storage.getItem(MANIFEST_KEY)) as Manifest | undefined;
      if (m === undefined) return null;
      if (typeof m !== 'object' || m === null || !Number.isFinite(m.seq)) throw new Error('malformed manifest');
      return m;
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'shadow manifest unreadable (torn by a crash?); judging generations by their own headers');
      await damage.setAside(storage.getDatumPath(MANIFEST_KEY), `shadow manifest unreadable (${(err as Error).message}); generations judged by their own headers`);
      return null;
    }
  }

  // load() must never reject: whatever goes wrong is a problem to report, and the gateway starts anyway.
  async function scan(): Promise<LoadResult> {
    try {
      return await scanSlots();
    } catch (err) {
      newest = null;
      const message = `cannot read the persisted shadow in ${dir} (${(err as Error).message}): the shadow starts EMPTY`;
      return { snapshot: null, seq: 0, source: 'none valid', problems: [message] };
    }
  }

  async function scanSlots(): Promise<LoadResult> {
    const problems: string[] = [];
    slotIds.a = slotIds.b = null;
    const manifest = await readManifest();
    let best: { slot: Slot; seq: number; snapshot: ShadowSnapshot } | null = null;
    let present = 0;
    for (const slot of SLOTS) {
      const file = path.join(dir, fileOf(slot));
      let buf: Buffer;
      try {
        buf = await readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        problems.push(`${fileOf(slot)}: cannot read (${(err as Error).message})`);
        present++;
        continue;
      }
      present++;
      try {
        const gen = await decodeGeneration(buf);
        slotIds[slot] = new Set(gen.snapshot.devices.map((d) => d.id));
        seq = Math.max(seq, gen.seq);
        if (!best || gen.seq > best.seq) best = { slot, seq: gen.seq, snapshot: gen.snapshot };
      } catch (err) {
        const why = err instanceof GenerationError ? 'corrupt' : 'unreadable';
        problems.push(`${fileOf(slot)}: ${why}, ignored (${(err as Error).message})`);
        await damage.setAside(file, `shadow generation ${why} (${(err as Error).message})`);
      }
    }
    if (manifest) seq = Math.max(seq, manifest.seq);
    newest = best?.slot ?? null;
    if (best) {
      if (manifest && manifest.seq > best.seq) {
        problems.push(`newest generation seq ${manifest.seq} (${fileOf(manifest.slot)}) is lost; restored the previous one, seq ${best.seq}`);
      }
      const deltas = await replayJournal(best.snapshot, best.seq, problems);
      return { snapshot: best.snapshot, seq: best.seq, source: `${fileOf(best.slot)} (seq ${best.seq})${deltas ? ` + ${deltas} journal deltas` : ''}`, problems };
    }
    if (present > 0 || manifest) {
      problems.push(`no valid shadow generation in ${dir}: the shadow starts EMPTY and persisted data is lost`);
      return { snapshot: null, seq: 0, source: 'none valid', problems };
    }
    return { snapshot: null, seq: 0, source: 'none (first start)', problems };
  }

  /** Applies the journal's deltas when they belong to this generation; returns how many were applied. */
  async function replayJournal(snapshot: ShadowSnapshot, baseSeq: number, problems: string[]): Promise<number> {
    const journalFile = path.join(dir, JOURNAL);
    const found = await readJournal(journalFile);
    // Present but without a valid header (emptied, garbage): its deltas cannot be read, the file is kept aside.
    if (!found && (await stat(journalFile).then(() => true, () => false))) {
      await damage.setAside(journalFile, 'shadow journal unreadable (no valid header): changes since the last full save are lost');
    }
    if (!found || found.baseSeq !== baseSeq || found.structureSeq !== snapshot.structureSeq) return 0;
    // A torn tail is the record a crash interrupted: expected after a power cut, within the loss bound.
    if (found.tornBytes > 0) {
      log.info({ bytes: found.tornBytes }, 'shadow journal ends with a record cut short by a crash; ignored');
      await damage.repaired(journalFile, `shadow journal ends with ${found.tornBytes} bytes of a record cut short; that record is ignored`);
    }
    try {
      applyDeltas(snapshot, found.records);
      return found.records.length;
    } catch (err) {
      problems.push(`${JOURNAL}: unusable (${(err as Error).message}); restored generation seq ${baseSeq} without its later changes`);
      return 0;
    }
  }

  async function writeSlot(slot: Slot, enc: Encoded, ids: Set<string>): Promise<void> {
    const next = seq + 1;
    await atomicWriteChunks(path.join(dir, fileOf(slot)), sealed(enc, next));
    seq = next;
    newest = slot;
    slotIds[slot] = ids;
    const manifest: Manifest = { seq: next, slot, savedAt: enc.savedAt, bytes: enc.bytes, devices: enc.devices, points: enc.points };
    await storage.setItem(MANIFEST_KEY, manifest);
  }

  /** The encode already happened (synchronously, in the caller's tick); the rest waits its turn. */
  function persist(enc: Encoded, structureSeq?: number): Promise<void> {
    const ids = new Set(enc.ids);
    const bytes = enc.bytes;
    return serial(async () => {
      if (!loaded) loaded = scan(); // never overwrite the only good generation blind
      await loaded.catch(() => {});
      const target: Slot = newest === 'a' ? 'b' : 'a';
      await writeSlot(target, enc, ids);
      // The other slot still holds the previous generation; if it has devices that are gone now, their
      // data must not outlive the delete (rule 8), so it is rewritten with the current one too.
      const other: Slot = target === 'a' ? 'b' : 'a';
      const old = slotIds[other];
      if (old && [...old].some((id) => !ids.has(id))) await writeSlot(other, enc, ids);
      fullSaves++;
      // Only a generation taken straight from the table has a tracker behind it to write deltas against.
      if (structureSeq === undefined) return;
      await journal.reset(seq, structureSeq);
      baseBytes = bytes;
    });
  }

  /** A delta against what the journal's generation plus its records hold; the encode runs now, in the caller's tick. */
  function appendDelta(shadow: Shadow, now: number): Promise<void> {
    if (now - lastDeltaAt < TIMES_ONLY_MS && tracker.onlyTimesMoved(shadow)) return Promise.resolve();
    lastDeltaAt = now;
    const payload = Buffer.from(tracker.delta(shadow, now));
    return serial(async () => {
      await journal.append(payload);
      deltaSaves++;
    });
  }

  const store: ShadowStore = {
    dir,
    get lastEncodeMs() {
      return encoder.lastMs;
    },
    get seq() {
      return seq;
    },
    get deltaSaves() {
      return deltaSaves;
    },
    get fullSaves() {
      return fullSaves;
    },
    get journalBytes() {
      return journal.bytes;
    },
    load() {
      // Later saves depend on which slot is newest: a load is the first thing the serial chain does.
      loaded = serial(scan);
      return loaded;
    },
    save(snapshot) {
      return persist(encoder.fromSnapshot(snapshot));
    },
    saveShadow(shadow, now) {
      // A full generation is being streamed from the tracker, which must not move until it is on disk.
      if (streaming) return streaming.then(() => store.saveShadow(shadow, now));
      // Flash: a delta when the structure is the journal's and the journal is not too long yet; else a full generation.
      const full = !(tracker.canDelta(shadow) && journal.ready && journal.bytes < JOURNAL_FACTOR * baseBytes);
      const pending = full
        ? (() => {
            tracker.rebase(shadow);
            return persist(encoder.fromShadow(shadow, now, tracker), shadow.structureSeq);
          })()
        : appendDelta(shadow, now);
      // Whatever failed, the journal and the tracker no longer agree with the disk: the next save is full.
      const done = pending.catch((err: unknown) => {
        tracker.invalidate();
        throw err;
      });
      if (full) {
        const settled: Promise<void> = done.then(() => {}, () => {}).finally(() => {
          if (streaming === settled) streaming = null;
        });
        streaming = settled;
      }
      return done;
    },
    close() {
      return serial(() => journal.close());
    },
    destroy() {
      return serial(async () => {
        for (const slot of SLOTS) await rm(path.join(dir, fileOf(slot)), { force: true });
        await journal.remove();
        tracker.invalidate();
        await storage.removeItem(MANIFEST_KEY);
        await removeStaleTmp(dir);
        await fsyncDir(dir);
        newest = null;
        slotIds.a = slotIds.b = null;
        log.info({ dir }, 'persisted shadow destroyed');
      });
    },
  };
  return store;
}

/** The generation's bytes with `seq` stamped, then their SHA-256, hashed chunk by chunk as they are written. */
function* sealed(enc: Encoded, seq: number): Iterable<Uint8Array> {
  const hash = createHash('sha256');
  for (const chunk of enc.chunks(seq)) {
    hash.update(chunk);
    yield chunk;
  }
  yield hash.digest();
}
