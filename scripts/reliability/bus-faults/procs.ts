/**
 * The processes of the bus-faults campaign, each started here and stopped by its PID: socat pty pairs and
 * the truth slaves (pymodbus). The gateway is started with scripts/bench/child.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { kill, rigUnavailable, sleep, waitFor } from '../../../test/drivers/modbus-rig.js';
import { MAIN } from '../../bench/child.js';
import { raise } from './priority.js';
import type { TruthLog } from './truth.js';

export { kill, sleep, waitFor };

const PYTHON = '/usr/bin/python3';
const SLAVE = path.resolve('scripts/reliability/bus-faults/truth-slave.py');

/** Why the campaign cannot run here, or null. */
export function unavailable(): string | null {
  return rigUnavailable() ?? (existsSync(MAIN) ? null : 'dist/main.js is missing (make build)');
}

/**
 * A socat pty pair with links `a` and `b`; with `log`, socat reports each transfer it makes (`-x`: a stamped header
 * and the bytes in hex, on its stderr; '>' from `a` to `b`, '<' back), handed to `log` as it comes.
 */
export async function ptyPair(a: string, b: string, log?: (text: string, at: number) => void): Promise<ChildProcess> {
  const args = [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`];
  const socat = spawn('socat', log ? ['-x', ...args] : args, { stdio: ['ignore', 'ignore', log ? 'pipe' : 'ignore'] });
  if (log) socat.stderr!.on('data', (d: Buffer) => log(d.toString('latin1'), performance.now()));
  if (socat.pid) raise(socat.pid);
  try {
    await waitFor(`socat links ${path.basename(a)}`, () => existsSync(a) && existsSync(b), 5000);
  } catch (err) {
    await kill(socat);
    throw err;
  }
  return socat;
}

/** A truth slave serving `units` on `port`; its served log goes into `truth`. */
export async function truthSlave(port: string, units: string, seqBase: number, truth: TruthLog): Promise<ChildProcess> {
  const child = spawn(PYTHON, [SLAVE, '--rtu', port, '--units', units, '--seq-base', String(seqBase)], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid) raise(child.pid); // before its threads start: they inherit it
  let ready = false;
  let rest = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (rest + d.toString()).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (line === 'READY') ready = true;
      else truth.line(line);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await waitFor(`truth slave ${units} READY`, () => ready || child.exitCode !== null, 15_000);
    if (child.exitCode !== null) throw new Error(`truth slave exited: ${err.slice(-400)}`);
  } catch (e) {
    await kill(child);
    throw e;
  }
  return child;
}
