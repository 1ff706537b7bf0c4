/**
 * Running a script in a private mount namespace (GPIO tests over a fake sysfs): the check whether this
 * machine permits it, and a runner that kills the whole process group by PID and returns the script's
 * last stdout line as JSON.
 */
import { spawn, spawnSync } from 'node:child_process';

export type NamespaceResult = Record<string, any>;

/** Why `unshare -m` cannot run here, or undefined when it can. */
export function unshareProblem(): string | undefined {
  const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'true'], { encoding: 'utf8', timeout: 5000 });
  if (r.error) return `unshare unavailable (${r.error.message})`;
  if (r.status !== 0) return `unshare -m not permitted here (${(r.stderr || `exit ${r.status}`).trim()})`;
  return undefined;
}

/** Runs `node --import tsx <script> ...args` under `unshare -m`; rejects on timeout, crash or `{error}`. */
export function runInNamespace(script: string, args: string[], timeoutMs: number, label: string): Promise<NamespaceResult> {
  const child = spawn('unshare', ['-m', '--propagation', 'private', process.execPath, '--import', 'tsx', script, ...args],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  return new Promise<NamespaceResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`${label}: no result in ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      killGroup();
      const last = stdout.trim().split('\n').pop() ?? '';
      try {
        const result = JSON.parse(last) as NamespaceResult;
        if (result.error) reject(new Error(`${label}: ${result.error}\n${JSON.stringify(result, null, 1)}\nstderr: ${stderr}`));
        else resolve(result);
      } catch {
        reject(new Error(`${label}: exit ${code}, no JSON result; stdout: ${stdout} stderr: ${stderr}`));
      }
    });
  });
}
