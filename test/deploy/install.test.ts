/**
 * scripts/install.sh into a temp root (--root: no systemctl, nothing on the host touched): the files
 * land where systemd and the docs say, a second run changes nothing but the app, the user's config
 * survives, and --uninstall removes what it installed. Plus shellcheck on the shell scripts.
 */
import { chmod, cp, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { needs } from '../helpers/peers.js';
import { run, which } from './run.js';

const SCRIPT = path.resolve('scripts/install.sh');
const shellcheck = await which('shellcheck');
const sysusers = await which('systemd-sysusers');
let dir = '';
let from = '';
let n = 0;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-install-'));
  // A release tree as `make dist` lays it out, with a stub app (the real bundle is tested in dist.test.ts).
  from = path.join(dir, 'release');
  await mkdir(path.join(from, 'systemd'), { recursive: true });
  await mkdir(path.join(from, 'docs'), { recursive: true });
  await writeFile(path.join(from, 'shadowgate.mjs'), 'console.log("v1");\n');
  for (const f of ['shadowgate.service', 'shadowgate.sysusers', '70-shadowgate-gpio.rules']) {
    await cp(path.join('systemd', f), path.join(from, 'systemd', f));
  }
});

test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function newRoot(): Promise<string> {
  const root = path.join(dir, `root-${++n}`);
  await mkdir(path.join(root, 'etc'), { recursive: true });
  await writeFile(path.join(root, 'etc/hostname'), 'pi-test\n');
  return root;
}

const install = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  run('sh', [SCRIPT, '--from', from, ...args], { NODE: process.execPath, DESTDIR: '', ...env });

const shellcheckTest = needs(shellcheck ? null : 'shellcheck is not installed (Debian package shellcheck)', 'shellcheck');
shellcheckTest('shellcheck finds nothing in the shell scripts', async () => {
  // Every shell script we ship or build with, the image's own helpers included.
  const scripts = ['scripts/install.sh', 'scripts/dist.sh', 'scripts/build-image.sh', 'scripts/image-test.sh', 'scripts/build-bundle.sh',
    'scripts/image/host-deps.sh', 'scripts/image/signing.sh', 'scripts/image/base/etc/initramfs-tools/hooks/shadowgate-growdata',
    'scripts/image/base/etc/initramfs-tools/scripts/local-premount/shadowgate-growdata', ...(await readdir('scripts/image/rootfs/usr/lib/shadowgate')).map((f) => `scripts/image/rootfs/usr/lib/shadowgate/${f}`)];
  assert.ok(scripts.length >= 9, scripts.join(' '));
  const r = await run(shellcheck!, ['-x', ...scripts]);
  assert.is(r.code, 0, r.stdout + r.stderr);
});

const withSysusers = needs(sysusers ? null : 'systemd-sysusers is missing (Debian package systemd)', 'install into a temp root');

withSysusers('install into a temp root lays out app, unit, user, udev rule, config; twice; then uninstall', async () => {
  const root = await newRoot();
  const first = await install(['--root', root, '--no-start']);
  assert.is(first.code, 0, first.stdout + first.stderr);

  assert.is(await readFile(path.join(root, 'opt/shadowgate/shadowgate.mjs'), 'utf8'), 'console.log("v1");\n');
  const unit = await readFile(path.join(root, 'etc/systemd/system/shadowgate.service'), 'utf8');
  assert.match(unit, new RegExp(`^ExecStart=${process.execPath} .* /opt/shadowgate/shadowgate\\.mjs run$`, 'm'));
  const wants = path.join(root, 'etc/systemd/system/multi-user.target.wants/shadowgate.service');
  assert.is(await readlink(wants), '/etc/systemd/system/shadowgate.service', 'enabled like systemctl enable');
  assert.ok(existsSync(path.join(root, 'usr/lib/sysusers.d/shadowgate.conf')));
  assert.ok(existsSync(path.join(root, 'etc/udev/rules.d/70-shadowgate-gpio.rules')));
  // `shadowgate` on the PATH: a wrapper running the app with the unit's node, arguments passed through.
  const bin = path.join(root, 'usr/local/bin/shadowgate');
  const wrapper = await readFile(bin, 'utf8');
  assert.match(wrapper, new RegExp(`^exec '${process.execPath}' '/opt/shadowgate/shadowgate\\.mjs' "\\$@"$`, 'm'));
  assert.is((await lstat(bin)).mode & 0o777, 0o755);
  // Run as it would be on the target: the app under the root stands in for /opt/shadowgate.
  await writeFile(path.join(root, 'opt/shadowgate/shadowgate.mjs'), 'console.log(JSON.stringify(process.argv.slice(2)));\n');
  const onPath = await run('sh', ['-c', wrapper.replace('/opt/shadowgate/', `${root}/opt/shadowgate/`), 'shadowgate', 'scan', '--port', '/dev/ttyX y']);
  assert.is(onPath.stdout.trim(), '["scan","--port","/dev/ttyX y"]', onPath.stderr);

  // systemd-sysusers ran against the root: the user exists there, in dialout and gpio.
  const passwd = await readFile(path.join(root, 'etc/passwd'), 'utf8');
  assert.match(passwd, /^shadowgate:x:\d+:\d+:[^:]*:\/var\/lib\/shadowgate:\/usr\/sbin\/nologin$/m);
  const group = await readFile(path.join(root, 'etc/group'), 'utf8');
  assert.match(group, /^gpio:x:\d+:(.*,)?shadowgate(,.*)?$/m);
  assert.match(group, /^dialout:x:\d+:(.*,)?shadowgate(,.*)?$/m);

  const confFile = path.join(root, 'etc/shadowgate/config.json');
  const conf = JSON.parse(await readFile(confFile, 'utf8')) as { gateway: { id: string } };
  assert.is(conf.gateway.id, 'pi-test', 'the skeleton names the gateway after the host');
  assert.is((await lstat(confFile)).mode & 0o777, 0o640);
  const check = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', 'check-config', confFile]);
  assert.is(check.code, 0, `the skeleton must be a valid config: ${check.stderr}`);

  // Second run: the user's config stays, the app is replaced, no staging dirs are left behind.
  await writeFile(confFile, '{ "gateway": { "id": "edited" } }\n');
  await writeFile(path.join(from, 'shadowgate.mjs'), 'console.log("v2");\n');
  const second = await install(['--root', root, '--no-start']);
  assert.is(second.code, 0, second.stdout + second.stderr);
  assert.match(second.stdout, /kept the existing/);
  assert.is(await readFile(confFile, 'utf8'), '{ "gateway": { "id": "edited" } }\n');
  assert.is(await readFile(path.join(root, 'opt/shadowgate/shadowgate.mjs'), 'utf8'), 'console.log("v2");\n');
  assert.not.ok(existsSync(path.join(root, 'opt/shadowgate.new')) || existsSync(path.join(root, 'opt/shadowgate.old')));
  assert.is((passwd.match(/^shadowgate:/gm) ?? []).length, 1);
  assert.is(await readFile(path.join(root, 'etc/passwd'), 'utf8'), passwd, 'the user is created once');

  const un = await install(['--root', root, '--uninstall']);
  assert.is(un.code, 0, un.stdout + un.stderr);
  for (const gone of ['opt/shadowgate', 'etc/systemd/system/shadowgate.service', 'etc/udev/rules.d/70-shadowgate-gpio.rules',
    'usr/lib/sysusers.d/shadowgate.conf', 'usr/local/bin/shadowgate']) assert.not.ok(existsSync(path.join(root, gone)), `${gone} left behind`);
  assert.not.ok(await lstat(wants).then(() => true, () => false), 'enable symlink left behind');
  assert.ok(existsSync(confFile), 'config is kept without --purge');
  const purge = await install(['--root', root, '--uninstall', '--purge']);
  assert.is(purge.code, 0, purge.stderr);
  assert.not.ok(existsSync(path.join(root, 'etc/shadowgate')));
});

withSysusers('--prefix moves the app and the unit follows; --no-node-check keeps /usr/bin/node (image rootfs)', async () => {
  const root = await newRoot();
  const r = await install(['--root', root, '--prefix', '/srv/sg', '--no-node-check'], { NODE: '' });
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.ok(existsSync(path.join(root, 'srv/sg/shadowgate.mjs')));
  const unit = await readFile(path.join(root, 'etc/systemd/system/shadowgate.service'), 'utf8');
  assert.match(unit, /^ExecStart=\/usr\/bin\/node .* \/srv\/sg\/shadowgate\.mjs run$/m);
  assert.not.match(unit, /\/opt\/shadowgate/);
  const wrapper = await readFile(path.join(root, 'usr/local/bin/shadowgate'), 'utf8');
  assert.match(wrapper, /^exec '\/usr\/bin\/node' '\/srv\/sg\/shadowgate\.mjs' "\$@"$/m, 'the image rootfs gets the wrapper with its own node');
});

test('a Node.js older than 20.19 is refused before anything is installed', async () => {
  const root = await newRoot();
  const old = path.join(dir, 'node18');
  await writeFile(old, '#!/bin/sh\necho 18.20.4\n');
  await chmod(old, 0o755);
  const r = await install(['--root', root], { NODE: old });
  assert.is(r.code, 1);
  assert.match(r.stderr, /18\.20\.4 .* too old: shadowgate needs >= 20\.19/);
  assert.not.ok(existsSync(path.join(root, 'opt')));
  const bad = await install(['--root', root, '--bogus']);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /unknown option --bogus/);
});

test.run();
