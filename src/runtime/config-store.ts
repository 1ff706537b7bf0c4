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
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import nodePersist from 'node-persist';
import type { LocalStorage } from 'node-persist';
import { atomicWriteFile } from '../util/atomic-file.js';

const KEEP = 20;

export interface ConfigVersion {
  version: number;
  /** Wall time of the change, ms. */
  time: number;
  summary: string;
  raw: unknown;
}

interface Active {
  base_sha256: string;
  version: number;
  config: unknown;
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** The applied config to run instead of the file's, when it was derived from this very file text. */
export async function readActiveConfig(dataDir: string, fileText: string): Promise<unknown> {
  try {
    const active = JSON.parse(await readFile(path.join(dataDir, 'config', 'active.json'), 'utf8')) as Active;
    return active.base_sha256 === sha256(fileText) ? active.config : undefined;
  } catch {
    return undefined;
  }
}

export class ConfigStore {
  private storage: LocalStorage | undefined;
  private latest = 0;

  constructor(private readonly dir: string, private readonly baseSha: string) {}

  async open(): Promise<void> {
    const storage = nodePersist.create({ dir: path.join(this.dir, 'versions'), expiredInterval: 0, writeQueue: false, ttl: false });
    await storage.init();
    this.storage = storage;
    this.latest = Math.max(0, ...(await this.keys()));
  }

  /** Records a version and makes it the active config. */
  async record(raw: unknown, summary: string, time: number): Promise<number> {
    const version = this.latest + 1;
    this.latest = version;
    const entry: ConfigVersion = { version, time, summary, raw };
    // The active file first: it is what the next start runs; a lost history entry only loses a rollback point.
    await atomicWriteFile(path.join(this.dir, 'active.json'), JSON.stringify({ base_sha256: this.baseSha, version, config: raw } satisfies Active));
    await this.must().setItem(`v${version}`, entry);
    for (const old of (await this.keys()).filter((v) => v <= version - KEEP)) await this.must().removeItem(`v${old}`);
    return version;
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

  async get(version: number): Promise<ConfigVersion | undefined> {
    return (await this.must().getItem(`v${version}`)) as ConfigVersion | undefined;
  }

  private async keys(): Promise<number[]> {
    const keys = await this.must().keys();
    return keys.map((k) => /^v(\d+)$/.exec(k)?.[1]).filter((v): v is string => v !== undefined).map(Number);
  }

  private must(): LocalStorage {
    if (!this.storage) throw new Error('config store is not open');
    return this.storage;
  }
}
