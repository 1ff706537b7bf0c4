/**
 * The sealed-segment writer of the first format (`SGHSEG01`): the log rewritten grouped by series, each series'
 * samples in time order, with minute and hour rollups and a footer. Gateways in the field hold segments written
 * this way; the store must keep reading them. Kept here, not in src/, so the tests can write such a data dir.
 */
import { open, readFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { BlockWriter } from '../../src/store/history/block-writer.js';
import { rollups } from '../../src/store/history/compact.js';
import { groupOrder } from '../../src/store/history/group-order.js';
import {
  HEADER_BYTES, HOUR, KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_STR, MINUTE, decodeSamples, emptySamples, parseHeader,
} from '../../src/store/history/format.js';
import { FOOTER_ENTRY, FOOT_MAGIC_V1, SEG_MAGIC_V1, TRAILER } from '../../src/store/history/segment.js';

/** Writes the first-format segment of the log at `logPath` to `outPath` (the log stays). */
export async function writeSealedV1(logPath: string, outPath: string): Promise<void> {
  const log = await readFile(logPath);
  const offsets: number[] = [];
  const series: number[] = [];
  const kinds: number[] = [];
  for (let pos = 0; pos + HEADER_BYTES <= log.length;) {
    const meta = parseHeader(log, pos)!;
    offsets.push(pos);
    series.push(meta.series);
    kinds.push(meta.kind);
    pos += HEADER_BYTES + meta.payloadLen;
  }
  const order = groupOrder(series, kinds, offsets);
  const writer = new BlockWriter();
  for (let r = 0; r < order.length;) {
    const s = series[order[r]!]!;
    const kind = kinds[order[r]!]!;
    const samples = emptySamples();
    for (; r < order.length && series[order[r]!] === s && kinds[order[r]!] === kind; r++) {
      const off = offsets[order[r]!]!;
      decodeSamples(log, off, parseHeader(log, off)!, -Infinity, Infinity, samples);
    }
    const idx = samples.ts.map((_, i) => i).sort((a, b) => samples.ts[a]! - samples.ts[b]! || a - b);
    const ts = idx.map((i) => samples.ts[i]!);
    const val = idx.map((i) => samples.val[i]!);
    if (kind === KIND_NUM) {
      writer.addNum(s, ts, val as number[]);
      writer.addRollups(KIND_MINUTE, s, rollups(ts, val as number[], MINUTE));
      writer.addRollups(KIND_HOUR, s, rollups(ts, val as number[], HOUR));
    } else if (kind === KIND_STR) {
      writer.addStr(s, ts, val as string[]);
    }
  }
  const body = writer.take();
  const foot = Buffer.alloc(writer.entries.length * FOOTER_ENTRY);
  writer.entries.forEach((e, i) => {
    const p = i * FOOTER_ENTRY;
    foot.writeUInt32LE(e.series, p);
    foot.writeUInt32LE(e.kind, p + 4);
    foot.writeDoubleLE(SEG_MAGIC_V1.length + e.offset, p + 8);
    foot.writeUInt32LE(e.len, p + 16);
    foot.writeUInt32LE(e.count, p + 20);
    foot.writeDoubleLE(e.minTs, p + 24);
    foot.writeDoubleLE(e.maxTs, p + 32);
  });
  const trailer = Buffer.alloc(TRAILER);
  trailer.writeDoubleLE(SEG_MAGIC_V1.length + body.length, 0);
  trailer.writeUInt32LE(writer.entries.length, 8);
  trailer.writeUInt32LE(crc32(foot), 12);
  FOOT_MAGIC_V1.copy(trailer, 16);
  const fh = await open(outPath, 'w');
  try {
    await fh.writeFile(Buffer.concat([SEG_MAGIC_V1, body, foot, trailer]));
    await fh.sync();
  } finally {
    await fh.close();
  }
}
