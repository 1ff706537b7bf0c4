/**
 * No damaged file stops the start. A real gateway runs once with everything that writes to data_dir on
 * (shadow generations and journal, history, a config applied over REST, retained MQTT messages, a bridge
 * queue to an upstream that is away); then every file it left, one at a time, is replaced by garbage, cut
 * to half or emptied, and the gateway started on that copy must serve, list the file in /health/shadow
 * (`checks.data_dir`) and in the log, and keep the original under data_dir/damaged/ (moved, never deleted).
 * The cases start in-process through the same steps as `run` (active.json first, then startGateway); the
 * very failure users met (a torn config version) also runs as the real process.
 */
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { readActiveConfig } from '../../src/runtime/config-store.js';
import { DataDirDamage, type DamageEntry } from '../../src/store/damage.js';
import { call, waitFor } from '../helpers/http.js';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';

const TOKEN = 'damage-test-token';
let dir = '';
let pristine = '';
let configFile = '';
let configText = '';

const baseConfig = {
  gateway: { id: 'damage' },
  http: { host: '127.0.0.1', auth: { tokens: [TOKEN] } },
  mqtt: { host: '127.0.0.1', homeassistant: { enable: true }, bridge: { url: 'mqtt://127.0.0.1:1', topic_prefix: 'site' } },
  shadow: { persist_interval: '100ms' },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: {
    m: { points: [
      { name: 'pulses', type: 'int', sim: { fn: 'counter', step: 1 } },
      { name: 'sp', type: 'float', access: 'RW', sim: { fn: 'constant', value: 1 } },
    ] },
  },
  devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '50ms' }],
};
const env = (dataDir: string): Record<string, string> => ({
  SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0',
});

async function listFiles(root: string, sub = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(root, sub), { withFileTypes: true })) {
    const rel = path.join(sub, e.name);
    if (e.isDirectory()) out.push(...await listFiles(root, rel));
    else out.push(rel);
  }
  return out.sort();
}

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-damage-'));
  configFile = path.join(dir, 'config.json');
  configText = JSON.stringify(baseConfig, null, 2);
  await writeFile(configFile, configText);
  pristine = path.join(dir, 'pristine');
});
test.after(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

test('a normal run writes every kind of data_dir file', async () => {
  const child = cli(['run', '--config', configFile], env(pristine));
  const port = await waitReady(child);
  // A config applied from the console: a second version and active.json.
  const applied = await call(port, '/api/v1/config/device?id=d2', {
    method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ model: 'm', bus: 'sim', poll: '50ms' }),
  });
  assert.ok(applied.body.success, applied.body.errorMsg);
  const expected = [/^config\/active\.json$/, /^config\/versions\/[0-9a-f]{64}$/, /^shadow\/gen-a\.bin$/, /^shadow\/gen-b\.bin$/,
    /^shadow\/journal\.bin$/, /^shadow\/[0-9a-f]{64}$/, /^history\/\d{10}\.log$/, /^history\/series\.jsonl$/, /^mqtt\/retained\.json$/,
    /^mqtt\/bridge-queue\/seg-\d+\.jsonl$/];
  await waitFor(async () => {
    const files = await listFiles(pristine);
    // A temp file of a save in flight may be gone (renamed) by the time it is looked at.
    const nonEmpty = await Promise.all(files.map((f) => stat(path.join(pristine, f)).then((st) => st.size > 0, () => false)));
    return expected.every((re) => files.some((f, i) => re.test(f) && nonEmpty[i])) && files.filter((f) => f.startsWith('config/versions/')).length >= 2;
  }, 20_000, 'every kind of file written');
  child.kill('SIGTERM');
  assert.is(await exited(child), 0);
  assert.not.ok((await listFiles(pristine)).includes('gateway.lock'), 'the lock is gone after a clean stop');
  // Written only while the wall clock is not synchronized (a Pi without RTC before NTP): its shape, if this machine's clock was.
  const unsynced = path.join(pristine, 'history', 'unsynced-ranges.json');
  if (!(await stat(unsynced).catch(() => null))) await writeFile(unsynced, JSON.stringify([{ from: Date.now() - 60_000, to: Date.now() - 1000 }]));
});

const DAMAGE: Record<string, (b: Buffer) => Buffer> = {
  garbage: () => Buffer.from('\u0000\u00ffgarbage, not what was written\n'.repeat(4), 'latin1'),
  truncated: (b) => b.subarray(0, Math.floor(b.length / 2)),
  emptied: () => Buffer.alloc(0),
};

/**
 * States a normal run also leaves, so nothing can tell them from damage: a history log or a bridge queue
 * segment created just before a power cut (empty), a series registry before its first append (empty).
 */
const legitimate = (file: string, kind: string): boolean =>
  kind === 'emptied' && /^(history\/\d{10}\.log|history\/series\.jsonl|mqtt\/bridge-queue\/seg-\d+\.jsonl)$/.test(file);

test('every file under data_dir, garbage, cut or emptied: the gateway starts, serves and says what it set aside', async () => {
  const files = await listFiles(pristine);
  assert.ok(files.length >= 10, files.join(', '));
  let n = 0;
  const missed: string[] = [];
  for (const file of files) {
    for (const [kind, damageOf] of Object.entries(DAMAGE)) {
      const dataDir = path.join(dir, `case-${n++}`);
      await cp(pristine, dataDir, { recursive: true });
      const damaged = damageOf(await readFile(path.join(pristine, file)));
      await writeFile(path.join(dataDir, file), damaged);

      const lines: string[] = [];
      const log = pino({ level: 'info' }, new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } }));
      // The steps of `run` (main.ts): active.json first, then the gateway.
      const damage = new DataDirDamage(dataDir);
      const fileRaw = JSON.parse(configText) as unknown;
      const active = await readActiveConfig(dataDir, configText, damage);
      const raw = active ?? fileRaw;
      damage.attach(log);
      const gw = await startGateway(validateConfig(raw, { env: env(dataDir) }), { log, raw, fileText: configText, damage });
      try {
        const all = await call(gw.httpPort, '/api/v1/shadow/all');
        assert.ok(all.body.success, `${file} ${kind}: REST serves`);
        const health = await call<{ status: string; checks: { data_dir: { ok: boolean; damaged: DamageEntry[] } } }>(gw.httpPort, '/api/v1/health/shadow');
        const entry = health.body.data.checks.data_dir.damaged.find((e) => e.file === file);
        if (!entry) {
          if (!legitimate(file, kind)) missed.push(`${file} ${kind}`);
          continue;
        }
        assert.ok(entry.keptAt, `${file} ${kind}: the original is kept`);
        assert.equal(await readFile(path.join(dataDir, entry.keptAt!)), damaged, `${file} ${kind}: kept as it was found`);
        if (entry.action === 'set aside') assert.is(health.body.data.status, 'degraded', `${file} ${kind}: set aside degrades health`);
        assert.ok(lines.some((l) => l.includes(`"data_dir: ${file} `)), `${file} ${kind}: logged`);
      } finally {
        await gw.stop();
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  }
  assert.equal(missed, [], 'damaged files the gateway did not report');
});

test('the real process: a config version torn at a power cut no longer stops the start', async () => {
  const dataDir = path.join(dir, 'real');
  await cp(pristine, dataDir, { recursive: true });
  const version = (await listFiles(dataDir)).find((f) => f.startsWith('config/versions/'))!;
  await writeFile(path.join(dataDir, version), '{"key":"v2","value":{"vers');
  const child = cli(['run', '--config', configFile], env(dataDir));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitReady(child);
  const health = await call<{ status: string; checks: { data_dir: { damaged: DamageEntry[] } } }>(port, '/api/v1/health/shadow');
  assert.is(health.body.data.status, 'degraded');
  assert.equal(health.body.data.checks.data_dir.damaged.map((e) => [e.file, e.action]), [[version, 'set aside']]);
  assert.match(out, new RegExp(`"msg":"data_dir: ${version.replace(/\//g, '\\/')} was damaged and is set aside"`));
  const versions = await call<unknown[]>(port, '/api/v1/config/versions', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.ok(versions.body.success && versions.body.data.length >= 1, 'the other versions are still there');
  child.kill('SIGTERM');
  assert.is(await exited(child), 0);
});

test.run();
