/**
 * `shadowgate doctor --listen` on one RS-485 medium (scripts/modbus-rig/line_relay.py) with an independent
 * pymodbus master (master.py) polling two units of the pymodbus slave (slave.py), the gateway's end only
 * listening: the traffic map names both units, their function codes and address ranges, and the gateway
 * sent nothing — the slave counted exactly the master's requests, and the master got every answer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { listenLine } from '../../src/drivers/modbus/doctor/listen.js';
import type { DoctorProgress, LineSettings } from '../../src/protocol/modbus/doctor-types.js';
import { needs } from '../helpers/peers.js';
import { kill, rigUnavailable, waitFor } from './modbus-rig.js';

const PYTHON = '/usr/bin/python3';
const rigTest = needs(rigUnavailable(), 'doctor listen rig');

/** A child whose stdout is collected; resolves once `ready` is printed. */
async function start(args: string[], ready: string, procs: ChildProcess[]): Promise<{ child: ChildProcess; out: () => string }> {
  const child = spawn(PYTHON, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  procs.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-800)));
  try {
    await waitFor(`${args[0]} ${ready}`, () => out.includes(ready) || child.exitCode !== null, 10_000);
  } catch (e) {
    throw new Error(`${(e as Error).message}; stderr: ${err}`);
  }
  if (child.exitCode !== null) throw new Error(`${args[0]} exited: ${err}`);
  return { child, out: () => out };
}

const at = (baud: number): LineSettings => ({ baud_rate: baud, parity: 'none', data_bits: 8, stop_bits: 1 });

rigTest('--listen beside a pymodbus master polling two units: both units, their function codes and ranges; the gateway sent 0 bytes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sg-listen-'));
  const procs: ChildProcess[] = [];
  const counts = join(dir, 'counts.json');
  let feeder: NodeJS.Timeout | undefined;
  try {
    await start(['scripts/modbus-rig/line_relay.py', '--dir', dir, '--line', '9600,8,N,1', '--ends', 'gw,slave,other'], 'READY', procs);
    await start(['scripts/modbus-rig/slave.py', '--rtu', join(dir, 'slave'), '--units', '1,2', '--count', counts], 'READY', procs);
    // A timeout of 1 s: pymodbus 3.0.0 with one under a second reads without waiting (every request "times out" at once).
    const master = await start(['scripts/modbus-rig/master.py', '--port', join(dir, 'other'), '--timeout', '1'], '"ready"', procs);
    // The other master polls unit 1 (FC3 20-25) and unit 2 (FC4 0-3) in turn, every 150 ms, the whole time.
    let n = 0;
    feeder = setInterval(() => {
      const step = n++ % 2 === 0 ? { op: 'read', fc: 3, unit: 1, address: 20, count: 6 } : { op: 'read', fc: 4, unit: 2, address: 0, count: 4 };
      master.child.stdin!.write(`${JSON.stringify(step)}\n`);
    }, 150);
    const progress: DoctorProgress[] = [];
    // 19200 first: the relay garbles what a wrong-speed end hears, so no frame; then 9600, where the master is.
    const result = await listenLine(join(dir, 'gw'), [at(19200), at(9600)], 7, (p) => progress.push(p));
    clearInterval(feeder);
    feeder = undefined;
    await waitFor('the master\'s last answers', () => master.out().split('\n').filter((l) => l.includes('"ok"')).length >= n - 1, 5000);

    assert.equal(result.line, at(9600), 'the setting under which frames were heard');
    const units = result.traffic.map((u) => u.unit);
    assert.equal(units, [1, 2]);
    const [u1, u2] = result.traffic as [typeof result.traffic[0], typeof result.traffic[0]];
    assert.equal(u1.functions, [3]);
    assert.equal(u1.ranges.map((r) => [r.fc, r.from, r.to]), [[3, 20, 25]]);
    assert.equal(u2.functions, [4]);
    assert.equal(u2.ranges.map((r) => [r.fc, r.from, r.to]), [[4, 0, 3]]);
    assert.ok(u1.answered >= 5 && u2.answered >= 5, `answers heard: ${u1.answered}, ${u2.answered}`);
    assert.is(u1.unanswered + u2.unanswered, 0);
    assert.ok(u1.ranges[0]!.per_minute > 60, `rate ${u1.ranges[0]!.per_minute}/min (one every 300 ms)`);
    assert.is(u1.last_values['3:24'], 1, 'slave.py keeps the unit id at holding 24');
    assert.ok(progress.some((p) => p.note.includes('19200')) && progress.at(-1)!.done === 1, 'progress named each setting and ended');

    // 0 bytes from the gateway: every request the slave saw is one the master made, and every one was answered.
    const results = master.out().split('\n').filter((l) => l.includes('"ok"')).map((l) => JSON.parse(l) as { ok: boolean });
    assert.ok(results.every((r) => r.ok), `no request of the master was disturbed: ${results.map((r) => (r.ok ? '.' : 'x')).join('')} of n=${n}`);
    const seen = JSON.parse(readFileSync(counts, 'utf8')) as Record<string, number>;
    assert.equal(Object.keys(seen).sort(), ['1:3:20:6', '2:4:0:4'], 'the slave saw no other request');
    // At most the steps handed to the master (a frame of ours would be one more), at least the answers it printed
    // (its last request may be on the line as the feeder stops: 46 seen, 45 printed once beside a CPU hog).
    const total = Object.values(seen).reduce((a, b) => a + b, 0);
    assert.ok(total >= results.length && total <= n, `the slave saw ${total} requests: the master printed ${results.length} of the ${n} it was given`);
  } finally {
    clearInterval(feeder);
    for (const p of procs.reverse()) await kill(p);
    rmSync(dir, { recursive: true, force: true });
  }
});

rigTest('--listen on a line where nobody talks: no setting, no units, a hint that says so', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sg-listen-'));
  const procs: ChildProcess[] = [];
  try {
    await start(['scripts/modbus-rig/line_relay.py', '--dir', dir, '--line', '9600,8,N,1', '--ends', 'gw,slave'], 'READY', procs);
    assert.ok(existsSync(join(dir, 'gw')));
    const result = await listenLine(join(dir, 'gw'), [at(9600)], 1.5);
    assert.is(result.line, null);
    assert.equal(result.traffic, []);
    assert.match(result.hints.join('\n'), /nothing was heard at 9600 8N1/);
  } finally {
    for (const p of procs.reverse()) await kill(p);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
