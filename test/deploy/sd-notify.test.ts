/**
 * sd_notify through a fake `systemd-notify` first on PATH that records its arguments, NOTIFY_SOCKET
 * and the time of each call, as systemd would see them.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../helpers/http.js';
import { startSdNotify, watchdogIntervalMs, type SdNotify } from '../../src/util/sd-notify.js';

let dir = '';
let binDir = '';
let failDir = '';
let n = 0;
const open: SdNotify[] = [];

interface Call { ms: number; socket: string; args: string }

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-sdnotify-'));
  binDir = path.join(dir, 'bin');
  failDir = path.join(dir, 'failbin');
  await mkdir(binDir);
  await mkdir(failDir);
  const fake = path.join(binDir, 'systemd-notify');
  await writeFile(fake, '#!/bin/sh\nprintf \'%s\\t%s\\t%s\\n\' "$(date +%s%3N)" "$NOTIFY_SOCKET" "$*" >> "$SDN_LOG"\n');
  await chmod(fake, 0o755);
  const failing = path.join(failDir, 'systemd-notify');
  await writeFile(failing, '#!/bin/sh\necho "Failed to notify init system: Permission denied" >&2\nexit 1\n');
  await chmod(failing, 0o755);
});

test.after(async () => {
  for (const sd of open) sd.close();
  // A ping's fake systemd-notify already spawned may still be writing its line (seen beside a CPU hog:
  // ENOTEMPTY, and uvu exits on an error in a hook): rm retries ENOTEMPTY.
  await rm(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
});

function setup(extra: NodeJS.ProcessEnv, bin = binDir): { env: NodeJS.ProcessEnv; logFile: string; warnings: () => string[]; log: pino.Logger } {
  const logFile = path.join(dir, `calls-${++n}.log`);
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const log = pino({ level: 'debug' }, sink);
  const env: NodeJS.ProcessEnv = { PATH: `${bin}:/usr/bin:/bin`, SDN_LOG: logFile, ...extra };
  return { env, logFile, log, warnings: () => lines.filter((l) => (JSON.parse(l) as { level: number }).level === 40) };
}

async function calls(file: string): Promise<Call[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => {
    const [ms, socket, args] = l.split('\t');
    return { ms: Number(ms), socket: socket ?? '', args: args ?? '' };
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('without NOTIFY_SOCKET nothing is spawned and nothing is warned', async () => {
  const s = setup({ WATCHDOG_USEC: '100000' });
  const sd = startSdNotify(s.log, { env: s.env });
  open.push(sd);
  await sd.ready();
  await sleep(200);
  await sd.stopping();
  assert.equal(await calls(s.logFile), []);
  assert.equal(s.warnings(), []);
});

test('READY with status, WATCHDOG at half WATCHDOG_USEC, STOPPING, then silence', async () => {
  const s = setup({ NOTIFY_SOCKET: '/run/systemd/notify', WATCHDOG_USEC: '200000' });
  const sd = startSdNotify(s.log, { env: s.env });
  open.push(sd);
  await sd.ready('listening on 8080');
  // The pings start with READY: on a busy machine its systemd-notify may take longer than an interval to exit,
  // so a ping can be logged beside it (systemd takes WATCHDOG=1 at any time); READY itself comes once.
  const first = await calls(s.logFile);
  const readies = first.filter((c) => c.args !== 'WATCHDOG=1');
  assert.is(readies.length, 1, JSON.stringify(first));
  assert.is(readies[0]!.args, '--ready --status=listening on 8080');
  assert.is(readies[0]!.socket, '/run/systemd/notify', 'systemd-notify must see NOTIFY_SOCKET');
  // 100 ms interval: within ~1 s there are several pings.
  const pings = await waitFor(async () => {
    const c = (await calls(s.logFile)).filter((x) => x.args === 'WATCHDOG=1');
    return c.length >= 3 ? c : undefined;
  }, 3000, 'three watchdog pings');
  assert.ok(pings.length >= 3);
  await sd.stopping();
  const afterStop = await calls(s.logFile);
  assert.is(afterStop.at(-1)!.args, 'STOPPING=1 STATUS=stopping');
  await sleep(350);
  const later = await calls(s.logFile);
  assert.is(later.length, afterStop.length, 'no pings after STOPPING');
  assert.equal(s.warnings(), []);
});

test('a blocked event loop stops the pings; they resume when it unblocks', async () => {
  const s = setup({ NOTIFY_SOCKET: '@sg-test', WATCHDOG_USEC: '200000' });
  const sd = startSdNotify(s.log, { env: s.env });
  open.push(sd);
  await sd.ready();
  await waitFor(async () => (await calls(s.logFile)).some((c) => c.args === 'WATCHDOG=1'), 3000, 'first ping');
  const t0 = Date.now();
  while (Date.now() - t0 < 1200) { /* a handler stuck for 1.2 s: 12 ping intervals */ }
  const t1 = Date.now();
  // One ping spawned just before the block may write its line during it: on a busy machine its process can take
  // any time to start, so no time allowance for it is safe. One at most is in flight; pings from anywhere but
  // the main loop would be a dozen here (every 100 ms).
  const during = (await calls(s.logFile)).filter((c) => c.args === 'WATCHDOG=1' && c.ms > t0 && c.ms <= t1);
  assert.ok(during.length <= 1, `no ping may come from anywhere but the main loop: ${during.length} during the block`);
  await waitFor(async () => (await calls(s.logFile)).some((c) => c.args === 'WATCHDOG=1' && c.ms > t1), 3000, 'pings to resume');
  sd.close();
});

test('WATCHDOG_PID of another process, or no WATCHDOG_USEC: READY only, no pings', async () => {
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' }), 15000);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: String(process.pid) }), 15000);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '1' }), undefined);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: 'soon' }), undefined);
  for (const extra of [{ WATCHDOG_USEC: '100000', WATCHDOG_PID: '1' }, {}]) {
    const s = setup({ NOTIFY_SOCKET: '/run/systemd/notify', ...extra });
    const sd = startSdNotify(s.log, { env: s.env });
    open.push(sd);
    await sd.ready();
    await sleep(300);
    assert.equal((await calls(s.logFile)).map((c) => c.args), ['--ready --status=ready']);
    sd.close();
  }
});

test('a missing or failing systemd-notify never throws and warns exactly once', async () => {
  for (const bin of [path.join(dir, 'empty'), failDir]) {
    const s = setup({ NOTIFY_SOCKET: '/run/systemd/notify', WATCHDOG_USEC: '100000' }, bin);
    s.env.PATH = bin; // nothing else on PATH: no real systemd-notify either
    const sd = startSdNotify(s.log, { env: s.env });
    open.push(sd);
    await sd.ready();
    await sleep(300);
    await sd.stopping();
    assert.is(s.warnings().length, 1, `${bin}: ${s.warnings().join('')}`);
    assert.match(s.warnings()[0]!, /systemd-notify failed/);
  }
});

test.run();
