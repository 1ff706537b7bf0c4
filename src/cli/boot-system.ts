/**
 * Puts the `system` section of the applied config into the running system: host name, Wi-Fi, root's SSH
 * keys. The root file system is a RAM overlay, so these files are written at every boot, and a section left
 * out of the config removes what it would have written (taking Wi-Fi out of the file turns Wi-Fi off).
 * Each part fails alone: a bad Wi-Fi file must not cost the host name or the SSH keys.
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SystemConfig } from '../config/types.js';
import { atomicWriteFile } from '../util/atomic-file.js';
import { renderAuthorizedKeys, renderHostname, renderHosts, renderWlanNetwork, renderWpaSupplicant } from './boot-render.js';

/** Paths below the root; exported for tests. */
export const SYSTEM_FILES = {
  hostname: 'etc/hostname',
  hosts: 'etc/hosts',
  wpa: 'etc/wpa_supplicant/wpa_supplicant-wlan0.conf',
  network: 'run/systemd/network/25-wlan0.network',
  // In /run (rebuilt at every boot): a key taken out of the config cannot outlive the next boot.
  keys: 'run/shadowgate/authorized_keys.root',
} as const;

export interface SystemOptions {
  /** Prefix of every file; commands run only when it is "/" (tests pass a temp dir). */
  root: string;
  warn: (line: string) => void;
}

const run = promisify(execFile);

async function command(file: string, args: string[], warn: (line: string) => void): Promise<void> {
  try {
    await run(file, args, { timeout: 10_000 });
  } catch (err) {
    warn(`${file} ${args.join(' ')} failed: ${(err as Error).message.split('\n')[0]}`);
  }
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

async function part(name: string, warn: (line: string) => void, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    warn(`${name}: ${(err as Error).message}`);
  }
}

/** Applies `system`; returns the host name now in effect (for the banner), when known. */
export async function applySystem(system: SystemConfig, opts: SystemOptions): Promise<string | undefined> {
  const at = (rel: string): string => path.join(opts.root, rel);
  const live = opts.root === '/';
  const { warn } = opts;

  const name = system.hostname;
  if (name !== undefined) {
    await part('hostname', warn, async () => {
      await atomicWriteFile(at(SYSTEM_FILES.hostname), renderHostname(name), { mode: 0o644 });
      await atomicWriteFile(at(SYSTEM_FILES.hosts), renderHosts(await readText(at(SYSTEM_FILES.hosts)), name), { mode: 0o644 });
      // systemd read /etc/hostname before this unit ran; the kernel's name is set directly.
      if (live) await command('hostname', [name], warn);
    });
  }

  const wifi = system.wifi;
  await part('wifi', warn, async () => {
    if (wifi) {
      // 0600: the file holds the Wi-Fi passphrase.
      await atomicWriteFile(at(SYSTEM_FILES.wpa), renderWpaSupplicant(wifi), { mode: 0o600 });
      await atomicWriteFile(at(SYSTEM_FILES.network), renderWlanNetwork(), { mode: 0o644 });
      // --no-block: this unit runs early in the boot and must not wait for the radio.
      if (live) await command('systemctl', ['--no-block', 'start', 'wpa_supplicant@wlan0.service'], warn);
    } else {
      await rm(at(SYSTEM_FILES.wpa), { force: true });
      await rm(at(SYSTEM_FILES.network), { force: true });
    }
  });

  await part('ssh keys', warn, async () => {
    const keys = system.ssh_authorized_keys;
    if (keys.length > 0) await atomicWriteFile(at(SYSTEM_FILES.keys), renderAuthorizedKeys(keys), { mode: 0o644 });
    else await rm(at(SYSTEM_FILES.keys), { force: true });
  });

  return name ?? ((await readText(at(SYSTEM_FILES.hostname)))?.trim() || undefined);
}
