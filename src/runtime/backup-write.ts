/**
 * Writes a backup (backup-format.ts) to a stream as it is made: the JSON entries from memory, the history
 * files each streamed from disk, through gzip to the HTTP response. Nothing is built whole in memory, so a
 * history of hundreds of MB costs no more RAM than a config alone. History files are being appended while
 * they are copied: each is copied up to its size when it was listed (a torn last block of the live log is
 * what a power cut leaves too, and the history store repairs it when it opens).
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { pack as tarPack, type Pack } from 'tar-stream';
import { isTmpName } from '../util/atomic-file.js';
import { ENTRY, FORMAT, FORMAT_VERSION, tokenHashesOf, withHashedTokens, type Manifest } from './backup-format.js';
import type { ConfigVersion } from './config-store.js';

export interface BackupSource {
  /** The running configuration as written. */
  raw: unknown;
  /** Every kept configuration version, with its config. */
  versions: ConfigVersion[];
  gatewayId: string;
  gatewayVersion: string;
  /** The history directory, when the file is to hold history. */
  historyDir?: string;
  now: Date;
}

/** Files below `dir` (relative, `/`-separated), sorted; temp files of a write in progress are left out. */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else if (e.isFile() && !isTmpName(e.name)) out.push(rel);
  }
  return out;
}

const addBuffer = (pack: Pack, name: string, data: string, mtime: Date): Promise<void> =>
  new Promise((resolve, reject) => pack.entry({ name, mtime, mode: 0o600 }, data, (err) => (err ? reject(err) : resolve())));

/** Resolves when `sink` takes more; rejects when it fails or closes first (the download was cut: no hang). */
function drained(sink: ReturnType<Pack['entry']>): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      sink.off('drain', onDrain);
      sink.off('error', done);
      sink.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = (): void => done();
    const onClose = (): void => done(new Error('the backup stream closed'));
    sink.on('drain', onDrain);
    sink.on('error', done);
    sink.on('close', onClose);
  });
}

async function addFile(pack: Pack, name: string, file: string, size: number, mtime: Date): Promise<void> {
  let entry: ReturnType<Pack['entry']> | undefined;
  const written = new Promise<void>((resolve, reject) => {
    entry = pack.entry({ name, size, mtime, mode: 0o600 }, (err) => (err ? reject(err) : resolve()));
    // A cut download destroys the pack and its entry: the error is the caller's, not an unhandled event.
    entry.on('error', reject);
    entry.on('close', () => reject(new Error('the backup stream closed')));
  });
  written.catch(() => {});
  const sink = entry!;
  const rs = createReadStream(file, { start: 0, end: Math.max(0, size - 1) });
  try {
    if (size > 0) {
      for await (const chunk of rs) {
        if (!sink.write(chunk as Buffer)) await Promise.race([drained(sink), written]);
      }
    }
    // streamx types want an argument; no data ends the entry as it is.
    sink.end(undefined);
  } finally {
    rs.destroy();
  }
  await written;
}

async function fill(pack: Pack, src: BackupSource): Promise<void> {
  const config = withHashedTokens(src.raw);
  const versions = src.versions.map((v) => ({ ...v, raw: withHashedTokens(v.raw) }));
  const manifest: Manifest = {
    format: FORMAT, format_version: FORMAT_VERSION, gateway_version: src.gatewayVersion, gateway_id: src.gatewayId,
    created: src.now.toISOString(), history: src.historyDir !== undefined, config_versions: versions.length, token_hashes: tokenHashesOf(config),
  };
  await addBuffer(pack, ENTRY.manifest, `${JSON.stringify(manifest, null, 2)}\n`, src.now);
  await addBuffer(pack, ENTRY.config, `${JSON.stringify(config, null, 2)}\n`, src.now);
  await addBuffer(pack, ENTRY.versions, `${JSON.stringify(versions)}\n`, src.now);
  if (src.historyDir !== undefined) {
    for (const rel of await listFiles(src.historyDir)) {
      const file = path.join(src.historyDir, rel);
      // Listed but gone (retention or a seal removed it meanwhile): not part of the history any more.
      const st = await stat(file).catch(() => undefined);
      if (!st?.isFile()) continue;
      await addFile(pack, `${ENTRY.history}${rel}`, file, st.size, st.mtime);
    }
  }
  pack.finalize();
}

/** Streams the backup into `out` (ends it); rejects when the source or `out` fails (the file is then incomplete). */
export async function writeBackup(src: BackupSource, out: Writable): Promise<void> {
  const pack = tarPack();
  const filling = fill(pack, src).catch((err: unknown) => {
    pack.destroy(err as Error);
    throw err;
  });
  // level 6: the JSON shrinks ~10×; history blocks are already compact, and a Pi's CPU is the limit here.
  const sending = pipeline(pack, createGzip({ level: 6 }), out).catch((err: unknown) => {
    pack.destroy(err as Error);
    throw err;
  });
  await Promise.all([filling, sending]);
}
