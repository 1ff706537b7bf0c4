/**
 * `shadowgate boot-config` as the image's boot unit runs it, in a child process, with every path inside a
 * temp dir (--root, so no command is run): the stored config, the token, the status, the system files.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { killAll, runCli } from '../helpers/spawn.js';

// A group id no test machine uses for anything: when the test runs as root, config.json must get it.
const GROUP_ID = 4242;
const KEY1 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop';
const KEY2 = 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= ops';
const HEADER = '# Written by "shadowgate boot-config" at every boot from the "system" section of shadowgate.json; edit that file instead.';

interface Box { root: string; dir: string; source: string; fallback: string }
const boxes: string[] = [];

async function box(fallback: unknown = { gateway: { id: 'image-default' } }): Promise<Box> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'sg-boot-'));
  boxes.push(root);
  await mkdir(path.join(root, 'etc'), { recursive: true });
  await mkdir(path.join(root, 'boot'), { recursive: true });
  await writeFile(path.join(root, 'etc/group'), `root:x:0:\nshadowgate:x:${GROUP_ID}:\n`);
  const b = { root, dir: path.join(root, 'data/config'), source: path.join(root, 'boot/shadowgate.json'), fallback: path.join(root, 'fallback.json') };
  await writeFile(b.fallback, typeof fallback === 'string' ? fallback : JSON.stringify(fallback));
  return b;
}

const boot = (b: Box) => runCli(['boot-config', '--root', b.root, '--dir', b.dir, '--source', b.source, '--fallback', b.fallback]);
const at = (b: Box, rel: string): string => path.join(b.root, rel);
const inDir = (b: Box, name: string): string => path.join(b.dir, name);
const json = async (file: string): Promise<any> => JSON.parse(await readFile(file, 'utf8'));
const text = (file: string): Promise<string> => readFile(file, 'utf8');
const mode = async (file: string): Promise<number> => (await stat(file)).mode & 0o777;
const sha = (data: string): string => createHash('sha256').update(data).digest('hex');
const exists = (file: string): Promise<boolean> => stat(file).then(() => true, () => false);

test.after(async () => {
  killAll();
  for (const dir of boxes) await rm(dir, { recursive: true, force: true });
});

const USER = { gateway: { id: 'gw-01' }, http: { port: 8090 }, system: { hostname: 'pi-gw' } };

test('first boot: the file is stored as written plus a generated token, which only the console shows', async () => {
  const b = await box();
  const source = JSON.stringify(USER, null, 1);
  await writeFile(b.source, source);
  const r = await boot(b);
  assert.is(r.code, 0, r.stderr);

  const token = (await text(inDir(b, 'api-token'))).trim();
  assert.match(token, /^[A-Za-z0-9_-]{32}$/);
  assert.is(await mode(inDir(b, 'api-token')), 0o600);
  const stored = await json(inDir(b, 'config.json'));
  assert.equal(stored, { ...USER, http: { port: 8090, auth: { tokens: [token] } } }, 'as written: no defaults filled in');
  assert.is(await mode(inDir(b, 'config.json')), 0o640);
  const expectedGid = process.getuid?.() === 0 ? GROUP_ID : (await stat(b.source)).gid;
  assert.is((await stat(inDir(b, 'config.json'))).gid, expectedGid, 'group shadowgate when run as root');
  assert.is((await text(inDir(b, 'source.sha256'))).trim(), sha(source));

  const status = await json(inDir(b, 'status.json'));
  assert.is(await mode(inDir(b, 'status.json')), 0o644);
  assert.equal(Object.keys(status), ['ok', 'at', 'source', 'sha256', 'applied', 'message', 'problems', 'token']);
  assert.equal({ ...status, at: undefined, message: undefined }, {
    ok: true, at: undefined, source: b.source, sha256: sha(source), applied: 'source', message: undefined, problems: [], token: 'generated',
  });
  assert.ok(Math.abs(Date.parse(status.at) - Date.now()) < 60_000, status.at);

  const issue = await text(at(b, 'run/issue.d/50-shadowgate.issue'));
  assert.ok(issue.includes(`API token: ${token}`), issue);
  assert.ok(issue.includes(inDir(b, 'api-token')), 'says where the token is kept');
  assert.ok(issue.includes('REST API: http://\\4:8090/api/v1'), issue);
  assert.ok(issue.includes('http://pi-gw.local:8090/api/v1'), issue);
  assert.not.ok(r.stdout.includes(token) || r.stderr.includes(token), 'the token stays out of the journal');
  assert.not.ok(JSON.stringify(status).includes(token));
  assert.match(r.stdout, /REST API: port 8090, http:\/\/pi-gw\.local:8090\/api\/v1/);

  // The stored file is one the gateway accepts.
  const check = await runCli(['check-config', inDir(b, 'config.json')]);
  assert.is(check.code, 0, check.stderr);
});

test('reboots: the same file changes nothing but the status; an edited file is applied with the same token', async () => {
  const b = await box();
  await writeFile(b.source, JSON.stringify(USER));
  assert.is((await boot(b)).code, 0);
  const token = (await text(inDir(b, 'api-token'))).trim();
  const before = await stat(inDir(b, 'config.json'));
  const bytes = await text(inDir(b, 'config.json'));
  const status1 = await text(inDir(b, 'status.json'));

  const again = await boot(b);
  assert.is(again.code, 0, again.stderr);
  assert.is((await text(inDir(b, 'api-token'))).trim(), token, 'token reused');
  assert.is(await text(inDir(b, 'config.json')), bytes);
  assert.is((await stat(inDir(b, 'config.json'))).ino, before.ino, 'config.json not rewritten');
  assert.is.not(await text(inDir(b, 'status.json')), status1, 'status is rewritten every boot');
  assert.match((await json(inDir(b, 'status.json'))).message, /unchanged/);

  const edited = JSON.stringify({ ...USER, gateway: { id: 'gw-02' } });
  await writeFile(b.source, edited);
  assert.is((await boot(b)).code, 0);
  const stored = await json(inDir(b, 'config.json'));
  assert.is(stored.gateway.id, 'gw-02');
  assert.equal(stored.http.auth.tokens, [token]);
  assert.is((await text(inDir(b, 'source.sha256'))).trim(), sha(edited));

  // A lost token file means a new token, and config.json follows it.
  await rm(inDir(b, 'api-token'));
  assert.is((await boot(b)).code, 0);
  const renewed = (await text(inDir(b, 'api-token'))).trim();
  assert.is.not(renewed, token);
  assert.equal((await json(inDir(b, 'config.json'))).http.auth.tokens, [renewed]);
});

test('an invalid, broken or missing file keeps the last good config byte for byte; the boot goes on', async () => {
  const b = await box();
  await writeFile(b.source, JSON.stringify(USER));
  assert.is((await boot(b)).code, 0);
  const good = await text(inDir(b, 'config.json'));
  const goodSha = await text(inDir(b, 'source.sha256'));
  const token = (await text(inDir(b, 'api-token'))).trim();

  const invalid = JSON.stringify({ ...USER, shadow: { persist_interval: '5 minutes' } });
  await writeFile(b.source, invalid);
  const r = await boot(b);
  assert.is(r.code, 0, 'exit 0: the gateway still has a config');
  assert.is(await text(inDir(b, 'config.json')), good);
  assert.is(await text(inDir(b, 'source.sha256')), goodSha, 'still names the source of the config in use');
  let status = await json(inDir(b, 'status.json'));
  assert.is(status.ok, false);
  assert.is(status.applied, 'last-good');
  assert.is(status.sha256, sha(invalid));
  assert.is(status.token, 'generated');
  assert.ok(status.problems.some((p: string) => p.startsWith('shadow.persist_interval: ')), status.problems.join('\n'));
  assert.match(status.message, /invalid \(1 problem\); the gateway runs on the last good config/);
  assert.match(r.stdout, /shadow\.persist_interval: must be a duration/);
  const issue = await text(at(b, 'run/issue.d/50-shadowgate.issue'));
  assert.ok(issue.includes('shadow.persist_interval') && issue.includes(`API token: ${token}`), issue);

  await writeFile(b.source, '{ "gateway": { "id": "x" }, }');
  assert.is((await boot(b)).code, 0);
  assert.is(await text(inDir(b, 'config.json')), good);
  status = await json(inDir(b, 'status.json'));
  assert.is(status.applied, 'last-good');
  assert.match(status.problems[0], /^\(root\): not valid JSON at line 1/);

  await rm(b.source);
  assert.is((await boot(b)).code, 0);
  assert.is(await text(inDir(b, 'config.json')), good);
  status = await json(inDir(b, 'status.json'));
  assert.equal([status.ok, status.applied, status.sha256], [false, 'last-good', null]);
  assert.match(status.message, /cannot be read/);
});

test('first boot with a broken file runs the image default with a token; fixing the file applies it', async () => {
  const b = await box();
  await writeFile(b.source, '{ "gateway": ');
  const r = await boot(b);
  assert.is(r.code, 0, r.stderr);
  const token = (await text(inDir(b, 'api-token'))).trim();
  assert.equal(await json(inDir(b, 'config.json')), { gateway: { id: 'image-default' }, http: { auth: { tokens: [token] } } });
  const status = await json(inDir(b, 'status.json'));
  assert.equal([status.ok, status.applied, status.token], [false, 'fallback', 'generated']);
  assert.ok(status.message.includes(`runs on the default config ${b.fallback}`), status.message);
  assert.not.ok(await exists(inDir(b, 'source.sha256')), 'config.json did not come from the source');

  await writeFile(b.source, JSON.stringify(USER));
  assert.is((await boot(b)).code, 0);
  assert.is((await json(inDir(b, 'config.json'))).gateway.id, 'gw-01');
  assert.equal((await json(inDir(b, 'status.json'))).applied, 'source');
  assert.is((await text(inDir(b, 'api-token'))).trim(), token);
});

test('nothing usable: exit 1, and the status says why', async () => {
  const b = await box('{ not json');
  await writeFile(b.source, JSON.stringify({ http: { port: 'eighty' } }));
  const r = await boot(b);
  assert.is(r.code, 1);
  assert.not.ok(await exists(inDir(b, 'config.json')));
  const status = await json(inDir(b, 'status.json'));
  assert.equal([status.ok, status.applied], [false, null]);
  assert.ok(status.problems.some((p: string) => p.startsWith('http.port: ')));
  assert.ok(status.problems.some((p: string) => p.startsWith(`${b.fallback}: (root): not valid JSON`)), status.problems.join('\n'));
  assert.match(status.message, /the gateway cannot start/);
});

test('tokens set by the user: none generated, none stored, the console says so', async () => {
  const b = await box();
  const own = { ...USER, http: { port: 8090, auth: { tokens: ['my-own-token-123'] } } };
  await writeFile(b.source, JSON.stringify(own));
  assert.is((await boot(b)).code, 0);
  assert.equal(await json(inDir(b, 'config.json')), own);
  assert.not.ok(await exists(inDir(b, 'api-token')));
  assert.is((await json(inDir(b, 'status.json'))).token, 'config');
  const issue = await text(at(b, 'run/issue.d/50-shadowgate.issue'));
  assert.ok(issue.includes('API token: set in the config') && !issue.includes('my-own-token-123'), issue);
});

test('system settings: host name, hosts, Wi-Fi, SSH keys with exact contents and modes; removed when left out', async () => {
  const b = await box();
  await writeFile(at(b, 'etc/hosts'), '127.0.0.1\tlocalhost\n127.0.1.1\tshadowgate\n::1\tlocalhost ip6-localhost ip6-loopback\n');
  const system = {
    hostname: 'barn-gw',
    wifi: { ssid: 'Barn "North"', psk: 'hay bales 2024', country: 'DE', hidden: true },
    ssh_authorized_keys: [KEY1, KEY2],
  };
  await writeFile(b.source, JSON.stringify({ system }));
  const r = await boot(b);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stderr, '', 'no part failed');

  assert.is(await text(at(b, 'etc/hostname')), 'barn-gw\n');
  assert.is(await text(at(b, 'etc/hosts')), '127.0.0.1\tlocalhost\n127.0.1.1 barn-gw\n::1\tlocalhost ip6-localhost ip6-loopback\n');
  const wpa = at(b, 'etc/wpa_supplicant/wpa_supplicant-wlan0.conf');
  assert.is(await text(wpa), [
    HEADER,
    'ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev',
    'update_config=0',
    'country=DE',
    '',
    'network={',
    `\tssid=${Buffer.from('Barn "North"').toString('hex')}`,
    '\tpsk="hay bales 2024"',
    '\tscan_ssid=1',
    '}',
    '',
  ].join('\n'));
  assert.is(await mode(wpa), 0o600, 'the passphrase is root-only');
  const network = at(b, 'run/systemd/network/25-wlan0.network');
  assert.is(await text(network), `${HEADER}\n[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\nMulticastDNS=yes\n`);
  assert.is(await mode(network), 0o644);
  const keys = at(b, 'run/shadowgate/authorized_keys.root');
  assert.is(await text(keys), `${HEADER}\n${KEY1}\n${KEY2}\n`);
  assert.is(await mode(keys), 0o644);
  assert.not.ok(r.stdout.includes('hay bales'), 'no passphrase in the journal');
  assert.match(r.stdout, /http:\/\/barn-gw\.local:8081\/api\/v1/);

  // Wi-Fi and keys taken out of the file: their files go, so Wi-Fi is off and no key logs in.
  await writeFile(b.source, JSON.stringify({ system: { hostname: 'barn-gw', ssh_authorized_keys: [] } }));
  assert.is((await boot(b)).code, 0);
  assert.not.ok(await exists(wpa));
  assert.not.ok(await exists(network));
  assert.not.ok(await exists(keys));
  assert.is(await text(at(b, 'etc/hostname')), 'barn-gw\n');

  // A broken file keeps the last good system settings too.
  await writeFile(b.source, JSON.stringify({ system: { hostname: 'barn-gw', wifi: { ssid: 'x', psk: 'short', country: 'DE' } } }));
  assert.is((await boot(b)).code, 0);
  assert.not.ok(await exists(wpa), 'the invalid Wi-Fi section is not applied');
  const status = await json(inDir(b, 'status.json'));
  assert.ok(status.problems.some((p: string) => p.startsWith('system.wifi.psk: ')), status.problems.join('\n'));
  assert.not.ok(JSON.stringify(status).includes('short'), 'the rejected passphrase is not echoed');
});

test('usage errors exit 2', async () => {
  const r = await runCli(['boot-config', '--sauce', 'x']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /usage: shadowgate boot-config/);
});

test.run();
