/**
 * What the runners inside a private mount namespace share (scripts/gpio-fake/*-in-namespace.ts): the fake
 * GPIO kernel mounted over /sys/class around their work, a wait with a timeout, and how they end — one JSON
 * line on stdout (the result, or `{ error }`) that the test reads, then an exit.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const GPIO = '/sys/class/gpio';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 3000, everyMs = 5): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Mounts a tmpfs over /sys/class, starts the fake kernel (fake-kernel.mjs, `scenario`, `maxMs` of life) and
 * runs `work` once it is ready; the kernel is stopped after, whatever happened. Refuses outside a private
 * mount namespace: unshare execs the runner, so its parent is still in the namespace that must not be touched.
 */
export async function withFakeKernel<T>(scenario: string, maxMs: number | undefined, work: () => Promise<T>): Promise<T> {
  if (readlinkSync('/proc/self/ns/mnt') === readlinkSync(`/proc/${process.ppid}/ns/mnt`)) {
    throw new Error('not in a private mount namespace: refusing to mount over /sys/class');
  }
  execFileSync('mount', ['-t', 'tmpfs', 'gpiofake', '/sys/class']);
  mkdirSync(GPIO);
  const kernelScript = fileURLToPath(new URL('./fake-kernel.mjs', import.meta.url));
  const kernel = spawn(process.execPath, [kernelScript, GPIO, scenario], {
    stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...(maxMs ? { FAKE_KERNEL_MAX_MS: String(maxMs) } : {}) },
  });
  let keepFifo: number | undefined;
  try {
    await waitFor('fake kernel', () => (existsSync('/sys/class/.fake-kernel.ready') ? true : undefined), 5000);
    // Hold the unexport FIFO open too: should the fake kernel die, onoff's unexport must not block forever in
    // open() waiting for a reader.
    keepFifo = openSync(`${GPIO}/unexport`, 'r+');
    return await work();
  } finally {
    if (keepFifo !== undefined) closeSync(keepFifo);
    kernel.kill('SIGTERM');
  }
}

/**
 * Runs `main` and exits without waiting: onoff's epoll watcher and the children's handles may keep the loop
 * alive in a throwaway process. Past `timeoutMs`, `onTimeout` adds what it knows and stops what it started,
 * and the runner exits 3.
 */
export function runThrowaway(main: () => Promise<unknown>, timeoutMs: number, onTimeout: () => Record<string, unknown>): void {
  const timer = setTimeout(() => {
    console.log(JSON.stringify({ error: 'runner timed out', ...onTimeout() }));
    process.exit(3);
  }, timeoutMs);
  main().then(
    (result) => {
      console.log(JSON.stringify(result));
      clearTimeout(timer);
      process.exit(0);
    },
    (e: unknown) => {
      console.log(JSON.stringify({ error: String((e as Error)?.stack ?? e) }));
      process.exit(1);
    },
  );
}
