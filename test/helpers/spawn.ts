/** Running the CLI as a child process in tests: every child is tracked and killed by PID. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const MAIN = path.resolve('src/main.ts');
const live = new Set<ChildProcess>();

export function cli(args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', ...nodeArgs, MAIN, ...args], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * A start through tsx takes 1-4 s at rest; beside a busy job (a CI build, make test on 2 cores) several times
 * that. These bound waits only, so they are generous.
 */
const START_MS = 60_000;

/** Runs to completion (with a timeout) and returns exit code and output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = START_MS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = cli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`shadowgate ${args.join(' ')} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Waits for the JSON "ready" line of `run` and returns the HTTP port. */
export function waitReady(child: ChildProcess, timeoutMs = START_MS): Promise<number> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let err = ''; // what it said on stderr: why a start that exits before ready failed
    const onErr = (d: Buffer): void => {
      err = (err + d.toString()).slice(-2000);
    };
    child.stderr?.on('data', onErr);
    const timer = setTimeout(() => reject(new Error(`gateway not ready in ${timeoutMs} ms: ${err.slice(-500)}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => l.includes('"msg":"ready"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr?.off('data', onErr);
      resolve((JSON.parse(line) as { httpPort: number }).httpPort);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited (${code}) before ready: ${buf.slice(-500)}${err ? ` — stderr: ${err.slice(-500)}` : ''}`));
    });
  });
}

/** Kills every child still running (after hooks). */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

export function exited(child: ChildProcess, timeoutMs = 10_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('child did not exit in time')), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
