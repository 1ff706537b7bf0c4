/**
 * Writes a generation file (layout: snapshot-codec.ts) from the shadow's table, or from a ShadowSnapshot.
 *
 * The direct path exists for the main-thread stall budget (≤ 20 ms for 100k points): takeSnapshot allocates
 * ten fresh 100k-entry columns per save, and that garbage measured 20–90 ms of snapshot + GC. It no longer
 * copies the point columns into a file image either: the delta tracker (shadow-delta.ts) copies the table's
 * point state at the same tick anyway, so the file's point columns are streamed from the tracker's copy in
 * fixed chunks. One file image of a 1,000 × 100 fleet was 4 MB of columns + 2.7 MB of names, kept between saves
 * for reuse; now a save holds the header, the device columns and the strings, and a 256 KB scratch for
 * the columns the tracker keeps in another form (flags as u8, write values sparse). The caller keeps the tracker unchanged
 * until the write is done (shadow-store.ts). The structure JSON (ids, models, 100k names: the costly part)
 * is cached by structureSeq.
 */
import type { Shadow } from '../core/shadow.js';
import type { ShadowSnapshot } from '../core/snapshot.js';
import { SNAPSHOT_FORMAT } from '../core/snapshot.js';
import { STR_VALUE, STR_WRITE } from '../core/table.js';
import type { PersistedPoints } from './shadow-delta.js';
import { FILE_VERSION, HEADER, MAGIC, fileLength } from './snapshot-codec.js';

/** Bytes a column is written in at a time: small against the file, large against a syscall's cost. */
const CHUNK = 256 << 10;

export interface Encoded {
  ids: readonly string[];
  devices: number;
  points: number;
  savedAt: number;
  /** The file's length, digest included. */
  bytes: number;
  /**
   * The file's bytes before the digest, in order, with `seq` stamped in the header. A chunk may be a reused
   * scratch: use it before taking the next. May be walked more than once (both slots are written sometimes).
   */
  chunks(seq: number): Iterable<Uint8Array>;
}

interface Structure {
  owner: Shadow | ShadowSnapshot;
  structureSeq: number;
  ids: string[];
  pointCounts: number[];
  /** Device table slots in file order (direct path only). */
  devSlots: Int32Array;
  json: Buffer;
}

export class GenerationEncoder {
  private structure: Structure | undefined;
  private scratch: Float64Array | undefined;

  /** Main-thread cost of the last encode, ms. */
  lastMs = 0;

  /** `pts` must have been rebased on `shadow` in this tick, and stay unchanged while the chunks are walked. */
  fromShadow(shadow: Shadow, now: number, pts: PersistedPoints): Encoded {
    const t0 = performance.now();
    const t = shadow.table;
    const s = this.structureOf(shadow, shadow.structureSeq, () => {
      const devSlots: number[] = [];
      const entries: [string, string, readonly string[]][] = [];
      const pointCounts: number[] = [];
      for (const d of shadow.slots()) {
        const slot = t.devices[d]!;
        devSlots.push(d);
        entries.push([slot.id, slot.model, slot.points.frozenNames()]);
        pointCounts.push(slot.points.size);
      }
      return { ids: entries.map((e) => e[0]), pointCounts, devSlots: Int32Array.from(devSlots), entries };
    });
    const n = s.devSlots.length;
    const m = pts.slots.length;
    const strValues: [number, string][] = [];
    const strWrites: [number, string][] = [];
    for (let k = 0; k < m; k++) {
      const p = pts.slots[k]!;
      const flags = t.ptFlags[p]!;
      if ((flags & STR_VALUE) !== 0) strValues.push([k, t.ptStr[p]!]);
      if ((flags & STR_WRITE) !== 0) strWrites.push([k, t.ptWriteStr.get(p)!]);
    }
    const strings = Buffer.from(JSON.stringify([strValues, strWrites]));
    const head = this.head(n, m, s, strings, SNAPSHOT_FORMAT, now, shadow.structureSeq);
    const devCols = [t.devTtl, t.devUpdatedAt, t.devDisconnect, t.devState, t.devVersion];
    devCols.forEach((src, c) => {
      const dst = new Float64Array(head.buffer, head.byteOffset + HEADER + 8 * c * n, n);
      for (let i = 0; i < n; i++) dst[i] = src[s.devSlots[i]!]!;
    });
    const scratch = (this.scratch ??= new Float64Array(CHUNK / 8));
    // Columns the tracker keeps in another form (flags as u8, write values sparse) go through the scratch.
    function* converted(get: (k: number) => number): Iterable<Uint8Array> {
      for (let k = 0; k < m; k += scratch.length) {
        const count = Math.min(scratch.length, m - k);
        for (let i = 0; i < count; i++) scratch[i] = get(k + i);
        yield new Uint8Array(scratch.buffer, 0, count * 8);
      }
    }
    const json = s.json;
    function* chunks(seq: number): Iterable<Uint8Array> {
      head.writeDoubleLE(seq, 16);
      yield head;
      yield* slices(pts.num);
      yield* slices(pts.updatedAt);
      yield* converted((k) => pts.writeNum(k));
      yield* converted((k) => pts.writeAt(k));
      yield* converted((k) => pts.flags[k]!);
      yield json;
      yield strings;
    }
    this.lastMs = performance.now() - t0;
    return { ids: s.ids, devices: n, points: m, savedAt: now, bytes: fileLength(n, m, json.length, strings.length), chunks };
  }

  fromSnapshot(snap: ShadowSnapshot): Encoded {
    const t0 = performance.now();
    const s = this.structureOf(snap, snap.structureSeq, () => ({
      ids: snap.devices.map((d) => d.id), pointCounts: snap.devices.map((d) => d.points.length), devSlots: new Int32Array(0),
      entries: snap.devices.map((d): [string, string, readonly string[]] => [d.id, d.model, d.points]),
    }));
    const n = snap.devices.length;
    const m = snap.pts.num.length;
    const strings = Buffer.from(JSON.stringify([snap.strValues, snap.strWrites]));
    // A copy: the caller may change its snapshot once save() returns. Rare (restore paths), so not pooled.
    const head = this.head(n, m, s, strings, snap.format, snap.savedAt, snap.structureSeq, 5 * (n + m));
    let off = HEADER;
    for (const c of [...Object.values(snap.dev), ...Object.values(snap.pts)] as Float64Array[]) {
      head.set(new Uint8Array(c.buffer, c.byteOffset, c.byteLength), off);
      off += c.byteLength;
    }
    const json = s.json;
    function* chunks(seq: number): Iterable<Uint8Array> {
      head.writeDoubleLE(seq, 16);
      yield head;
      yield json;
      yield strings;
    }
    this.lastMs = performance.now() - t0;
    return { ids: s.ids, devices: n, points: m, savedAt: snap.savedAt, bytes: fileLength(n, m, json.length, strings.length), chunks };
  }

  private structureOf(owner: Shadow | ShadowSnapshot, structureSeq: number,
    build: () => Omit<Structure, 'owner' | 'structureSeq' | 'json'> & { entries: [string, string, readonly string[]][] }): Structure {
    // A snapshot object is new on every save, so for that path the cache is keyed by content: the same
    // structureSeq and the same ids (one compare per device) mean the same structure.
    const cached = this.structure;
    if (cached && cached.structureSeq === structureSeq && (cached.owner === owner || sameIds(cached, owner))) return cached;
    const { entries, ...rest } = build();
    this.structure = { owner, structureSeq, ...rest, json: Buffer.from(JSON.stringify(entries)) };
    return this.structure;
  }

  /** The header, then room for `columns` f64 (the device columns, or every column on the snapshot path). */
  private head(n: number, m: number, s: Structure, strings: Buffer, format: number, savedAt: number, structureSeq: number,
    columns = 5 * n): Buffer {
    const buf = Buffer.alloc(HEADER + 8 * columns);
    MAGIC.copy(buf, 0);
    buf.writeUInt32LE(FILE_VERSION, 8);
    buf.writeUInt32LE(format, 12);
    buf.writeDoubleLE(savedAt, 24);
    buf.writeDoubleLE(structureSeq, 32);
    buf.writeUInt32LE(s.json.length, 40);
    buf.writeUInt32LE(strings.length, 44);
    buf.writeUInt32LE(n, 48);
    buf.writeUInt32LE(m, 52);
    return buf;
  }
}

function* slices(col: Float64Array): Iterable<Uint8Array> {
  const bytes = new Uint8Array(col.buffer, col.byteOffset, col.byteLength);
  for (let at = 0; at < bytes.length; at += CHUNK) yield bytes.subarray(at, Math.min(at + CHUNK, bytes.length));
}

function sameIds(cached: Structure, owner: Shadow | ShadowSnapshot): boolean {
  if (!('devices' in owner) || !Array.isArray(owner.devices) || owner.devices.length !== cached.ids.length) return false;
  return owner.devices.every((d, i) => d.id === cached.ids[i] && d.points.length === cached.pointCounts[i]);
}
