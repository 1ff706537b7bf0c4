/**
 * `shadowgate boot-config`: run as root by a oneshot unit at every boot of the SD image, before the gateway
 * and the network. It validates the config the user edits on the FAT boot partition, stores the config to
 * run on the data partition (boot-apply.ts), writes the status the gateway shows in /health/shadow, applies
 * host name, Wi-Fi and SSH keys (boot-system.ts), hands a backup to restore or a factory reset left on the
 * boot partition to the gateway (boot-lifecycle.ts) and writes the console banner (boot-banner.ts).
 * Exit status: 0 when a config is applied (also the last good one: the boot goes on), 1 when none is usable,
 * 2 for a usage error.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { atomicWriteFile } from '../util/atomic-file.js';
import { readVersion } from '../util/version.js';
import { applyConfig, dirFiles } from './boot-apply.js';
import { renderIssue, renderSummary, type BootFacts } from './boot-banner.js';
import { applySystem } from './boot-system.js';
import { bootRequests, handOver } from './boot-lifecycle.js';

const USAGE = `usage: shadowgate boot-config [--source FILE] [--dir DIR] [--fallback FILE] [--root DIR]
  --source FILE    the config the user edits (default /boot/firmware/shadowgate.json); beside it
                   shadowgate-restore.tar.gz (a backup) or shadowgate-factory-reset is applied once
  --dir DIR        where the config to run, the API token and status.json are kept (default /data/config)
  --fallback FILE  the image's default config, for a first boot with a broken file (default /usr/share/shadowgate/shadowgate.json)
  --root DIR       prefix of every system file written (default /); with another root no command is run`;

/** Group that may read config.json (the gateway's user), from `<root>/etc/group`; only root can hand it out. */
async function configGroup(root: string): Promise<number | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const line = (await readFile(path.join(root, 'etc/group'), 'utf8')).split('\n').find((l) => l.startsWith('shadowgate:'));
    const gid = Number(line?.split(':')[2]);
    return line && Number.isInteger(gid) ? gid : undefined;
  } catch {
    return undefined;
  }
}

function parse(args: string[]): { source: string; dir: string; fallback: string; root: string; help: boolean } {
  const { values } = parseArgs({
    args, strict: true, allowPositionals: false,
    options: {
      source: { type: 'string', default: '/boot/firmware/shadowgate.json' },
      dir: { type: 'string', default: '/data/config' },
      fallback: { type: 'string', default: '/usr/share/shadowgate/shadowgate.json' },
      root: { type: 'string', default: '/' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  return { source: values.source, dir: values.dir, fallback: values.fallback, root: path.resolve(values.root), help: values.help };
}

export async function runBootConfig(args: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let opts: ReturnType<typeof parse>;
  try {
    opts = parse(args);
  } catch (e) {
    err(`error: ${(e as Error).message}`);
    err(USAGE);
    return 2;
  }
  if (opts.help) {
    out(USAGE);
    return 0;
  }
  const files = dirFiles(opts.dir);
  const gid = await configGroup(opts.root);
  // Beside shadowgate.json: a backup to restore, or a factory reset (boot-lifecycle.ts). A reset makes a new
  // token, so the old one goes before the config is stored.
  const bootDir = path.dirname(opts.source);
  const requests = await bootRequests(bootDir);
  if (requests.reset) await rm(files.token, { force: true });
  const applied = await applyConfig({ source: opts.source, dir: opts.dir, fallback: opts.fallback, ...(gid === undefined ? {} : { gid }) });
  // status.json carries no secret (the token is named by its origin only), so everyone may read it.
  await atomicWriteFile(files.status, `${JSON.stringify(applied.status, null, 2)}\n`, { mode: 0o644 });

  const { config, status } = applied;
  if (config) {
    for (const line of await handOver(requests, config.gateway.data_dir, { bootDir, live: opts.root === '/', warn: err })) out(line);
  }
  const hostname = config ? await applySystem(config.system, { root: opts.root, warn: err }) : undefined;
  const facts: BootFacts = {
    version: readVersion(),
    ...(config ? { gatewayId: config.gateway.id, port: config.http.port } : {}),
    ...(hostname === undefined ? {} : { hostname }),
    ...(applied.token === undefined ? {} : { token: applied.token }),
    tokenKind: status.token, tokenFile: files.token, message: status.message, problems: status.problems, statusFile: files.status,
  };
  try {
    // agetty reads it as root; with the token in it, nobody else needs to.
    const mode = facts.token === undefined ? 0o644 : 0o600;
    await atomicWriteFile(path.join(opts.root, 'run/issue.d/50-shadowgate.issue'), renderIssue(facts), { mode });
  } catch (e) {
    err(`console banner: ${(e as Error).message}`);
  }
  for (const line of renderSummary(facts)) out(line);
  return config ? 0 : 1;
}
