/**
 * The boot status file: written by `shadowgate boot-config` at every boot, read once by `run` when
 * $SHADOWGATE_BOOT_STATUS names it, and shown in /health/shadow as `checks.boot_config`. A user who broke
 * the config file on the boot partition sees why over REST, since the gateway still runs on the last good one.
 */
import { readFile } from 'node:fs/promises';

export interface BootStatus {
  /** The source file was valid and is what runs. */
  ok: boolean;
  /** ISO time of the boot-config run. */
  at: string;
  /** The file the user edits (on the boot partition). */
  source: string;
  /** sha256 of its bytes; null when it could not be read. */
  sha256: string | null;
  /** What the gateway runs on; null only when nothing usable was found (boot-config exit status 1). */
  applied: 'source' | 'last-good' | 'fallback' | null;
  message: string;
  /** `path: message` lines of the source (and of the fallback when that failed too). */
  problems: string[];
  /** Where the API token came from; never the token itself. */
  token: 'generated' | 'config' | 'none';
}

/** The file's content, or why it is unusable (a missing status must not stop the gateway). */
export async function readBootStatus(file: string): Promise<{ status?: Record<string, unknown>; problem?: string }> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: 'not a JSON object' };
    return { status: parsed as Record<string, unknown> };
  } catch (err) {
    return { problem: (err as Error).message };
  }
}
