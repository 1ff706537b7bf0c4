/**
 * The pymodbus RTU master (scripts/modbus-rig/master.py) as a test peer: steps go to its stdin as JSON
 * lines, results come back one JSON line each. Stopped by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { kill, waitFor } from '../drivers/modbus-rig.js';

const SCRIPT = path.resolve('scripts/modbus-rig/master.py');

export interface MasterResult {
  ok?: boolean;
  regs?: number[];
  error?: string;
  t?: number;
  summary?: { ok: number; timeouts: number; errors: number };
  ready?: boolean;
  fatal?: string;
}

export class RtuMaster {
  private child: ChildProcess | null = null;
  private readonly lines: MasterResult[] = [];
  private partial = '';
  private stderr = '';

  async start(port: string, baud = 9600, timeoutS = 1): Promise<void> {
    const child = spawn('/usr/bin/python3', [SCRIPT, '--port', port, '--baud', String(baud), '--timeout', String(timeoutS)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout!.on('data', (d: Buffer) => {
      this.partial += d.toString();
      const parts = this.partial.split('\n');
      this.partial = parts.pop()!;
      for (const p of parts) if (p.trim()) this.lines.push(JSON.parse(p) as MasterResult);
    });
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    const first = await this.next(10_000);
    if (!first.ready) throw new Error(`master did not start: ${JSON.stringify(first)} ${this.stderr.slice(-500)}`);
  }

  async next(timeoutMs = 5000): Promise<MasterResult> {
    await waitFor(`a line from the RTU master (stderr: ${this.stderr.slice(-300)})`, () => this.lines.length > 0 || this.child?.exitCode !== null, timeoutMs);
    const line = this.lines.shift();
    if (!line) throw new Error(`RTU master exited: ${this.stderr.slice(-500)}`);
    return line;
  }

  async run(step: Record<string, unknown>, timeoutMs = 5000): Promise<MasterResult> {
    this.child!.stdin!.write(`${JSON.stringify(step)}\n`);
    return this.next(timeoutMs);
  }

  /** A poll: every result, then the summary. */
  async poll(step: Record<string, unknown>, durationS: number): Promise<{ results: MasterResult[]; summary: NonNullable<MasterResult['summary']> }> {
    this.child!.stdin!.write(`${JSON.stringify({ op: 'poll', ...step, duration: durationS })}\n`);
    const results: MasterResult[] = [];
    for (;;) {
      const line = await this.next(durationS * 1000 + 10_000);
      if (line.summary) return { results, summary: line.summary };
      results.push(line);
    }
  }

  async stop(): Promise<void> {
    await kill(this.child);
    this.child = null;
  }
}
