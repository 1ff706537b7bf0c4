/** Running deploy tools (systemd-analyze, shellcheck, install.sh) with a timeout; never throws on exit codes. */
import { execFile } from 'node:child_process';

export interface RunResult { code: number | null; stdout: string; stderr: string }

export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 8 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) + (err && code === null ? `\n${err.message}` : '') });
      });
  });
}

/** The absolute path of a command on PATH, or undefined. */
export async function which(cmd: string): Promise<string | undefined> {
  const r = await run('sh', ['-c', `command -v ${cmd}`]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}
