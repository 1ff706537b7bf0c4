/**
 * Layout and decoding of one shadow generation file (writing: generation-encoder.ts).
 *
 *   0  magic "SGSHADW1"          8  u32 file version     12 u32 snapshot format
 *   16 f64 seq                   24 f64 savedAt          32 f64 structureSeq
 *   40 u32 structure bytes       44 u32 strings bytes    48 u32 devices   52 u32 points   56..64 zero
 *   64 5 device columns (f64 × devices), 5 point columns (f64 × points): 8-aligned, so the encoder writes
 *      them through Float64Array views without per-value conversion
 *   .. structure JSON [[id, model, [point names]]…], strings JSON [[[k, value]…], [[k, writeValue]…]]
 *   .. SHA-256 of every byte before it (header included, so a flipped seq is caught too).
 * Header little-endian; columns in host order, which is little-endian on every Pi and x86.
 */
import { webcrypto } from 'node:crypto';
import type { ShadowSnapshot, SnapshotDevice } from '../core/snapshot.js';

export const MAGIC = Buffer.from('SGSHADW1');
export const FILE_VERSION = 1;
export const HEADER = 64;
export const DIGEST = 32;
export const DEV_COLS = ['ttl', 'updatedAt', 'disconnect', 'state', 'version'] as const;
export const PT_COLS = ['num', 'updatedAt', 'writeNum', 'writeAt', 'flags'] as const;

/** A generation file that cannot be trusted; `message` says why, for the load report. */
export class GenerationError extends Error {}

export const fileLength = (devices: number, points: number, structLen: number, strLen: number): number =>
  HEADER + 8 * 5 * (devices + points) + structLen + strLen + DIGEST;

export interface DecodedGeneration {
  seq: number;
  snapshot: ShadowSnapshot;
}

/** Validates length, magic, version and checksum, then the structure; throws GenerationError saying why. */
export async function decodeGeneration(buf: Buffer): Promise<DecodedGeneration> {
  if (buf.length === 0) throw new GenerationError('empty file (0 bytes)');
  if (buf.length < HEADER + DIGEST) throw new GenerationError(`truncated: ${buf.length} bytes, shorter than a header`);
  if (!buf.subarray(0, 8).equals(MAGIC)) throw new GenerationError('not a shadow generation file (bad magic)');
  const version = buf.readUInt32LE(8);
  if (version !== FILE_VERSION) throw new GenerationError(`unsupported file version ${version}`);
  const structLen = buf.readUInt32LE(40);
  const strLen = buf.readUInt32LE(44);
  const devices = buf.readUInt32LE(48);
  const points = buf.readUInt32LE(52);
  const expected = fileLength(devices, points, structLen, strLen);
  if (buf.length !== expected) throw new GenerationError(`truncated or padded: ${buf.length} bytes, header says ${expected}`);
  const digest = Buffer.from(await webcrypto.subtle.digest('SHA-256', buf.subarray(0, buf.length - DIGEST)));
  if (!digest.equals(buf.subarray(buf.length - DIGEST))) throw new GenerationError('checksum mismatch (SHA-256)');

  let off = HEADER;
  // Copies, not views: the read buffer's offset need not be 8-aligned, and the snapshot outlives it.
  const take = (n: number): Float64Array => {
    const col = new Float64Array(n);
    new Uint8Array(col.buffer).set(buf.subarray(off, off + n * 8));
    off += n * 8;
    return col;
  };
  const [ttl, devUpdatedAt, disconnect, state, devVersion] = DEV_COLS.map(() => take(devices)) as Float64Array[] as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  const [num, updatedAt, writeNum, writeAt, flags] = PT_COLS.map(() => take(points)) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  const deviceList = checkStructure(parseJson(buf, off, structLen, 'structure'), devices, points);
  off += structLen;
  const [strValues, strWrites] = checkStrings(parseJson(buf, off, strLen, 'strings'), points);
  const snapshot: ShadowSnapshot = {
    format: buf.readUInt32LE(12),
    savedAt: buf.readDoubleLE(24),
    structureSeq: buf.readDoubleLE(32),
    devices: deviceList,
    dev: { ttl, updatedAt: devUpdatedAt, disconnect, state, version: devVersion },
    pts: { num, updatedAt, writeNum, writeAt, flags },
    strValues,
    strWrites,
  };
  return { seq: buf.readDoubleLE(16), snapshot };
}

function parseJson(buf: Buffer, off: number, len: number, what: string): unknown {
  try {
    return JSON.parse(buf.toString('utf8', off, off + len));
  } catch {
    throw new GenerationError(`${what} section is not valid JSON`);
  }
}

// The checksum already proves the bytes are what we wrote; these checks guard against a writer bug
// producing a well-sealed but inconsistent file, which must not reach restoreSnapshot.
function checkStructure(value: unknown, devices: number, points: number): SnapshotDevice[] {
  if (!Array.isArray(value) || value.length !== devices) throw new GenerationError('structure does not match the device count');
  let total = 0;
  const out: SnapshotDevice[] = [];
  for (const entry of value as unknown[]) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string' || !Array.isArray(entry[2])
      || !(entry[2] as unknown[]).every((n) => typeof n === 'string')) {
      throw new GenerationError('structure entry malformed');
    }
    total += (entry[2] as string[]).length;
    out.push({ id: entry[0], model: entry[1], points: entry[2] as string[] });
  }
  if (total !== points) throw new GenerationError('structure does not match the point count');
  return out;
}

function checkStrings(value: unknown, points: number): [[number, string][], [number, string][]] {
  const ok = (list: unknown): list is [number, string][] => Array.isArray(list) && list.every((e) =>
    Array.isArray(e) && Number.isInteger(e[0]) && e[0] >= 0 && e[0] < points && typeof e[1] === 'string');
  if (!Array.isArray(value) || !ok(value[0]) || !ok(value[1])) throw new GenerationError('string columns malformed');
  return [value[0], value[1]];
}
