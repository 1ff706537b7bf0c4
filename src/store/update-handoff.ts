/**
 * Hands an update bundle to the SD image's root update service (one implementation for REST and
 * `shadowgate update`): the bytes are streamed to `update/bundle.raucb.part` as they arrive (never held in
 * memory), counted and hashed on the way, fsynced and renamed to `bundle.raucb`; only then is `request.json`
 * written (atomically), and its appearance is what starts the root side. A refused, cut-off or failed upload
 * leaves no request and no part file behind.
 */
import { createHash } from 'node:crypto';
import { chown, mkdir, open, rename, rm, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteFile, fsyncDir } from '../util/atomic-file.js';
import {
  BUSY_STATES, UPDATE_FILES as F, currentStatus, notAvailableMessage, updateAvailable, updateDir, type UpdateRequest,
} from './update-status.js';

/** Left free on the data partition after the bundle: the shadow, history and config versions still write. */
export const FREE_RESERVE_BYTES = 32 * 1024 ** 2;

/** A part file not written to for this long belongs to an upload that died (power cut, kill): it is replaced. */
const STALE_PART_MS = 60_000;

/** A RAUC bundle is a squashfs image: its superblock starts with this magic (little-endian "hsqs"). */
const SQUASHFS_MAGIC = Buffer.from('hsqs', 'latin1');

export type UpdateErrorKind = 'unavailable' | 'busy' | 'not_bundle' | 'too_large' | 'incomplete' | 'storage';

export class UpdateError extends Error {
  constructor(readonly kind: UpdateErrorKind, message: string) {
    super(message);
    this.name = 'UpdateError';
  }
}

export interface HandOffOptions {
  dataDir: string;
  /** RAUC's system.conf: without it A/B updates are not available here. */
  systemConf: string;
  by: UpdateRequest['by'];
  /** Wall time of the request (ms). */
  now: number;
  /** The size announced up front (Content-Length, the file's size): refused at once when it cannot fit, and checked at the end. */
  expectedSize?: number;
  /** A request made earlier by this process, not yet answered by a newer status (update-status.ts currentStatus). */
  since?: number;
}

const mb = (n: number): string => `${(n / 1048576).toFixed(1)} MB`;

/** The update directory, owned like data_dir (`shadowgate update` may run as root; the gateway must still read it). */
async function ensureDir(dataDir: string): Promise<void> {
  const dir = updateDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  if (process.getuid?.() === 0) {
    const owner = await stat(dataDir);
    await chown(dir, owner.uid, owner.gid);
  }
}

/** Bytes the bundle may take: free space (plus an old bundle it replaces) less the reserve. */
async function room(dir: string): Promise<number> {
  const fs = await statfs(dir);
  const old = await stat(path.join(dir, F.bundle)).then((s) => s.size, () => 0);
  return Math.max(0, fs.bavail * fs.bsize + old - FREE_RESERVE_BYTES);
}

/** The part file, opened exclusively: a second upload at the same time is refused, one left by a dead one replaced. */
async function claimPart(file: string, now: number): Promise<Awaited<ReturnType<typeof open>>> {
  try {
    return await open(file, 'wx', 0o640);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const age = now - (await stat(file).then((s) => s.mtimeMs, () => 0));
  if (age < STALE_PART_MS) throw new UpdateError('busy', 'another update bundle is being received right now');
  await rm(file, { force: true });
  return open(file, 'wx', 0o640);
}

/** The first bytes, enough for the magic, and the rest of the body after them. */
async function head(body: AsyncIterable<Buffer>): Promise<{ first: Buffer; rest: AsyncIterator<Buffer> }> {
  const rest = body[Symbol.asyncIterator]();
  const got: Buffer[] = [];
  let size = 0;
  while (size < SQUASHFS_MAGIC.length) {
    const next = await rest.next();
    if (next.done) break;
    got.push(next.value);
    size += next.value.length;
  }
  return { first: Buffer.concat(got), rest };
}

const storageError = (err: unknown, dir: string): UpdateError =>
  new UpdateError('storage', `the bundle could not be stored in ${dir}: ${(err as Error).message}`);

/**
 * Streams `body` into the update directory and asks the root side to install it. Rejects with an UpdateError
 * saying why when the system has no A/B updates, an update is under way, the body is no RAUC bundle, it does
 * not fit, or it was cut off; nothing is left behind then.
 */
export async function handOff(body: AsyncIterable<Buffer>, opts: HandOffOptions): Promise<UpdateRequest> {
  const { dataDir } = opts;
  if (!(await updateAvailable(opts.systemConf))) throw new UpdateError('unavailable', notAvailableMessage(opts.systemConf));
  const current = await currentStatus(dataDir, opts.since);
  if (current.request_pending) throw new UpdateError('busy', 'an update bundle was handed over already and waits for the system\'s update service');
  if (BUSY_STATES.includes(current.state)) throw new UpdateError('busy', `an update is in progress (${current.state}${current.progress !== null ? ` ${current.progress}%` : ''}): wait until it is over`);
  const dir = updateDir(dataDir);
  let limit: number;
  try {
    await ensureDir(dataDir);
    limit = await room(dir);
  } catch (err) {
    throw storageError(err, dir);
  }
  const tooLarge = (size: number): UpdateError =>
    new UpdateError('too_large', `the bundle (${mb(size)}) does not fit: ${mb(limit)} may be used in ${dir} (free space less ${mb(FREE_RESERVE_BYTES)} kept for the gateway's data)`);
  if (opts.expectedSize !== undefined && opts.expectedSize > limit) throw tooLarge(opts.expectedSize);

  const { first, rest } = await head(body).catch((err: unknown) => {
    throw new UpdateError('incomplete', `the bundle could not be read: ${(err as Error).message}`);
  });
  if (first.length === 0) throw new UpdateError('not_bundle', 'the body is empty: send the .raucb file itself');
  if (!first.subarray(0, SQUASHFS_MAGIC.length).equals(SQUASHFS_MAGIC)) {
    throw new UpdateError('not_bundle', 'this is not a RAUC update bundle (a .raucb file starts with the squashfs magic "hsqs")');
  }

  const part = path.join(dir, F.part);
  const bundle = path.join(dir, F.bundle);
  const fh = await claimPart(part, opts.now).catch((err: unknown) => {
    throw err instanceof UpdateError ? err : storageError(err, dir);
  });
  const hash = createHash('sha256');
  let size = 0;
  let renamed = false;
  try {
    const write = async (chunk: Buffer): Promise<void> => {
      size += chunk.length;
      if (size > limit) throw tooLarge(size);
      hash.update(chunk);
      for (let off = 0; off < chunk.length;) off += (await fh.write(chunk, off)).bytesWritten;
    };
    try {
      await write(first);
      for (let next = await rest.next(); !next.done; next = await rest.next()) await write(next.value);
    } catch (err) {
      if (err instanceof UpdateError) throw err;
      if (typeof err === 'object' && err !== null && 'syscall' in err) throw storageError(err, dir);
      throw new UpdateError('incomplete', `the upload was cut off after ${size} bytes: ${(err as Error).message}`);
    }
    if (opts.expectedSize !== undefined && size !== opts.expectedSize) {
      throw new UpdateError('incomplete', `the upload was cut off: ${size} of ${opts.expectedSize} bytes arrived`);
    }
    await fh.sync();
    await fh.close();
    await rename(part, bundle);
    renamed = true;
    await fsyncDir(dir);
    const request: UpdateRequest = { bundle: F.bundle, size, sha256: hash.digest('hex'), requested_at: new Date(opts.now).toISOString(), by: opts.by };
    await atomicWriteFile(path.join(dir, F.request), `${JSON.stringify(request)}\n`, { mode: 0o640 });
    return request;
  } catch (err) {
    await fh.close().catch(() => {});
    await rm(part, { force: true });
    if (renamed) await rm(bundle, { force: true });
    if (err instanceof UpdateError) throw err;
    throw storageError(err, dir);
  }
}
