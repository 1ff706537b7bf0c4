/** Spawning a built gateway (dist/) for process-level benchmarks, and reading what it reports. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { unitEnvironment, unitNodeFlags } from '../unit.js';

export interface Running {
  child: ChildProcess;
  port: number;
  /** ms from spawn to the "ready" log line. */
  readyMs: number;
  stop(): Promise<void>;
}

/** The dev build (`make build`), run as `make run` runs it. */
export const MAIN = path.resolve('dist/main.js');

/** A config of `devices` simulated devices × `points` constant points each, polled every `poll`. */
export async function writeFleetConfig(file: string, dataDir: string, devices: number, points: number, poll = '1s'): Promise<void> {
  const model = {
    points: Array.from({ length: Math.max(points, 1) }, (_, i) => ({ name: `p${i}`, type: 'float', sim: { fn: 'constant', value: i * 1.5 } })),
  };
  const config = {
    gateway: { id: 'bench', data_dir: dataDir, log_level: 'info' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    history: { enable: false },
    shadow: { max_devices: Math.max(devices, 1), max_points: Math.max(devices * points, 1), persist_interval: '1h' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { fleet: model },
    devices: Array.from({ length: devices }, (_, i) => ({ id: `dev-${i}`, model: 'fleet', bus: 'sim', poll })),
  };
  await writeFile(file, JSON.stringify(config));
}

/** The release bundle (`make dist`), started as the systemd unit starts it. */
export const BUNDLE = path.resolve('build/shadowgate/shadowgate.mjs');
/** The node flags of the shipped unit's ExecStart, read from it so a bench measures what a Pi runs. */
export const UNIT_FLAGS = unitNodeFlags();

/** What to start: a tsc build's main.js (executable, its shebang's flags) or a release bundle (the unit's flags). */
export interface Entry {
  kind: 'main' | 'bundle';
  file: string;
}

/** An entry for a file: a `.mjs` is a bundle, anything else a main.js. */
export const entryOf = (file: string): Entry => ({ kind: file.endsWith('.mjs') ? 'bundle' : 'main', file: path.resolve(file) });

export function startChild(configFile: string, timeoutMs = 30_000, entry: Entry = { kind: 'main', file: MAIN }): Promise<Running> {
  const t0 = performance.now();
  // Run the executable itself so its shebang's V8 flags apply, exactly as `shadowgate run` does
  // (or the bundle with the unit's flags).
  const child = entry.kind === 'bundle'
    ? spawn(process.execPath, [...UNIT_FLAGS, entry.file, 'run', '--config', configFile], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...unitEnvironment() } })
    : spawn(entry.file, ['run', '--config', configFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('gateway did not get ready in time'));
    }, timeoutMs);
    let buf = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const line = buf.split('\n').find((l) => l.includes('"msg":"ready"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      const port = (JSON.parse(line) as { httpPort: number }).httpPort;
      resolve({ child, port, readyMs: performance.now() - t0, stop: () => stopChild(child) });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited early (${code})`));
    });
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Resident set size of a process, bytes (Linux). */
export function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** Bytes of the files under `dir` (0 when it does not exist). */
export function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let sum = 0;
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, f.name);
    sum += f.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return sum;
}
