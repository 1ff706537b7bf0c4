/**
 * Reads a backup file (backup-format.ts) and stages it beside the data it will replace: every entry is
 * checked and written under `<data_dir>/.restore-staging-<pid>/` (fsynced), the configuration validated on
 * this gateway, and only when the whole file read cleanly is the staging directory renamed to
 * `restore.pending` — the one step that makes a restore happen (at the next start: lifecycle.ts). A bad,
 * foreign, truncated or too new file fails here with what is wrong, and nothing in data_dir has changed.
 */
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract } from 'tar-stream';
import { ConfigError } from '../config/load.js';
import { atomicWriteFile, fsyncDir } from '../util/atomic-file.js';
import { LIFECYCLE_FILES } from '../util/lifecycle-files.js';
import { ENTRY, MAX_JSON_BYTES, checkManifest, checkVersions, historyPath, withHashedTokens, type Manifest } from './backup-format.js';
import { ConfigStore, type ConfigVersion } from './config-store.js';


/** Where a restore is read into (one per process); left over only by a process that died meanwhile. */
export const STAGING_PREFIX = '.restore-staging-';

/** In the staged directory: where the restore came from and what it holds. */
export const PENDING_INFO = 'restore.json';

export interface StageOptions {
  dataDir: string;
  /** sha256 of the config file this gateway runs from: the restored config runs instead of it until the file is edited. */
  baseSha: string;
  /** This gateway's own tokens: they keep working after the restore (the console that restores stays logged in). */
  keepTokens: { tokens: string[]; read_tokens: string[] };
  /** This gateway's gateway.data_dir as written (absent: the default): a restored config keeps it. */
  dataDirValue: unknown;
  /** Validates a config on this gateway (its models and checks); throws ConfigError. */
  validate: (raw: unknown) => void;
  now: number;
  /** Who asked, for the version's summary: `console` or `boot partition`. */
  source: string;
}

export interface StageSummary {
  gateway_id: string;
  gateway_version: string;
  created: string;
  history: boolean;
  history_files: number;
  config_versions: number;
}

export class RestoreError extends Error {}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

async function readJson(stream: AsyncIterable<unknown>, name: string): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES) throw new RestoreError(`${name} is larger than ${MAX_JSON_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    throw new RestoreError(`${name} is not JSON: ${(err as Error).message}`);
  }
}

async function writeSynced(file: string, stream: AsyncIterable<unknown>): Promise<number> {
  await mkdir(path.dirname(file), { recursive: true });
  const fh = await open(file, 'wx', 0o644);
  let size = 0;
  try {
    for await (const chunk of stream) {
      size += (chunk as Buffer).length;
      await fh.write(chunk as Buffer);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return size;
}

/** The config as it will run here: tokens hashed plus this gateway's, data_dir this gateway's. */
function localize(raw: unknown, opts: StageOptions): unknown {
  const out = withHashedTokens(raw, opts.keepTokens);
  if (!isObj(out)) return out;
  const gateway = isObj(out.gateway) ? { ...out.gateway } : {};
  if (opts.dataDirValue === undefined) delete gateway.data_dir;
  else gateway.data_dir = opts.dataDirValue;
  return { ...out, gateway };
}

const problemsText = (err: ConfigError): string => {
  const shown = err.problems.slice(0, 5).join('; ');
  return err.problems.length > 5 ? `${shown}; and ${err.problems.length - 5} more` : shown;
};

interface Read { manifest?: Manifest; config?: unknown; versions?: ConfigVersion[]; historyFiles: number; historyDirs: Set<string> }

async function readEntries(input: Readable | AsyncIterable<Buffer>, staging: string): Promise<Read> {
  const extract = tarExtract();
  const feeding = pipeline(input, createGunzip(), extract);
  const read: Read = { historyFiles: 0, historyDirs: new Set() };
  try {
    for await (const entry of extract) {
      const { name, type } = entry.header;
      if (!read.manifest) {
        if (name !== ENTRY.manifest) throw new RestoreError(`not a shadowgate backup: it starts with ${JSON.stringify(name.slice(0, 120))}, not ${ENTRY.manifest}`);
        read.manifest = checkManifest(await readJson(entry, name));
      } else if (name === ENTRY.config && type === 'file') {
        read.config = await readJson(entry, name);
      } else if (name === ENTRY.versions && type === 'file') {
        read.versions = checkVersions(await readJson(entry, name));
      } else if (name.startsWith(ENTRY.history) && (type === 'file' || type === 'directory')) {
        if (!read.manifest.history) throw new RestoreError('the backup holds history files its manifest does not announce');
        const rel = name === ENTRY.history ? '' : historyPath(name);
        if (type === 'file') {
          const file = path.join(staging, 'history', rel);
          await writeSynced(file, entry);
          read.historyFiles++;
          read.historyDirs.add(path.dirname(file));
        } else {
          entry.resume();
        }
      } else {
        throw new RestoreError(`the backup holds an unexpected entry ${JSON.stringify(name.slice(0, 120))} (${type})`);
      }
    }
    await feeding;
  } catch (err) {
    extract.destroy();
    await feeding.catch(() => {});
    throw err;
  }
  return read;
}

/** Reads, checks and stages a backup; resolves with what it holds, or rejects with a RestoreError saying why. */
export async function stageRestore(input: Readable | AsyncIterable<Buffer>, opts: StageOptions): Promise<StageSummary> {
  const staging = path.join(opts.dataDir, `${STAGING_PREFIX}${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    let read: Read;
    try {
      read = await readEntries(input, staging);
    } catch (err) {
      if (err instanceof RestoreError) throw err;
      // A file system error is ours (a full disk), not the file's.
      if (typeof err === 'object' && err !== null && 'syscall' in err) throw new RestoreError(`it could not be staged in ${opts.dataDir}: ${String((err as { message?: unknown }).message)}`);
      // zlib and tar say it their way ("unexpected end of file", "incorrect header check"): name the likely cause.
      throw new RestoreError(`the file is not a complete shadowgate backup (${(err as Error).message}): was it cut short, or is it another file?`);
    }
    const { manifest } = read;
    if (!manifest) throw new RestoreError('the file is empty: not a shadowgate backup');
    if (read.config === undefined) throw new RestoreError(`the backup has no ${ENTRY.config}`);
    if (!read.versions) throw new RestoreError(`the backup has no ${ENTRY.versions}`);
    const config = localize(read.config, opts);
    try {
      opts.validate(config);
    } catch (err) {
      if (err instanceof ConfigError) throw new RestoreError(`the backup's configuration is not valid on this gateway: ${problemsText(err)}`);
      throw err;
    }
    const store = new ConfigStore(path.join(staging, 'config'), opts.baseSha);
    await store.open();
    await store.importVersions(read.versions.map((v) => ({ ...v, raw: localize(v.raw, opts) })));
    // The restored config is the newest version: the next start runs it and finds nothing changed.
    await store.record(config, `restored from the backup of ${manifest.gateway_id} made ${manifest.created} (${opts.source})`, opts.now, 'console');
    const summary: StageSummary = {
      gateway_id: String(manifest.gateway_id), gateway_version: String(manifest.gateway_version), created: String(manifest.created),
      history: manifest.history, history_files: read.historyFiles, config_versions: read.versions.length,
    };
    // What the start that applies it reports (lifecycle.ts).
    await atomicWriteFile(path.join(staging, PENDING_INFO), JSON.stringify({ source: opts.source, ...summary }));
    for (const dir of [...read.historyDirs, ...(read.historyFiles > 0 ? [path.join(staging, 'history')] : []), path.join(staging, 'config', 'versions'), path.join(staging, 'config'), staging]) await fsyncDir(dir);
    const pending = path.join(opts.dataDir, LIFECYCLE_FILES.restorePending);
    await rm(pending, { recursive: true, force: true });
    await rename(staging, pending);
    await fsyncDir(opts.dataDir);
    return summary;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}
