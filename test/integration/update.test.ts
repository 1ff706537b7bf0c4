/**
 * A/B system updates through a real gateway process (`src/main.ts run`, RAUC's system.conf moved into a temp
 * dir): a 200 MB bundle is streamed to disk without the process's memory growing with it, and /health/shadow
 * shows the last update's outcome as the `update` check (failed: ok false with the reason, never degrading).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { cli, killAll, waitReady } from '../helpers/spawn.js';

let dir = '';
let dataDir = '';
test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-update-gw-'));
  dataDir = path.join(dir, 'data');
  await writeFile(path.join(dir, 'system.conf'), '[system]\ncompatible=shadowgate-test\n');
  await writeFile(path.join(dir, 'config.json'), JSON.stringify({
    gateway: { id: 'upd', data_dir: dataDir, log_level: 'info' }, http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { m: { points: [{ name: 'v', type: 'int', access: 'R', sim: { fn: 'constant', value: 1 } }] } },
    devices: [{ id: 'd1', model: 'm', bus: 'sim' }],
  }));
});
test.after.each(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

/** The gateway with the flag its unit and shebang give it (a 1 MB young generation: main.ts). */
async function start(): Promise<{ port: number; pid: number }> {
  const child = cli(['run', '--config', path.join(dir, 'config.json')], { SHADOWGATE_RAUC_SYSTEM_CONF: path.join(dir, 'system.conf'), MALLOC_ARENA_MAX: '2' }, ['--max-semi-space-size=1']);
  return { port: await waitReady(child, 30_000), pid: child.pid! };
}

const rssOf = async (pid: number): Promise<number> =>
  Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

/** Streams `total` bytes (a squashfs magic, then a repeating 1 MiB pattern) with backpressure; the sha256 sent and the answer. */
function upload(port: number, total: number): Promise<{ status: number; text: string; sha256: string }> {
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31) & 0xff;
  block.write('hsqs', 0, 'latin1');
  const hash = createHash('sha256');
  return new Promise((resolve, reject) => {
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/api/v1/system/update', headers: { 'content-type': 'application/octet-stream', 'content-length': total } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, sha256: hash.digest('hex') }));
    });
    req.on('error', reject);
    req.setTimeout(120_000, () => req.destroy(new Error('upload took over 120 s')));
    void (async () => {
      for (let sent = 0; sent < total; sent += block.length) {
        const piece = block.subarray(0, Math.min(block.length, total - sent));
        hash.update(piece);
        if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })();
  });
}

test('a 200 MB bundle goes to disk as it arrives: the gateway\'s RSS barely moves, size and sha256 are right', async () => {
  const { port, pid } = await start();
  // A first, small upload runs the route's code once (compiled, modules loaded): what follows is what size costs.
  assert.is((await upload(port, 1024 * 1024)).status, 202);
  await rm(path.join(dataDir, 'update', 'request.json'));
  const total = 200 * 1024 * 1024;
  const before = await rssOf(pid);
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rssOf(pid));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const t0 = performance.now();
  const res = await upload(port, total);
  const seconds = (performance.now() - t0) / 1000;
  sampling = false;
  await sampler;
  assert.is(res.status, 202, res.text);
  const request = JSON.parse(await readFile(path.join(dataDir, 'update', 'request.json'), 'utf8'));
  assert.equal([request.size, request.sha256], [total, res.sha256]);
  const growth = peak - before;
  console.log(`200 MB upload: RSS ${(before / 1048576).toFixed(1)} MB before, peak ${(peak / 1048576).toFixed(1)} MB (+${(growth / 1048576).toFixed(1)} MB), ${seconds.toFixed(1)} s (${(total / 1048576 / seconds).toFixed(0)} MB/s; loopback, node --max-semi-space-size=1 and MALLOC_ARENA_MAX=2 as the unit runs it)`);
  // Buffered whole it would be +200 MB; 64 MB leaves room for the GC's and the sockets' noise.
  assert.ok(growth < 64 * 1024 * 1024, `RSS grew by ${growth} bytes`);
});

test('/health/shadow: no update check before any update; a failed one is ok false with its reason and degrades nothing', async () => {
  const { port } = await start();
  type Health = { status: string; checks: Record<string, any> };
  const health = async (): Promise<Health> => (await call<Health>(port, '/api/v1/health/shadow')).body.data;
  assert.not.ok('update' in (await health()).checks);
  await mkdir(path.join(dataDir, 'update'), { recursive: true });
  const status = (s: Record<string, unknown>) => writeFile(path.join(dataDir, 'update', 'status.json'), JSON.stringify({ updated_at: '2026-01-02T03:04:05Z', to_version: '2.0.0', ...s }));
  await status({ state: 'failed', message: 'version 2.0.0 did not become healthy within 180 s; back on version 1.0.0 (slot A)' });
  const failed = await health();
  assert.equal(failed.checks.update, {
    ok: false, state: 'failed', message: 'version 2.0.0 did not become healthy within 180 s; back on version 1.0.0 (slot A)', to_version: '2.0.0', updated_at: '2026-01-02T03:04:05Z',
  });
  assert.is(failed.status, 'healthy');
  await status({ state: 'refused', message: 'the bundle is for another board (compatible rpi4, this is qemu)' });
  assert.equal([(await health()).checks.update.ok, (await health()).checks.update.message], [false, 'the bundle is for another board (compatible rpi4, this is qemu)']);
  await status({ state: 'good', message: 'version 2.0.0 is healthy and marked good (slot B)' });
  assert.equal([(await health()).checks.update.ok, (await health()).checks.update.state], [true, 'good']);
  await writeFile(path.join(dataDir, 'update', 'status.json'), 'garbage{');
  const garbage = await health();
  assert.equal([garbage.checks.update.ok, garbage.checks.update.state, garbage.status], [false, 'unknown', 'healthy']);
});

test.run();
