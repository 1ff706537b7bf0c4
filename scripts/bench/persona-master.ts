/**
 * The persona bench's side of persona_master.py (an RTU master in Python, its own process): run it for a
 * while and read back its summary and, with `trace`, every answer; and the lag figure matched from those
 * answers against the source changes the bench saw in the shadow.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { killChild } from './modbus-bus/rig.js';

const PYTHON = '/usr/bin/python3';

export interface MasterSummary {
  requests: number; answers: number; timeouts: number; crc_errors: number; exceptions: number; wrong: number;
  p50_ms: number | null; p99_ms: number | null; min_ms: number | null; max_ms: number | null;
}

/** One answer: reply start on CLOCK_MONOTONIC, s, and its registers. */
export interface Traced {
  t: number;
  regs: number[];
}

export interface MasterRun {
  unit: number; fc: number; address: number; count: number;
  intervalS: number; durationS: number; trace?: boolean;
}

export function runMaster(port: string, run: MasterRun): Promise<{ summary: MasterSummary; trace: Traced[] }> {
  const argv = [port, run.unit, run.fc, run.address, run.count, run.intervalS, run.durationS, 0.5, ...(run.trace ? ['trace'] : [])].map(String);
  const master = spawn(PYTHON, [fileURLToPath(new URL('./persona_master.py', import.meta.url)), ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  master.stdout.on('data', (d: Buffer) => (out += d));
  master.stderr.on('data', (d: Buffer) => (err += d));
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => { void killChild(master as ChildProcess); reject(new Error('the master did not finish')); }, (run.durationS + 30) * 1000);
    master.once('close', (code) => {
      clearTimeout(guard);
      if (code !== 0) return reject(new Error(`persona_master.py exited ${code}: ${err}`));
      const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ summary: lines.at(-1) as unknown as MasterSummary, trace: lines.slice(0, -1) as unknown as Traced[] });
    });
  });
}

const float32 = (hi: number, lo: number): number => {
  const v = new DataView(new ArrayBuffer(4));
  v.setUint16(0, hi);
  v.setUint16(2, lo);
  return v.getFloat32(0);
};

/**
 * Each change (value as float32, CLOCK_MONOTONIC s) matched to the first later answer carrying its value:
 * ms from the shadow to the answer. The last change may come after the last answer: not counted as unserved.
 */
export function lagFigures(changes: readonly { value: number; t: number }[], trace: readonly Traced[]): { matched: number; unmatched: number; p50: number; max: number } {
  const lags: number[] = [];
  let unmatched = 0;
  const lastT = trace.at(-1)?.t ?? -Infinity;
  const firstT = trace[0]?.t ?? Infinity;
  for (const c of changes) {
    if (c.t < firstT || c.t > lastT - 0.5) continue; // outside the master's run
    const hit = trace.find((a) => a.t >= c.t - 0.005 && float32(a.regs[0]!, a.regs[1]!) === c.value);
    if (hit) lags.push((hit.t - c.t) * 1000);
    else unmatched++;
  }
  lags.sort((a, b) => a - b);
  return { matched: lags.length, unmatched, p50: lags[Math.floor(lags.length / 2)] ?? NaN, max: lags.at(-1) ?? NaN };
}
