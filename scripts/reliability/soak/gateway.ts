/**
 * The soaked gateway, started as systemd/shadowgate.service starts it: the node flags of its ExecStart
 * and its environment (read from the unit file, scripts/unit.ts, so the soak follows the unit), the config and data dir
 * through SHADOWGATE_CONFIG / SHADOWGATE_DATA_DIR. The entry is the release bundle when `make dist` built
 * one from the current dist/, else dist/main.js with the same flags. Its log (stdout, and stderr as
 * journald would keep it) is counted by level as it streams.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE, MAIN } from '../../bench/child.js';
import { unitEnvironment, unitNodeFlags } from '../../unit.js';

/** The unit's TimeoutStopSec: systemd sends SIGKILL after this. */
export const STOP_TIMEOUT_MS = 20_000;

export interface LogCounts {
  /** pino lines at level ≥ 50 (error, fatal), and every stderr line (journald keeps those too). */
  errors: number;
  /** Of those, the ones logged after SIGTERM (during the graceful stop). */
  errorsAtStop: number;
  warnings: number;
  lines: number;
  /** The first few error lines, for the note. */
  firstErrors: string[];
  /** The first stderr text (a V8 fatal error and its last GCs end up here). */
  stderrHead: string;
}

export interface SoakGateway {
  child: ChildProcess;
  pid: number;
  httpPort: number;
  mqttPort: number;
  entry: string;
  flags: string[];
  log: LogCounts;
  /** ms since spawn when the gateway exited, or null while it runs. */
  exitedAt(): number | null;
  exitText(): string;
  /** SIGTERM, SIGKILL after the unit's stop timeout; resolves with how it ended and how long it took. */
  stop(): Promise<{ code: number | null; signal: string | null; ms: number }>;
}

export interface StartOptions {
  configFile: string;
  dataDir: string;
  readyTimeoutMs: number;
  /** Only for diagnosing the soak itself; the campaign always runs with the unit's flags. */
  flags?: string[];
  /** MiB a minute the gateway is made to retain (plant-leak.mjs): the verdict's own check. */
  plantLeak?: number;
}

const PLANT_LEAK = path.join(path.dirname(fileURLToPath(import.meta.url)), 'plant-leak.mjs');

/** What runs: the bundle when there is one, else dist/main.js; the unit's flags unless told otherwise. */
export function launchPlan(flags?: string[]): { entry: string; flags: string[]; how: string } {
  // A bundle older than dist/ (make build ran after make dist, as `make test` does) is not the code under test.
  const bundle = existsSync(BUNDLE) ? (statSync(BUNDLE).mtimeMs >= statSync(MAIN).mtimeMs ? 'fresh' : 'stale') : 'none';
  const entry = bundle === 'fresh' ? BUNDLE : MAIN;
  const f = flags ?? unitNodeFlags();
  const rel = path.relative(process.cwd(), entry);
  const why = { fresh: '', stale: ' (the release bundle is older than dist/)', none: ' (no release bundle: make dist not run)' }[bundle];
  const how = `${rel}${why} with node ${f.join(' ')} ` +
    `${flags ? '(NOT the unit\'s flags)' : '(the unit\'s flags)'}`;
  return { entry, flags: f, how };
}

export function startGateway(o: StartOptions): Promise<SoakGateway> {
  const { entry, flags } = launchPlan(o.flags);
  const t0 = performance.now();
  const leak = o.plantLeak ? ['--import', PLANT_LEAK] : [];
  const child = spawn(process.execPath, [...flags, ...leak, entry, 'run'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env, ...unitEnvironment(), SHADOWGATE_CONFIG: o.configFile, SHADOWGATE_DATA_DIR: o.dataDir,
      ...(o.plantLeak ? { SOAK_PLANT_LEAK: String(o.plantLeak) } : {}),
    },
  });
  const log: LogCounts = { errors: 0, errorsAtStop: 0, warnings: 0, lines: 0, firstErrors: [], stderrHead: '' };
  let exitedAt: number | null = null;
  let exit = { code: null as number | null, signal: null as string | null };
  // 'close', not 'exit': by then stderr is read to its end (a V8 abort's report comes last).
  const exited = new Promise<void>((resolve) => child.once('close', (code, signal) => {
    exitedAt = performance.now() - t0;
    exit = { code, signal };
    resolve();
  }));
  let stopping = false;
  const noteError = (line: string): void => {
    log.errors++;
    if (stopping) log.errorsAtStop++;
    if (log.firstErrors.length < 3) log.firstErrors.push(line.slice(0, 300));
  };
  let ready: ((ports: { httpPort: number; mqttPort: number }) => void) | null = null;
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (!line) continue;
      log.lines++;
      let rec: { level?: number; time?: string; part?: string; msg?: string; err?: { message?: string }; httpPort?: number; mqttPort?: number };
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch {
        noteError(line); // not pino: something wrote to stdout behind the logger's back
        continue;
      }
      if ((rec.level ?? 0) >= 50) noteError(`${rec.time} ${rec.part ?? ''} "${rec.msg}"${rec.err?.message ? `: ${rec.err.message}` : ''}${stopping ? ' (after SIGTERM)' : ''}`);
      else if (rec.level === 40) log.warnings++;
      if (rec.msg === 'ready' && ready) ready({ httpPort: rec.httpPort!, mqttPort: rec.mqttPort! });
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    if (log.stderrHead.length < 8000) log.stderrHead += text;
    for (const line of text.split('\n')) if (line.trim()) noteError(`stderr: ${line}`);
  });

  const stop = async (): Promise<{ code: number | null; signal: string | null; ms: number }> => {
    const s0 = performance.now();
    if (exitedAt === null) {
      stopping = true;
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(kill);
    }
    return { ...exit, ms: performance.now() - s0 };
  };
  // A V8 abort prints its last GCs and the fatal error first: those two lines say what happened.
  const exitText = (): string => {
    const err = log.stderrHead;
    const fatal = /FATAL ERROR.*/.exec(err)?.[0];
    const gcs = err.match(/\d+ ms: (Mark-Compact|Scavenge)[^\n]*/g);
    const why = fatal ? `${fatal}${gcs ? `; last GC: ${gcs.at(-1)!.slice(0, 160)}` : ''}` : err.replace(/\s+/g, ' ').slice(0, 300);
    return `exit ${exit.code ?? exit.signal}${why ? `, stderr: ${why}` : ''}`;
  };

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop().then(() => reject(new Error(`gateway not ready in ${o.readyTimeoutMs} ms`)));
    }, o.readyTimeoutMs);
    ready = ({ httpPort, mqttPort }) => {
      clearTimeout(timer);
      ready = null;
      resolve({
        child, pid: child.pid!, httpPort, mqttPort, entry: path.relative(process.cwd(), entry), flags, log,
        exitedAt: () => exitedAt, exitText, stop,
      });
    };
    void exited.then(() => {
      if (!ready) return;
      clearTimeout(timer);
      reject(new Error(`gateway exited before ready after ${((exitedAt ?? 0) / 1000).toFixed(1)} s (${exitText()})`));
    });
  });
}
