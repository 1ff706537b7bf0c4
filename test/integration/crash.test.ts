/**
 * Crash safety of the persisted shadow, end to end: a real gateway child (simulated devices polled every
 * 10 ms, persisted every 20 ms) is SIGKILLed at random moments, and every restart must come up with a
 * valid restored shadow: no load problem, the counter never goes backwards, a written setpoint survives.
 * Between trials the store is also loaded in-process and must yield a valid snapshot.
 * SHADOWGATE_CRASH_TRIALS overrides the trial count (default 50: the CI minimum).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HAS_VALUE } from '../../src/core/table.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';

const TRIALS = Number(process.env.SHADOWGATE_CRASH_TRIALS ?? 50);
const DEVICES = 40;
const SETPOINT = 7.5;

/**
 * The compiled gateway when `make build` left it up to date with src/ (make test builds first), else
 * the sources through tsx: ~2× faster starts keep 50 restarts within the time budget, and a stale dist/
 * is never what gets tested.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
async function gatewayArgs(): Promise<string[]> {
  const newest = async (dir: string): Promise<number> => {
    let max = 0;
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      max = Math.max(max, e.isDirectory() ? await newest(p) : (await stat(p)).mtimeMs);
    }
    return max;
  };
  const stamp = await stat(path.join(ROOT, 'dist/.stamp')).then((s) => s.mtimeMs, () => 0);
  return stamp >= (await newest(path.join(ROOT, 'src')))
    ? [path.join(ROOT, 'dist/main.js')]
    : ['--import', 'tsx', path.join(ROOT, 'src/main.ts')];
}
const GATEWAY = await gatewayArgs();

const config = {
  gateway: { id: 'crash', data_dir: 'unused-env-overrides-it', log_level: 'info' },
  http: { host: '127.0.0.1', port: 0 },
  shadow: { default_ttl: '1h', persist_interval: '20ms' },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: {
    'crash-meter': {
      points: [
        { name: 'pulses', type: 'int', sim: { fn: 'counter', step: 1 } },
        { name: 'level', type: 'float', sim: { fn: 'random_walk', min: 0, max: 100, step: 1 } },
        { name: 'setpoint', type: 'float', access: 'RW', sim: { fn: 'constant', value: 1 } },
        { name: 'status', type: 'string', sim: { fn: 'constant', value: 'ok' } },
      ],
    },
  },
  devices: Array.from({ length: DEVICES }, (_, i) => ({ id: `meter-${i}`, model: 'crash-meter', bus: 'sim', poll: '10ms' })),
};

interface LogLine { msg?: string; [k: string]: unknown }

interface Child {
  proc: ChildProcess;
  lines: LogLine[];
  ready: Promise<number>;
  exited: Promise<void>;
}

function startGateway(configFile: string, dataDir: string): Child {
  const proc = spawn(process.execPath, [...GATEWAY, 'run', '--config', configFile], {
    env: { ...process.env, SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0' },
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const ready = new Promise<number>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).on('line', (text) => {
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        return;
      }
      lines.push(line);
      if (line.msg === 'ready') resolve(Number(line.httpPort));
    });
    void exited.then(() => reject(new Error(`gateway exited before ready: ${stderr.slice(-2000)}`)));
  });
  ready.catch(() => {});
  return { proc, lines, ready, exited };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

async function api<T>(port: number, route: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1${route}`, { signal: AbortSignal.timeout(3000) });
  const body = (await res.json()) as { success: boolean; errorMsg: string; data: T };
  if (!body.success) throw new Error(`${route}: ${body.errorMsg}`);
  return body.data;
}

interface RestPoint { name: string; value: number | string | null; write_value: number | string | null }
const pointOf = async (port: number, id: string, name: string): Promise<RestPoint> => {
  const device = await api<{ points: RestPoint[] }>(port, `/shadow/device?id=${id}`);
  return device.points.find((p) => p.name === name)!;
};
const saves = async (port: number): Promise<number> =>
  (await api<{ checks: { persistence: { saves: number } } }>(port, '/health/shadow')).checks.persistence.saves;

async function untilSaved(port: number, after: number): Promise<void> {
  const end = Date.now() + 10_000;
  while ((await saves(port)) <= after) {
    if (Date.now() > end) throw new Error('gateway never persisted');
    await sleep(10);
  }
}

/** What the store holds now, read in-process exactly as the next start will read it. */
async function inspect(shadowDir: string): Promise<{ seq: number; pulses: number; setpointWrite: number }> {
  const store = await openShadowStore({ dir: shadowDir, log: silentLogger });
  const loaded = await store.load();
  assert.equal(loaded.problems, [], 'in-process load problems');
  const snap = loaded.snapshot;
  assert.ok(snap, 'in-process load yields a snapshot');
  assert.equal(snap.devices.map((d) => d.id), config.devices.map((d) => d.id));
  const names = snap.devices[0]!.points;
  const pulses = names.indexOf('pulses');
  const setpoint = names.indexOf('setpoint');
  assert.ok((snap.pts.flags[pulses]! & HAS_VALUE) !== 0, 'the counter has a persisted value');
  return { seq: loaded.seq, pulses: snap.pts.num[pulses]!, setpointWrite: snap.pts.writeNum[setpoint]! };
}

test(`SIGKILL at random moments, ${TRIALS} trials: every restart restores a valid shadow`, async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'sg-crash-'));
  const dataDir = path.join(root, 'data');
  const shadowDir = path.join(dataDir, 'shadow');
  const configFile = path.join(root, 'config.json');
  await writeFile(configFile, JSON.stringify(config));
  let child: Child | undefined;
  let previous: { seq: number; pulses: number; setpointWrite: number } | undefined;
  let staleTmp = 0;
  let restarts = 0;
  try {
    for (let trial = 0; trial <= TRIALS; trial++) {
      child = startGateway(configFile, dataDir);
      const port = await within(child.ready, 60_000, `trial ${trial}: ready`); // 1-4 s at rest; a busy machine several times that
      const problems = child.lines.filter((l) => l.msg === 'persisted shadow problem');
      assert.equal(problems, [], `trial ${trial}: load problems on start`);
      if (previous) {
        // The restart of the previous trial's kill: restored from exactly the files we inspected.
        const restored = child.lines.find((l) => l.msg === 'shadow restored');
        assert.ok(restored, `trial ${trial}: no "shadow restored" line`);
        assert.is(restored.seq, previous.seq, `trial ${trial}: restored seq`);
        const pulses = await pointOf(port, 'meter-0', 'pulses');
        assert.ok(typeof pulses.value === 'number' && pulses.value >= previous.pulses,
          `trial ${trial}: counter ${String(pulses.value)} went below the restored ${previous.pulses}`);
        assert.is((await pointOf(port, 'meter-0', 'setpoint')).write_value, SETPOINT, `trial ${trial}: write value lost`);
        restarts++;
      }
      if (trial === TRIALS) break; // the last start only verifies the last kill
      if (trial === 0) await api(port, `/device/writePoint?id=meter-0&point=setpoint&value=${SETPOINT}`);
      // Counted after the write, and one more: a save already running when the write landed may
      // complete without it; the one after it started later and must hold it.
      await untilSaved(port, (await saves(port)) + 1);
      await sleep(Math.random() * 300);
      child.proc.kill('SIGKILL');
      await within(child.exited, 10_000, `trial ${trial}: exit after SIGKILL`);
      staleTmp += (await readdir(shadowDir)).filter((n) => n.endsWith('.tmp')).length;
      const now = await inspect(shadowDir);
      if (previous) {
        assert.ok(now.seq >= previous.seq, `trial ${trial}: seq went backwards`);
        assert.ok(now.pulses >= previous.pulses, `trial ${trial}: persisted counter went backwards`);
      }
      assert.is(now.setpointWrite, SETPOINT);
      previous = now;
    }
    assert.is(restarts, TRIALS);
    console.log(`  crash: ${TRIALS} kills, ${restarts} verified restarts, ${staleTmp} kills landed mid-write (temp file left), last seq ${previous?.seq}, gateway ${GATEWAY.at(-1)}`);
  } finally {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill('SIGKILL');
      await within(child.exited, 5000, 'final kill').catch(() => {});
    }
    await rm(root, { recursive: true, force: true });
  }
});

test('SIGTERM saves the shadow as the last thing before exit', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'sg-term-'));
  const dataDir = path.join(root, 'data');
  const configFile = path.join(root, 'config.json');
  // A persist interval far beyond the test: only the final save on SIGTERM can write the files.
  await writeFile(configFile, JSON.stringify({ ...config, shadow: { ...config.shadow, persist_interval: '1h' } }));
  const child = startGateway(configFile, dataDir);
  try {
    const port = await within(child.ready, 60_000, 'ready');
    await sleep(300); // the first (startup) save is done; then many more polls
    const seen = await pointOf(port, 'meter-0', 'pulses');
    child.proc.kill('SIGTERM');
    await within(child.exited, 10_000, 'exit after SIGTERM');
    assert.is(child.proc.exitCode, 0);
    const now = await inspect(path.join(dataDir, 'shadow'));
    assert.ok(now.pulses >= (seen.value as number), `final save has the counter ${now.pulses}, before stop it was ${String(seen.value)}`);
    assert.is(now.seq, 1, 'exactly one save: the final one');
  } finally {
    if (child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill('SIGKILL');
      await within(child.exited, 5000, 'final kill').catch(() => {});
    }
    await rm(root, { recursive: true, force: true });
  }
});

test.run();
