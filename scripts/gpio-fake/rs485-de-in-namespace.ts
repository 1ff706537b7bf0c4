/**
 * Bus option `rs485` "gpio" through the real GPIO path, timed by its own syscalls: the fake sysfs (Pi 4 layout,
 * BCM 17 = gpio529) and the pymodbus slave on a socat pty pair are set up here; the bus runs in its own process
 * (rs485-de-bus.ts) under strace, which stamps every write of the DE value file and of the tty as the kernel is
 * entered, in the one order they happened. test/drivers/modbus-rs485-de-sysfs.test.ts reads the trace.
 * Run as: unshare -m --propagation private node --import tsx scripts/gpio-fake/rs485-de-in-namespace.ts <workDir> <polls>
 * (workDir: an empty temp dir, made and removed by the caller; the trace is left there as strace.log).
 * Prints one JSON line. Never run it outside a fresh mount namespace: it mounts a tmpfs over /sys/class.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kill, Rig } from '../../test/drivers/modbus-rig.js';
import { GPIO, runThrowaway, waitFor, withFakeKernel } from './namespace.js';

const [workDir, polls = '8'] = process.argv.slice(2);
const BUS = fileURLToPath(new URL('./rs485-de-bus.ts', import.meta.url));
const BASE = 512; // pinctrl-bcm2711 on the fake Pi 4
const DE_BCM = 17; // rs485-de-bus.ts's de_pin
let strace: ChildProcess | undefined;

/**
 * `-f`: every thread (a DE write moved to the thread pool would show); `-ttt -T`: the entry's wall time and the
 * call's length, so a call's end is known too; `-y`: the path behind each fd; `-xx`: bytes in hex.
 */
function traced(out: string, tty: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const args = ['-f', '-ttt', '-T', '-y', '-xx', '--seccomp-bpf', '-e', 'trace=write,pwrite64,writev', '-o', out,
    process.execPath, '--import', 'tsx', BUS, tty, polls];
  const child = spawn('strace', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  strace = child;
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // The bus process gives up at 15 s on its own; this is the bound on strace itself.
  const timer = setTimeout(() => void kill(child), 20_000);
  return new Promise((resolve) => child.once('close', (code) => {
    clearTimeout(timer);
    resolve({ code, stdout, stderr });
  }));
}

async function main(): Promise<Record<string, unknown>> {
  if (!workDir) throw new Error('usage: rs485-de-in-namespace.ts <workDir> <polls>');
  return withFakeKernel('pi4', 30_000, async () => {
    const rig = new Rig('1');
    const trace = path.join(workDir, 'strace.log');
    await rig.start();
    const ttyPath = realpathSync(rig.master); // the pty as strace -y names it
    let run;
    try {
      run = await traced(trace, rig.master);
    } finally {
      await rig.stop();
    }
    const bus = JSON.parse(run.stdout.trim().split('\n').pop() || '{}') as Record<string, unknown>;
    if (run.code !== 0 || bus.error) throw new Error(`bus under strace: exit ${run.code}, ${String(bus.error ?? '')}; stderr: ${run.stderr.slice(-800)}`);
    // The fake kernel takes the unexport from its FIFO when it gets a CPU: waited for, not slept on.
    await waitFor('the DE line unexported', () => (readdirSync(GPIO).some((d) => /^gpio\d+$/.test(d)) ? undefined : true), 5000).catch(() => undefined);
    return { ...bus, trace, ttyPath, dePath: `${GPIO}/gpio${BASE + DE_BCM}/value`, exportedAfterStop: readdirSync(GPIO).filter((d) => /^gpio\d+$/.test(d)) };
  });
}

// On a timeout strace is stopped by PID (the rig's slave and socat go with the process group runInNamespace kills).
runThrowaway(main, 35_000, () => {
  if (strace?.pid !== undefined && strace.exitCode === null) process.kill(strace.pid, 'SIGKILL');
  return {};
});
