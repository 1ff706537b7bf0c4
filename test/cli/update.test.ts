/**
 * `shadowgate update FILE` as a child process against a temp data_dir, with a stand-in for the SD image's
 * root update service (the one part that cannot run here: it needs root, RAUC and a second slot). The
 * stand-in does what the contract asks of it: waits for request.json, deletes it, checks the bundle's size
 * and sha256, and writes status.json (temp file + rename) through its states.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../helpers/http.js';
import { killAll, runCli } from '../helpers/spawn.js';
import { fakeBundle, updateSandbox } from '../helpers/update-sandbox.js';

let dir = '';
let dataDir = '';
let configFile = '';
let systemConf = '';

test.before.each(async () => {
  ({ dir, dataDir, systemConf } = await updateSandbox('sg-update-cli-'));
  configFile = path.join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify({ gateway: { id: 'cli', data_dir: dataDir }, buses: [] }));
});
test.after.each(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

const updateDir = () => path.join(dataDir, 'update');
const env = () => ({ SHADOWGATE_RAUC_SYSTEM_CONF: systemConf, SHADOWGATE_DATA_DIR: '' });

async function bundleFile(size: number): Promise<{ file: string; sha256: string }> {
  const data = fakeBundle(size);
  const file = path.join(dir, 'next.raucb');
  await writeFile(file, data);
  return { file, sha256: createHash('sha256').update(data).digest('hex') };
}

async function writeStatus(status: Record<string, unknown>): Promise<void> {
  const tmp = path.join(updateDir(), '.status.json.tmp');
  await writeFile(tmp, JSON.stringify({ progress: null, from_version: '1.0.0', to_version: '1.1.0', slot: 'B', booted_slot: 'A', ...status, updated_at: new Date().toISOString() }));
  await rename(tmp, path.join(updateDir(), 'status.json'));
}

/** The stand-in root side: takes the request, checks the bundle, then writes `states` 1.2 s apart (the CLI reads every 1 s). */
async function rootSide(states: Record<string, unknown>[]): Promise<{ size: number; sha256: string; by: string }> {
  const requestFile = path.join(updateDir(), 'request.json');
  const text = await waitFor(() => readFile(requestFile, 'utf8').catch(() => undefined), 15_000, 'request.json');
  await rm(requestFile);
  const request = JSON.parse(text) as { bundle: string; size: number; sha256: string; by: string };
  const bundle = await readFile(path.join(updateDir(), request.bundle));
  assert.is(bundle.length, request.size);
  assert.is(createHash('sha256').update(bundle).digest('hex'), request.sha256);
  for (const s of states) {
    await writeStatus(s);
    await new Promise((r) => setTimeout(r, 1200));
  }
  return request;
}

test('update FILE hands the bundle over and follows the install to rebooting: exit 0, a line per step', async () => {
  const { file, sha256 } = await bundleFile(2 * 1024 * 1024 + 3);
  // An earlier update's status: the CLI must not take it for this one's outcome.
  await mkdir(updateDir(), { recursive: true });
  await writeFile(path.join(updateDir(), 'status.json'), JSON.stringify({ state: 'good', message: 'the update before', updated_at: '2020-01-01T00:00:00Z' }));
  const [run, request] = await Promise.all([
    runCli(['update', file, '--config', configFile], env(), 30_000),
    rootSide([
      { state: 'checking', message: 'checking the bundle\'s signature' },
      { state: 'installing', progress: 10, message: 'installing 1.1.0 into slot B' },
      { state: 'installing', progress: 60, message: 'installing 1.1.0 into slot B' },
      { state: 'rebooting', progress: 100, message: 'installed 1.1.0 into slot B; rebooting into it' },
    ]),
  ]);
  assert.is(run.code, 0, run.stderr);
  assert.equal([request.sha256, request.by], [sha256, 'cli']);
  const lines = run.stdout.trim().split('\n');
  assert.match(lines[0]!, /^handing .*next\.raucb \(2\.0 MB\) over to the system's update service$/);
  assert.is(lines[1], `handed over: 2.0 MB, sha256 ${sha256}`);
  assert.not.ok(run.stdout.includes('the update before'), run.stdout);
  assert.ok(lines.includes('installing 60%: installing 1.1.0 into slot B'), run.stdout);
  assert.is(lines.at(-1), 'rebooting: installed 1.1.0 into slot B; rebooting into it');
  // The root side deleted request.json; the bundle stays for it.
  assert.equal((await readdir(updateDir())).sort(), ['bundle.raucb', 'status.json']);
});

test('a refused bundle: the root side\'s reason is printed, exit 1', async () => {
  const { file } = await bundleFile(4096);
  const [run] = await Promise.all([
    runCli(['update', file, '--config', configFile], env(), 30_000),
    rootSide([{ state: 'refused', message: 'the bundle is signed by an unknown key: nothing was written' }]),
  ]);
  assert.is(run.code, 1);
  assert.match(run.stdout, /refused: the bundle is signed by an unknown key: nothing was written\n$/);
});

test('not an A/B system, not a bundle, no such file, an update in progress: one clear line, exit 1, nothing handed over', async () => {
  const { file } = await bundleFile(4096);
  const noAb = await runCli(['update', file, '--config', configFile], { ...env(), SHADOWGATE_RAUC_SYSTEM_CONF: path.join(dir, 'none.conf') });
  assert.is(noAb.code, 1);
  assert.match(noAb.stderr, /^shadowgate update: A\/B system updates are not available on this system \(no .*none\.conf\)[^\n]*\n$/);
  const text = path.join(dir, 'notes.txt');
  await writeFile(text, 'not a bundle');
  const notBundle = await runCli(['update', text, '--config', configFile], env());
  assert.is(notBundle.code, 1);
  assert.match(notBundle.stderr, /not a RAUC update bundle/);
  const missing = await runCli(['update', path.join(dir, 'nope.raucb'), '--config', configFile], env());
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /nope\.raucb: ENOENT/);
  await mkdir(updateDir(), { recursive: true });
  await writeStatus({ state: 'installing', progress: 30, message: 'installing' });
  const busy = await runCli(['update', file, '--config', configFile], env());
  assert.is(busy.code, 1);
  assert.match(busy.stderr, /an update is in progress \(installing 30%\)/);
  assert.equal(await readdir(updateDir()), ['status.json']);
  const usage = await runCli(['update', '--config', configFile], env());
  assert.is(usage.code, 2);
  assert.match(usage.stderr, /usage: shadowgate update FILE/);
});

test('no final state within --timeout: exit 1 saying the install goes on', async () => {
  const { file } = await bundleFile(4096);
  const run = await runCli(['update', file, '--config', configFile, '--timeout', '1'], env());
  assert.is(run.code, 1);
  assert.match(run.stdout, /checking: the bundle \(0\.0 MB\) was handed over and waits for the system's update service/);
  assert.match(run.stderr, /the install is not over after 1 s \(last: checking\); it goes on/);
});

test.run();
