/**
 * The shadow's journal file: deltas (shadow-delta.ts) appended between full generations, each one write of
 * [u32 length][u32 CRC-32][payload] followed by fdatasync, so a power cut loses at most the record being
 * written (its length or CRC does not match and the tail is ignored). The 32-byte header names the
 * generation the records apply to (its seq and structureSeq); it is replaced atomically (temp file, fsync,
 * rename) right after each new generation is committed, so a journal never applies to the wrong base.
 */
import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { atomicWriteFile } from '../util/atomic-file.js';

const MAGIC = Buffer.from('SGJRNL01');
const HEADER = 32;

export interface JournalContents {
  baseSeq: number;
  structureSeq: number;
  records: Buffer[];
  /** Bytes after the last whole record (a write cut short by a crash), ignored. */
  tornBytes: number;
}

export class JournalFile {
  /** Size of the file as written (header and records). */
  bytes = 0;
  records = 0;
  private fh: FileHandle | null = null;

  constructor(readonly path: string) {}

  /** Starts an empty journal for the generation just committed. */
  async reset(baseSeq: number, structureSeq: number): Promise<void> {
    await this.close();
    const header = Buffer.alloc(HEADER);
    MAGIC.copy(header, 0);
    header.writeDoubleLE(baseSeq, 8);
    header.writeDoubleLE(structureSeq, 16);
    await atomicWriteFile(this.path, header);
    this.fh = await open(this.path, 'a');
    this.bytes = HEADER;
    this.records = 0;
  }

  get ready(): boolean {
    return this.fh !== null;
  }

  async append(payload: Uint8Array): Promise<void> {
    if (!this.fh) throw new Error('journal not started');
    const frame = Buffer.allocUnsafe(8 + payload.length);
    frame.writeUInt32LE(payload.length, 0);
    frame.writeUInt32LE(crc32(payload), 4);
    frame.set(payload, 8);
    const fh = this.fh;
    try {
      // A write may be short (a disk that fills up mid-record says so only on the next write).
      for (let done = 0; done < frame.length;) done += (await fh.write(frame, done, frame.length - done)).bytesWritten;
      await fh.datasync();
    } catch (err) {
      // Half a record must not stay: a load stops at the first bad record, so every record appended after it
      // (once space is back) would be ignored. Cut back to the last whole one, or give this journal up (the
      // next save is then a full generation, which starts a new journal).
      await fh.truncate(this.bytes).catch(() => this.close());
      throw err;
    }
    this.bytes += frame.length;
    this.records++;
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    await fh?.close();
  }

  async remove(): Promise<void> {
    await this.close();
    await rm(this.path, { force: true });
    this.bytes = 0;
    this.records = 0;
  }
}

/** The journal's header and whole records, or null when there is none or it is not a journal. */
export async function readJournal(path: string): Promise<JournalContents | null> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch {
    return null;
  }
  if (buf.length < HEADER || !buf.subarray(0, 8).equals(MAGIC)) return null;
  const out: JournalContents = { baseSeq: buf.readDoubleLE(8), structureSeq: buf.readDoubleLE(16), records: [], tornBytes: 0 };
  let at = HEADER;
  while (at + 8 <= buf.length) {
    const len = buf.readUInt32LE(at);
    const end = at + 8 + len;
    if (end > buf.length || crc32(buf.subarray(at + 8, end)) !== buf.readUInt32LE(at + 4)) break;
    out.records.push(buf.subarray(at + 8, end));
    at = end;
  }
  out.tornBytes = buf.length - at;
  return out;
}
