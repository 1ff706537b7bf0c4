/**
 * Where live configuration changes are kept: `<data_dir>/config/active.json` (the config the console last
 * applied, written atomically, with the sha256 of the config file it was derived from) and the version
 * history in node-persist (one key per version, the newest `KEEP` kept) for one-click rollback.
 *
 * The config file itself is not rewritten: under systemd it is read-only to the service (/etc, or the
 * image's /data/config written by boot-config). At start the applied config wins while the file is the one
 * it was derived from; once someone edits the file (or the boot partition's shadowgate.json), the file
 * wins — the last edit counts, wherever it was made.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import nodePersist from 'node-persist';
import type { LocalStorage } from 'node-persist';
import { ignoreDamage, type DamageSink } from '../store/damage.js';
import { atomicWriteFile } from '../util/atomic-file.js';

const KEEP = 20;

export interface ConfigVersion {
  version: number;
  /** Wall time of the change, ms. */
  time: number;
  summary: string;
  raw: unknown;
  /** Where it came from: the config file read at a start, or a change applied from the console/API. */
  origin?: VersionOrigin;
}

export type VersionOrigin = 'file' | 'console';

/** Versions recorded before `origin` existed are told apart by the summary the start wrote. */
export const FILE_SUMMARIES = ['configuration at start', 'configuration file changed'];
export const originOf = (v: ConfigVersion): VersionOrigin => v.origin ?? (FILE_SUMMARIES.includes(v.summary) ? 'file' : 'console');

interface Active {
  base_sha256: string;
  version: number;
  config: unknown;
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The applied config to run instead of the file's, when it was derived from this very file text. A damaged
 * active.json is set aside: the file's config runs (and the console's last version stays in the history).
 */
export async function readActiveConfig(dataDir: string, fileText: string, damage: DamageSink = ignoreDamage): Promise<unknown> {
  const file = path.join(dataDir, 'config', 'active.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  let active: Active;
  try {
    active = JSON.parse(text) as Active;
    if (!isObj(active) || typeof active.base_sha256 !== 'string' || !('config' in active)) throw new Error('not an applied configuration');
  } catch (err) {
    await damage.setAside(file, `unreadable (${(err as Error).message}): running the configuration file`);
    return undefined;
  }
  return active.base_sha256 === sha256(fileText) ? active.config : undefined;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class ConfigStore {
  private storage: LocalStorage | undefined;
  private latest = 0;

  constructor(private readonly dir: string, private readonly baseSha: string, private readonly damage: DamageSink = ignoreDamage) {}

  async open(): Promise<void> {
    await this.setAsideDamaged();
    const storage = nodePersist.create({ dir: path.join(this.dir, 'versions'), expiredInterval: 0, writeQueue: false, ttl: false });
    await storage.init();
    this.storage = storage;
    this.latest = Math.max(0, ...(await this.keys()));
  }

  /** Records a version and makes it the active config. */
  async record(raw: unknown, summary: string, time: number, origin: VersionOrigin = 'console'): Promise<number> {
    const version = this.latest + 1;
    this.latest = version;
    const entry: ConfigVersion = { version, time, summary, raw, origin };
    // The active file first: it is what the next start runs; a lost history entry only loses a rollback point.
    await atomicWriteFile(path.join(this.dir, 'active.json'), JSON.stringify({ base_sha256: this.baseSha, version, config: raw } satisfies Active));
    await this.must().setItem(`v${version}`, entry);
    for (const old of (await this.keys()).filter((v) => v <= version - KEEP)) await this.must().removeItem(`v${old}`);
    return version;
  }

  /** Puts versions in with their own numbers (a restored backup's rollback points); the newest KEEP stay. */
  async importVersions(entries: readonly ConfigVersion[]): Promise<void> {
    const kept = [...entries].sort((a, b) => b.version - a.version).slice(0, KEEP);
    for (const entry of kept) await this.must().setItem(`v${entry.version}`, entry);
    this.latest = Math.max(this.latest, ...kept.map((e) => e.version));
  }

  /** Every kept version with its config, oldest first (a backup's versions.json). */
  async all(): Promise<ConfigVersion[]> {
    const out: ConfigVersion[] = [];
    for (const v of (await this.keys()).sort((a, b) => a - b)) {
      const entry = await this.get(v);
      if (entry) out.push(entry);
    }
    return out;
  }

  /** The newest version with its config, if any. */
  async latestVersion(): Promise<ConfigVersion | undefined> {
    return this.latest > 0 ? this.get(this.latest) : undefined;
  }

  /** Newest first, without their configs. */
  async versions(): Promise<Omit<ConfigVersion, 'raw'>[]> {
    const out: Omit<ConfigVersion, 'raw'>[] = [];
    for (const v of (await this.keys()).sort((a, b) => b - a)) {
      const entry = await this.get(v);
      if (entry) out.push({ version: entry.version, time: entry.time, summary: entry.summary });
    }
    return out;
  }

  /** The newest version read from the config file before `version` (what the console's changes started from). */
  async fileVersionBefore(version: number): Promise<ConfigVersion | undefined> {
    for (const v of (await this.keys()).filter((k) => k < version).sort((a, b) => b - a)) {
      const entry = await this.get(v);
      if (entry && originOf(entry) === 'file') return entry;
    }
    return undefined;
  }

  async get(version: number): Promise<ConfigVersion | undefined> {
    return (await this.must().getItem(`v${version}`)) as ConfigVersion | undefined;
  }

  private async keys(): Promise<number[]> {
    const keys = await this.must().keys();
    return keys.map((k) => /^v(\d+)$/.exec(k)?.[1]).filter((v): v is string => v !== undefined).map(Number);
  }

  /**
   * node-persist throws on the first file that is not its JSON (`does not look like a valid storage file`),
   * and reads every file for keys(): one version torn by a power cut during an apply would stop every start.
   * Each file is read once here; a damaged one is set aside and only that rollback point is lost.
   */
  private async setAsideDamaged(): Promise<void> {
    const versions = path.join(this.dir, 'versions');
    const names = await readdir(versions).catch(() => [] as string[]);
    for (const name of names) {
      if (name.startsWith('.')) continue; // temp files: node-persist skips them too
      const file = path.join(versions, name);
      try {
        const datum = JSON.parse(await readFile(file, 'utf8')) as unknown;
        if (!isObj(datum) || typeof datum.key !== 'string' || !/^v\d+$/.test(datum.key) || !isObj(datum.value)) throw new Error('not a configuration version');
      } catch (err) {
        await this.damage.setAside(file, `configuration version unreadable (${(err as Error).message}): that rollback point is lost`);
      }
    }
  }

  private must(): LocalStorage {
    if (!this.storage) throw new Error('config store is not open');
    return this.storage;
  }
}
