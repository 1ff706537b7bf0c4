/**
 * Writes a generation file (layout: snapshot-codec.ts) straight from the shadow's table, or from a
 * ShadowSnapshot. The direct path exists for the main-thread stall budget (≤ 20 ms for 100k points):
 * takeSnapshot allocates ten fresh 100k-entry columns per save, and that garbage measured 20–90 ms of
 * snapshot + GC. Here the columns are written into one reused buffer through slot indices cached by
 * structureSeq, and the structure JSON (ids, models, 100k names: the costly part) is cached the same way.
 */
import type { Shadow } from '../core/shadow.js';
import type { ShadowSnapshot } from '../core/snapshot.js';
import { SNAPSHOT_FORMAT } from '../core/snapshot.js';
import { STR_VALUE, STR_WRITE } from '../core/table.js';
import { DIGEST, FILE_VERSION, HEADER, MAGIC, fileLength } from './snapshot-codec.js';

export interface Encoded {
  /** The whole file; seq and digest are filled in by sealGeneration. */
  buf: Buffer;
  ids: readonly string[];
  devices: number;
  points: number;
}

interface Structure {
  owner: Shadow | ShadowSnapshot;
  structureSeq: number;
  ids: string[];
  pointCounts: number[];
  /** Table slots in file order (direct path only). */
  devSlots: Int32Array;
  ptSlots: Int32Array;
  json: Buffer;
}

export class GenerationEncoder {
  private structure: Structure | undefined;
  private pooled: ArrayBuffer | undefined;
  private lent = false;

  /** Main-thread cost of the last encode, ms. */
  lastMs = 0;

  fromShadow(shadow: Shadow, now: number): Encoded {
    const t0 = performance.now();
    const t = shadow.table;
    const s = this.structureOf(shadow, shadow.structureSeq, () => {
      const devSlots: number[] = [];
      const ptSlots: number[] = [];
      const entries: [string, string, readonly string[]][] = [];
      const pointCounts: number[] = [];
      for (const d of shadow.slots()) {
        const slot = t.devices[d]!;
        devSlots.push(d);
        for (let i = 0; i < slot.points.size; i++) ptSlots.push(slot.points.slotAt(i));
        entries.push([slot.id, slot.model, slot.points.frozenNames()]);
        pointCounts.push(slot.points.size);
      }
      return { ids: entries.map((e) => e[0]), pointCounts, devSlots: Int32Array.from(devSlots), ptSlots: Int32Array.from(ptSlots), entries };
    });
    const n = s.devSlots.length;
    const m = s.ptSlots.length;
    const strValues: [number, string][] = [];
    const strWrites: [number, string][] = [];
    for (let k = 0; k < m; k++) {
      const p = s.ptSlots[k]!;
      const flags = t.ptFlags[p]!;
      if ((flags & STR_VALUE) !== 0) strValues.push([k, t.ptStr[p]!]);
      if ((flags & STR_WRITE) !== 0) strWrites.push([k, t.ptWriteStr[p]!]);
    }
    const strings = Buffer.from(JSON.stringify([strValues, strWrites]));
    const buf = this.start(n, m, s, strings, SNAPSHOT_FORMAT, now, shadow.structureSeq);
    const col = (index: number, count: number): Float64Array =>
      new Float64Array(buf.buffer, buf.byteOffset + HEADER + 8 * (index < 5 ? index * n : 5 * n + (index - 5) * m), count);
    const devCols = [t.devTtl, t.devUpdatedAt, t.devDisconnect, t.devState, t.devVersion];
    devCols.forEach((src, c) => {
      const dst = col(c, n);
      for (let i = 0; i < n; i++) dst[i] = src[s.devSlots[i]!]!;
    });
    const ptCols = [t.ptNum, t.ptUpdatedAt, t.ptWriteNum, t.ptWriteAt, t.ptFlags];
    ptCols.forEach((src, c) => {
      const dst = col(5 + c, m);
      for (let k = 0; k < m; k++) dst[k] = src[s.ptSlots[k]!]!;
    });
    this.lastMs = performance.now() - t0;
    return { buf, ids: s.ids, devices: n, points: m };
  }

  fromSnapshot(snap: ShadowSnapshot): Encoded {
    const t0 = performance.now();
    const s = this.structureOf(snap, snap.structureSeq, () => ({
      ids: snap.devices.map((d) => d.id), pointCounts: snap.devices.map((d) => d.points.length), devSlots: new Int32Array(0), ptSlots: new Int32Array(0),
      entries: snap.devices.map((d): [string, string, readonly string[]] => [d.id, d.model, d.points]),
    }));
    const n = snap.devices.length;
    const m = snap.pts.num.length;
    const strings = Buffer.from(JSON.stringify([snap.strValues, snap.strWrites]));
    const buf = this.start(n, m, s, strings, snap.format, snap.savedAt, snap.structureSeq);
    let off = HEADER;
    for (const c of [...Object.values(snap.dev), ...Object.values(snap.pts)] as Float64Array[]) {
      buf.set(new Uint8Array(c.buffer, c.byteOffset, c.byteLength), off);
      off += c.byteLength;
    }
    this.lastMs = performance.now() - t0;
    return { buf, ids: s.ids, devices: n, points: m };
  }

  /** The buffer of `enc` may be reused by the next encode once its writes are done. */
  release(enc: Encoded): void {
    if (enc.buf.buffer === this.pooled) this.lent = false;
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

  private start(n: number, m: number, s: Structure, strings: Buffer, format: number, savedAt: number, structureSeq: number): Buffer {
    const total = fileLength(n, m, s.json.length, strings.length);
    let buf: Buffer;
    if (!this.lent && this.pooled && this.pooled.byteLength >= total) {
      buf = Buffer.from(this.pooled, 0, total);
    } else if (!this.lent) {
      // Headroom so a few more strings next time do not force a new allocation.
      this.pooled = new ArrayBuffer(Math.ceil(total * 1.125) + 4096);
      buf = Buffer.from(this.pooled, 0, total);
    } else {
      buf = Buffer.from(new ArrayBuffer(total)); // the pooled one is still being written
    }
    if (buf.buffer === this.pooled) this.lent = true;
    MAGIC.copy(buf, 0);
    buf.writeUInt32LE(FILE_VERSION, 8);
    buf.writeUInt32LE(format, 12);
    buf.writeDoubleLE(0, 16);
    buf.writeDoubleLE(savedAt, 24);
    buf.writeDoubleLE(structureSeq, 32);
    buf.writeUInt32LE(s.json.length, 40);
    buf.writeUInt32LE(strings.length, 44);
    buf.writeUInt32LE(n, 48);
    buf.writeUInt32LE(m, 52);
    buf.fill(0, 56, HEADER);
    const at = HEADER + 8 * 5 * (n + m);
    s.json.copy(buf, at);
    strings.copy(buf, at + s.json.length);
    buf.fill(0, total - DIGEST, total);
    return buf;
  }
}

function sameIds(cached: Structure, owner: Shadow | ShadowSnapshot): boolean {
  if (!('devices' in owner) || !Array.isArray(owner.devices) || owner.devices.length !== cached.ids.length) return false;
  return owner.devices.every((d, i) => d.id === cached.ids[i] && d.points.length === cached.pointCounts[i]);
}
