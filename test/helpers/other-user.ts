/**
 * Running our code as another user (`nobody`), as a service user without rights would run it. That user cannot
 * enter a private (0700) parent of the checkout (issue 37: `make test` in ~/src with a 0700 home), so nothing
 * it runs may come from the checkout: a test builds what the process needs into its own 0755 directory under
 * os.tmpdir() (`otherUserTree`, then `bundleInto`/`gatewayInto`), with esbuild, so no tsx or node_modules
 * are needed there. Where that user cannot run at all, `otherUserMissing()` says why, for `needs` in
 * test/helpers/peers.ts.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

export interface OtherUser {
  uid: number;
  gid: number;
}

const idOf = (flag: '-u' | '-g'): number => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout?.trim() || NaN);

/** The user `nobody` (uid and its primary group). */
export function nobody(): OtherUser {
  return { uid: idOf('-u'), gid: idOf('-g') };
}

let probed: string | null | undefined;

/**
 * Why a test cannot run a process as `nobody` here, or null: we must be root, the user must exist, and it must
 * be able to run this node and enter os.tmpdir() (a TMPDIR inside a private home would not do).
 */
export function otherUserMissing(): string | null {
  if (probed !== undefined) return probed;
  if (process.getuid?.() !== 0) return (probed = 'needs root to run a process as another user');
  const user = nobody();
  if (!Number.isInteger(user.uid) || user.uid <= 0 || !Number.isInteger(user.gid)) return (probed = 'no user nobody');
  const tmp = os.tmpdir();
  const r = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(tmp)}, require('fs').constants.X_OK)`],
    { uid: user.uid, gid: user.gid, cwd: '/', env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, encoding: 'utf8', timeout: 10_000 });
  if (r.error) return (probed = `nobody cannot run ${process.execPath}: ${r.error.message}`);
  if (r.status !== 0) return (probed = `nobody cannot enter ${tmp} (os.tmpdir()): ${r.stderr.trim().split('\n').find((l) => l.includes('Error')) ?? r.stderr.trim()}`);
  return (probed = null);
}

/** A fresh directory under os.tmpdir() that every user may enter and read (0755), ours to remove. */
export async function otherUserTree(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

const SRC = path.resolve('src');
// Native addons stay external, as in scripts/dist.sh: required only when a serial or GPIO bus starts.
const NATIVE = ['@serialport/bindings-cpp', 'onoff', 'epoll'];

/**
 * `entry` (a path in the checkout) and everything it imports as one ESM file `out`. Code that finds files
 * beside itself (import.meta.url: schema.json, board/) is pointed at the same path under `out`'s directory,
 * as scripts/dist.sh does for the release bundle; `gatewayInto` puts those files there.
 */
export async function bundleInto(entry: string, out: string): Promise<string> {
  const root = path.dirname(out);
  await build({
    entryPoints: [path.resolve(entry)], outfile: out, bundle: true, platform: 'node', format: 'esm', target: 'node20',
    logLevel: 'error', legalComments: 'none', external: NATIVE,
    // require() of the external natives from an ESM bundle needs a real require.
    banner: { js: "import { createRequire as __sgRequire } from 'node:module'; const require = __sgRequire(import.meta.url);" },
    plugins: [{
      name: 'import-meta-url',
      setup(b) {
        b.onLoad({ filter: /\.ts$/ }, async (args) => {
          const text = await readFile(args.path, 'utf8');
          if (!args.path.startsWith(SRC + path.sep)) return { contents: text, loader: 'ts' };
          const rel = `./${path.relative(path.dirname(SRC), args.path).split(path.sep).join('/')}`;
          return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'ts' };
        });
      },
    }],
  });
  await chmod(out, 0o644);
  await chmod(root, 0o755);
  return out;
}

/**
 * `shadowgate` as one file in `dir` with the files it reads at start (the schema, the model and board
 * libraries, package.json for its version); the web console is left out (the gateway runs without it).
 * Run it with `node <returned path> run --config …`.
 */
export async function gatewayInto(dir: string): Promise<string> {
  const main = await bundleInto('src/main.ts', path.join(dir, 'shadowgate.mjs'));
  await mkdir(path.join(dir, 'src/config'), { recursive: true });
  await cp('src/config/schema.json', path.join(dir, 'src/config/schema.json'));
  await cp('board/models', path.join(dir, 'board/models'), { recursive: true });
  await cp('board/boards', path.join(dir, 'board/boards'), { recursive: true });
  await cp('package.json', path.join(dir, 'package.json'));
  // cp keeps the checkout's modes; a umask of 077 would have made them ours alone.
  spawnSync('chmod', ['-R', 'a+rX', dir]);
  return main;
}

/** Runs `node args…` as `user` in `cwd` (never the checkout: nobody may not enter it), to completion. */
export function runAs(user: OtherUser, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, args, {
    uid: user.uid, gid: user.gid, cwd: opts.cwd, encoding: 'utf8', timeout: opts.timeoutMs ?? 30_000,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: opts.cwd, ...opts.env },
  });
}
