/**
 * The built gateway (dist/main.js) as a child process for the kills and disk-full campaigns. Unlike
 * scripts/bench/child.ts it keeps every log line (the load report, warnings and errors are what these
 * campaigns judge) and can be SIGKILLed and awaited. Every child is stopped by its own PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { MAIN } from '../../bench/child.js';

export interface LogLine {
  level: number;
  msg: string;
  time: number;
  [key: string]: unknown;
}

export interface Gateway {
  child: ChildProcess;
  pid: number;
  httpPort: number;
  mqttPort: number;
  /** Every JSON log line so far (one run is short: a few hundred lines). */
  lines: LogLine[];
  /** Lines at warn (40) or above, with their text, for a failure note. */
  problems(): string[];
  /** SIGKILL now; resolves when the process is gone (rejects after 10 s). */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 10 s; resolves on exit. */
  stop(): Promise<void>;
  alive(): boolean;
}

const exitOf = (child: ChildProcess, timeoutMs: number): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway pid ${child.pid} did not exit in ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
};

export const describe = (l: LogLine): string => {
  const { level, msg, time: _t, pid: _p, hostname: _h, ...rest } = l;
  const extra = JSON.stringify(rest);
  return `${level >= 50 ? 'error' : 'warn'} "${msg}"${extra === '{}' ? '' : ` ${extra.slice(0, 300)}`}`;
};

/**
 * The build under test: `dist/main.js`, or SHADOWGATE_RELIABILITY_MAIN (another build's main.js, e.g. of an
 * older commit, to see what a fix changed).
 */
const ENTRY = process.env['SHADOWGATE_RELIABILITY_MAIN'] || MAIN;

/** Starts `<entry> run --config FILE`, resolves at its "ready" line; kills it if it is not ready in time. */
export function startGateway(configFile: string, timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}): Promise<Gateway> {
  const child = spawn(ENTRY, ['run', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: LogLine[] = [];
  let stderr = '';
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    partial += chunk.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) {
      try {
        lines.push(JSON.parse(text) as LogLine);
      } catch {
        lines.push({ level: 30, msg: text, time: Date.now() });
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const gw = (ready: LogLine): Gateway => ({
    child, pid: child.pid!, lines,
    httpPort: Number(ready['httpPort']),
    mqttPort: Number(ready['mqttPort']),
    problems: () => lines.filter((l) => l.level >= 40).map(describe),
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exitOf(child, 10_000);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const hard = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      try {
        await exitOf(child, 15_000);
      } finally {
        clearTimeout(hard);
      }
    },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(poll);
      child.kill('SIGKILL');
      reject(new Error(`gateway not ready in ${timeoutMs} ms; last lines: ${lines.slice(-5).map((l) => l.msg).join(' | ')} ${stderr.slice(-500)}`));
    }, timeoutMs);
    const poll = setInterval(() => {
      const ready = lines.find((l) => l.msg === 'ready');
      if (!ready) return;
      clearTimeout(timer);
      clearInterval(poll);
      resolve(gw(ready));
    }, 10);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`gateway exited (${code ?? signal}) before ready: ${lines.slice(-5).map((l) => l.msg).join(' | ')} ${stderr.slice(-500)}`));
    });
  });
}
