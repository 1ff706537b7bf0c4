// The Node.js releases shadowgate supports besides the machine's own (package.json engines: 20, 22, 24),
// as exact official binaries from the npm registry (node-linux-<arch>@<version>: the nodejs.org tarball,
// bin/node plus include/node, no install scripts), unpacked into a cache directory. Used by
// scripts/test.mjs (the unit tests on each) and scripts/dist.sh (onoff's epoll built against each one's
// headers). The cache lies outside the checkout (SHADOWGATE_CACHE, else ~/.cache/shadowgate), keyed by the exact
// version, so a fresh clone finds the releases it needs already unpacked.
//
//   node scripts/node-versions.mjs [MAJOR...]   prints "<major> <dir>" per release, installing what is missing
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Pinned exact versions, one per supported major (bump deliberately: CI runs the unit tests on each). */
export const NODE_VERSIONS = { 20: '20.20.2', 22: '22.23.3', 24: '24.21.0' };

/**
 * What the build and the tests keep between clones, content-addressed (a release's exact version, a hash of the
 * inputs): the Node releases, their epoll builds (dist.sh) and the image's base root tree (build-image.sh).
 */
export const CACHE = path.resolve(process.env.SHADOWGATE_CACHE ?? path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'shadowgate'));
export const NODE_CACHE = path.resolve(process.env.SHADOWGATE_NODE_CACHE ?? path.join(CACHE, 'node'));

/** The npm package with this machine's official Node binary (the tests run it; its headers serve any arch). */
function packageName() {
  const arch = { x64: 'x64', arm64: 'arm64', arm: 'armv7l' }[process.arch];
  if (process.platform !== 'linux' || !arch) throw new Error(`no node-linux-* package for ${process.platform}-${process.arch}`);
  return `node-linux-${arch}`;
}

/** The unpacked release for one major (installing it when missing): its directory, with bin/node and include/node. */
export function nodeDir(major) {
  const version = NODE_VERSIONS[major];
  if (!version) throw new Error(`no pinned Node.js ${major} (pinned: ${Object.keys(NODE_VERSIONS).join(', ')})`);
  const dir = path.join(NODE_CACHE, version);
  if (existsSync(path.join(dir, 'bin', 'node')) && existsSync(path.join(dir, 'include', 'node', 'node.h'))) return dir;
  mkdirSync(NODE_CACHE, { recursive: true });
  const tmp = mkdtempSync(path.join(NODE_CACHE, `.${version}-`));
  try {
    const spec = `${packageName()}@${version}`;
    const pack = spawnSync('npm', ['pack', spec, '--pack-destination', tmp, '--silent', '--no-fund', '--no-audit'], { encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm pack ${spec} failed: ${pack.stderr.trim().split('\n').slice(-3).join(' ')}`);
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new Error(`npm pack ${spec} wrote no tarball`);
    const out = path.join(tmp, 'out');
    mkdirSync(out);
    const tar = spawnSync('tar', ['xzf', path.join(tmp, tgz), '-C', out, '--strip-components=1', '--no-same-owner'], { encoding: 'utf8' });
    if (tar.status !== 0) throw new Error(`unpacking ${tgz} failed: ${tar.stderr.trim()}`);
    rmSync(dir, { recursive: true, force: true });
    try {
      renameSync(out, dir);
    } catch (err) {
      // Another clone's run unpacked the same release meanwhile: the same bytes, keep theirs.
      if (!existsSync(path.join(dir, 'bin', 'node'))) throw err;
    }
    return dir;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const majors = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(NODE_VERSIONS);
  try {
    for (const m of majors) console.log(`${m} ${nodeDir(m)}`);
  } catch (err) {
    console.error(`node-versions: ${err.message}`);
    process.exit(1);
  }
}
