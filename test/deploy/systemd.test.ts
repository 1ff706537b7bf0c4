/**
 * The shipped unit as systemd reads it: `systemd-analyze verify` must print nothing (it returns 0 on
 * typos and bad values, so any output is a failure), and the sandbox must score ≤ 2.5 exposure.
 * verify runs against a temp root holding the host's stock units and a stub /usr/bin/node, so the
 * result does not depend on where this machine keeps node.
 */
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { needs, peerHook } from '../helpers/peers.js';
import { run, which } from './run.js';

const UNIT = path.resolve('systemd/shadowgate.service');
const analyze = await which('systemd-analyze');
const units = ['/usr/lib/systemd/system', '/lib/systemd/system'].find((d) => existsSync(path.join(d, 'multi-user.target')));
const why = analyze && units ? null : 'systemd-analyze or the stock systemd units are missing (Debian package systemd)';
const systemdTest = needs(why, 'systemd-analyze checks');
let dir = '';
let root = '';

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-systemd-'));
  root = path.join(dir, 'root');
});
test.before(peerHook(why, async () => {
  await mkdir(path.join(root, 'usr/bin'), { recursive: true });
  await mkdir(path.join(root, 'usr/lib/systemd'), { recursive: true });
  await mkdir(path.join(root, 'etc/systemd/system'), { recursive: true });
  await cp(units!, path.join(root, 'usr/lib/systemd/system'), { recursive: true });
  await writeFile(path.join(root, 'usr/bin/node'), '#!/bin/sh\n');
  await chmod(path.join(root, 'usr/bin/node'), 0o755);
}));

test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function verify(unitText: string): Promise<string> {
  await writeFile(path.join(root, 'etc/systemd/system/shadowgate.service'), unitText);
  const r = await run(analyze!, ['verify', `--root=${root}`, 'shadowgate.service']);
  return (r.stdout + r.stderr).trim();
}

systemdTest('systemd-analyze verify prints nothing for the unit', async () => {
  assert.is(await verify(await readFile(UNIT, 'utf8')), '');
});

systemdTest('verify does catch a typo and a missing binary (the check above can fail)', async () => {
  const text = await readFile(UNIT, 'utf8');
  assert.match(await verify(text.replace('ProtectSystem=strict', 'ProtectSytem=strict')), /Unknown key 'ProtectSytem'/);
  assert.match(await verify(text.replace('/usr/bin/node ', '/usr/bin/nodejs ')), /nodejs.*(not executable|No such file)/);
});

systemdTest('security exposure is at most 2.5 (systemd-analyze security --offline --threshold=25)', async () => {
  const r = await run(analyze!, ['security', '--offline=true', '--threshold=25', '--no-pager', UNIT]);
  const score = Number((/Overall exposure level for shadowgate\.service: ([\d.]+)/.exec(r.stdout) ?? [])[1]);
  assert.ok(score > 0 && score <= 2.5, `exposure ${score}\n${r.stdout}${r.stderr}`);
  assert.is(r.code, 0, r.stderr);
  // The threshold is exposure × 10: one just below the score must fail, or the gate above is empty.
  const tight = await run(analyze!, ['security', '--offline=true', `--threshold=${Math.round(score * 10) - 1}`, '--no-pager', UNIT]);
  assert.is.not(tight.code, 0, 'a threshold below the score must fail');
});

// The SD image's own units and the gateway's image drop-in (scripts/image/rootfs). The image build
// verifies them again inside the arm64 rootfs with the target's systemd; this runs without the image.
systemdTest('systemd-analyze verify prints nothing for the image units and the drop-in', async () => {
  const img = 'scripts/image/rootfs';
  await mkdir(path.join(root, 'usr/lib/shadowgate'), { recursive: true });
  for (const f of ['ssh-host-keys']) {
    await writeFile(path.join(root, 'usr/lib/shadowgate', f), '#!/bin/sh\n');
    await chmod(path.join(root, 'usr/lib/shadowgate', f), 0o755);
  }
  for (const u of ['shadowgate-boot-config.service']) {
    await cp(path.join(img, 'usr/lib/systemd/system', u), path.join(root, 'usr/lib/systemd/system', u));
  }
  await cp(path.join(img, 'etc/systemd/system/shadowgate.service.d'), path.join(root, 'etc/systemd/system/shadowgate.service.d'), { recursive: true });
  await writeFile(path.join(root, 'etc/systemd/system/shadowgate.service'), await readFile(UNIT, 'utf8'));
  const r = await run(analyze!, ['verify', `--root=${root}`, 'shadowgate.service', 'shadowgate-boot-config.service']);
  await rm(path.join(root, 'etc/systemd/system/shadowgate.service.d'), { recursive: true });
  assert.is((r.stdout + r.stderr).trim(), '');
});

test('the unit keeps the properties the gateway relies on', async () => {
  const text = await readFile(UNIT, 'utf8');
  const has = (line: string): void => assert.ok(text.split('\n').includes(line), `missing ${line}`);
  for (const line of ['Type=notify', 'NotifyAccess=all', 'Restart=on-failure', 'User=shadowgate', 'StateDirectory=shadowgate',
    'SupplementaryGroups=dialout gpio', 'Environment=SHADOWGATE_CONFIG=/etc/shadowgate/config.json', 'DeviceAllow=char-ttyS rw',
    'DeviceAllow=char-gpiochip rw', 'ProtectSystem=strict',
    // Flat RSS under bad input and across MQTT logins (scripts/reliability/bad-input.ts runs the unit's environment).
    'Environment=MALLOC_ARENA_MAX=2', 'Environment=MALLOC_MMAP_THRESHOLD_=65536']) has(line);
  assert.match(text, /^WatchdogSec=\d+s$/m);
  // V8's heap limit must sit well inside the cgroup limit, or the OOM killer fires before the GC.
  const heap = Number((/--max-old-space-size=(\d+)/.exec(text) ?? [])[1]);
  const mem = Number((/^MemoryMax=(\d+)M$/m.exec(text) ?? [])[1]);
  assert.ok(heap > 0 && mem >= heap * 1.5, `heap ${heap} MiB vs MemoryMax ${mem} MiB`);
  assert.not.match(text, /^MemoryDenyWriteExecute=yes/m, 'breaks the V8 JIT');
});

test.run();
