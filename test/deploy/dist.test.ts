/**
 * `make dist` (scripts/dist.sh): the bundle plus the pruned native node_modules, copied out of the
 * checkout (so nothing can fall back to the repo's node_modules), starts with board/demo.json and
 * answers REST; the native addons load from the pruned tree.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { needs } from '../helpers/peers.js';
import { exited, waitReady } from '../helpers/spawn.js';
import { NODE_VERSIONS, nodeDir } from '../../scripts/node-versions.mjs';
import { run } from './run.js';

let dir = '';
let buildDir = '';
let tree = '';
let child: ChildProcess | undefined;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-dist-'));
  // build/ does not exist in a fresh clone (it is git-ignored output).
  await mkdir(path.resolve('build'), { recursive: true });
  buildDir = await mkdtemp(path.resolve('build', '.test-dist-'));
});

test.after(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
  await rm(buildDir, { recursive: true, force: true });
});

// `make test` builds first, so under CI an unbuilt dist/ is a broken build step, not a reason to skip.
const withBuild = needs(existsSync('dist/main.js') ? null : 'dist/ is not built (make build)', 'make dist');

withBuild('dist.sh bundles into one file, keeps only the natives, and has arm64 binaries for every one', async () => {
  // A fresh clone builds epoll six times (3 Node ABIs × 2 arches, ~10 s each on 2 cores); later runs use the cache.
  const r = await run('sh', ['scripts/dist.sh'], { DIST_OUT: path.join(buildDir, 'shadowgate') }, 400_000);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /arm64: @serialport\/bindings-cpp prebuild present/);
  assert.match(r.stdout, /arm64: epoll present for 3 Node ABIs/);
  const out = path.join(buildDir, 'shadowgate');
  const top = (await readdir(path.join(out, 'node_modules'))).sort();
  // Pure-JS dependencies (aedes, pino, ajv, mqtt, …) are in the bundle, not in node_modules.
  for (const bundled of ['aedes', 'pino', 'ajv', 'mqtt', 'polka', 'ws', 'serialport', 'modbus-serial', 'nan']) {
    assert.not.ok(top.includes(bundled), `${bundled} should be bundled, not shipped: ${top.join(' ')}`);
  }
  for (const native of ['@serialport', 'onoff', 'epoll', 'node-gyp-build', 'bindings']) assert.ok(top.includes(native), `${native} missing`);
  assert.ok(existsSync(path.join(out, 'node_modules/@serialport/bindings-cpp/prebuilds/linux-arm64/@serialport+bindings-cpp.armv8.glibc.node')));
  // epoll has no prebuilds: dist.sh builds one per Node ABI (20: 115, 22: 127, 24: 137), cross-compiled for
  // arm64. ELF header: e_machine 183 = AArch64, 64-bit class. No build/ of the checkout's own Node is kept.
  for (const abi of [115, 127, 137]) {
    const epoll = await readFile(path.join(out, `node_modules/epoll/prebuilds/linux-arm64/node.abi${abi}.node`));
    assert.is(epoll.toString('latin1', 1, 4), 'ELF');
    assert.is(epoll[4], 2, 'ELFCLASS64');
    assert.is(epoll.readUInt16LE(18), 183, `epoll abi ${abi} e_machine ${epoll.readUInt16LE(18)}, not AArch64`);
    assert.ok(existsSync(path.join(out, `node_modules/epoll/prebuilds/linux-${process.arch}/node.abi${abi}.node`)), `no ${process.arch} epoll for abi ${abi}`);
  }
  assert.not.ok(existsSync(path.join(out, 'node_modules/epoll/build')), 'epoll/build/ shipped');
  assert.not.ok(existsSync(path.join(out, 'node_modules/@serialport/bindings-cpp/prebuilds/win32-x64')), 'prebuilds for other OSes pruned');
  for (const f of ['shadowgate.mjs', 'dist/config/schema.json', 'board/models', 'board/boards', 'systemd/shadowgate.service', 'scripts/install.sh']) {
    assert.ok(existsSync(path.join(out, f)), `${f} missing from the release tree`);
  }
  tree = path.join(dir, 'shadowgate');
  await cp(out, tree, { recursive: true });
});

withBuild('the bundle loads its native addons from the pruned node_modules', async () => {
  assert.ok(tree, 'needs the release tree from the previous test');
  const probe = `
    import { createRequire } from 'node:module';
    const require = createRequire(${JSON.stringify(path.join(tree, 'shadowgate.mjs'))});
    const sp = require.resolve('@serialport/bindings-cpp');
    const { autoDetect } = require('@serialport/bindings-cpp'); // loads the .node at require time
    const addon = require('node-gyp-build').path(require('node:path').resolve(sp, '../..'));
    const onoff = require.resolve('onoff');
    console.log(JSON.stringify({ sp, addon, open: typeof autoDetect().open, onoff }));`;
  const r = await run(process.execPath, ['--input-type=module', '-e', probe], {}, 15_000);
  assert.is(r.code, 0, r.stderr);
  const got = JSON.parse(r.stdout) as { sp: string; addon: string; open: string; onoff: string };
  assert.ok(got.sp.startsWith(tree), `resolved outside the release tree: ${got.sp}`);
  assert.ok(got.addon.startsWith(tree) && got.addon.endsWith('.node'), got.addon);
  assert.is(got.open, 'function');
  assert.ok(got.onoff.startsWith(tree), got.onoff);
});

// The Node.js releases the tree must load on: this one and the pinned 20, 22 and 24 (scripts/node-versions.mjs).
const nodes = (): { name: string; bin: string }[] => [
  { name: `this node ${process.version}`, bin: process.execPath },
  ...Object.keys(NODE_VERSIONS).map((m) => ({ name: `node ${NODE_VERSIONS[m]}`, bin: path.join(nodeDir(m), 'bin', 'node') })),
];

withBuild('the tree loads on Node 20, 22 and 24: onoff with its epoll addon, serialport\'s, the bundle\'s commands', async () => {
  assert.ok(tree, 'needs the release tree from the first test');
  const probe = `
    const onoff = require(${JSON.stringify(path.join(tree, 'node_modules/onoff'))}); // requires epoll: its .node for this ABI
    const { autoDetect } = require(${JSON.stringify(path.join(tree, 'node_modules/@serialport/bindings-cpp'))});
    console.log(JSON.stringify({ abi: process.versions.modules, gpio: typeof onoff.Gpio.accessible, list: typeof autoDetect().list }));`;
  const abis = new Set<string>();
  for (const n of nodes()) {
    const r = await run(n.bin, ['-e', probe], {}, 20_000);
    assert.is(r.code, 0, `${n.name}: ${r.stderr}`);
    const got = JSON.parse(r.stdout) as { abi: string; gpio: string; list: string };
    assert.equal([got.gpio, got.list], ['boolean', 'function'], `${n.name}: ${r.stdout}`);
    abis.add(got.abi);
    const help = await run(n.bin, [path.join(tree, 'shadowgate.mjs'), 'help'], {}, 20_000);
    assert.is(help.code, 0, `${n.name}: ${help.stderr}`);
    assert.match(help.stdout, /^usage: shadowgate/);
    const check = await run(n.bin, [path.join(tree, 'shadowgate.mjs'), 'check-config', path.join(tree, 'board/demo.json')], {}, 20_000);
    assert.is(check.code, 0, `${n.name}: ${check.stdout}${check.stderr}`);
  }
  assert.equal([...abis].filter((a) => a !== process.versions.modules).sort(), ['115', '127', '137'].filter((a) => a !== process.versions.modules));
});

withBuild('the bundle runs the demo config and answers GET /api/v1/shadow/all; SIGTERM exits 0', async () => {
  assert.ok(tree, 'needs the release tree from the first test');
  child = spawn(process.execPath, ['--max-semi-space-size=1', path.join(tree, 'shadowgate.mjs'), 'run', '--config', path.join(tree, 'board/demo.json')], {
    cwd: dir,
    env: { ...process.env, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0', SHADOWGATE_DATA_DIR: path.join(dir, 'data') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const port = await waitReady(child, 20_000).catch((err: Error) => { throw new Error(`${err.message}\n${stderr}`); });
  const r = await call<Record<string, unknown>>(port, '/api/v1/shadow/all');
  assert.is(r.status, 200);
  assert.ok(r.body.success);
  const body = JSON.stringify(r.body.data);
  for (const id of ['thermostat-1', 'thermostat-2', 'meter-1']) assert.ok(body.includes(id), `${id} missing: ${body.slice(0, 300)}`);
  child.kill('SIGTERM');
  assert.is(await exited(child, 15_000), 0, stderr);
});

test.run();
