/**
 * `shadowgate doctor` as a user runs it (a child process), on a line of real ptys (scripts/modbus-rig/line_relay.py)
 * at 19200 8O1 with three devices (scripts/modbus-rig/devices.py): the settings found from a wrong first guess,
 * every unit, the meter named, within the 60 s the doctor promises; and behind an adapter that echoes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { DoctorReport } from '../../src/protocol/modbus/doctor-types.js';
import { needs, peerHook } from '../helpers/peers.js';
import { kill, rigUnavailable } from '../drivers/modbus-rig.js';
import { startPython } from '../helpers/relay-line.js';

const missing = rigUnavailable();
/** The devices on the line: a meter, a sensor without holding register 0 (exception 2 there), a relay board. */
const DEVICES = 'sdm630:1,xy-md02:7,ws-relay:33';

interface Line { dir: string; children: ChildProcess[] }

async function startLine(echo: boolean): Promise<Line> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-doctor-'));
  const line: Line = { dir, children: [] };
  try {
    line.children.push(await startPython(['scripts/modbus-rig/line_relay.py', '--dir', dir, '--line', '19200,8,O,1', '--ends', 'gw,slave', ...(echo ? ['--echo', 'gw'] : [])], 'line relay'));
    line.children.push(await startPython(['scripts/modbus-rig/devices.py', '--rtu', join(dir, 'slave'), '--device', DEVICES, '--baud', '19200', '--parity', 'O'], 'devices'));
  } catch (e) {
    await stopLine(line);
    throw e;
  }
  return line;
}

async function stopLine(line: Line | null): Promise<void> {
  if (!line) return;
  for (const child of [...line.children].reverse()) await kill(child);
  rmSync(line.dir, { recursive: true, force: true });
}

/** `shadowgate doctor --port DIR/gw --json` in its own process; killed by PID after `limitMs`. */
function doctor(port: string, limitMs: number): Promise<{ code: number | null; report: DoctorReport; stderr: string; ms: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'doctor', '--port', port, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { void kill(child); reject(new Error(`doctor still running after ${limitMs} ms: ${err.slice(-400)}`)); }, limitMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      try {
        resolve({ code, report: JSON.parse(out) as DoctorReport, stderr: err, ms: performance.now() - t0 });
      } catch {
        reject(new Error(`no JSON report (exit ${code}): ${out.slice(0, 300)} ${err.slice(-400)}`));
      }
    });
  });
}

/** One line's suite: the plain adapter, or one that echoes what the doctor sends. */
function lineSuite(echo: boolean): ReturnType<typeof suite<{ line: Line | null }>> {
  const s = suite<{ line: Line | null }>(`doctor on a 19200 8O1 line${echo ? ' behind an echoing adapter' : ''}`, { line: null });
  const rigTest = needs(missing, 'doctor rig tests', s);
  s.before(peerHook(missing, async (ctx) => { ctx.line = await startLine(echo); }));
  s.after(async (ctx) => { await stopLine(ctx.line); });

  rigTest(echo ? 'the echo is found and stripped: line.echo, every unit still found' : 'finds the setting from a wrong first guess, all three units and the meter, within 60 s', async (ctx) => {
    const { code, report, stderr, ms } = await doctor(join(ctx.line!.dir, 'gw'), 90_000);
    console.log(`    doctor${echo ? ' (echo)' : ''}: ${(report.elapsed_ms / 1000).toFixed(1)} s in the report, ${(ms / 1000).toFixed(1)} s with start-up, ${report.sent_bytes} bytes sent`);
    assert.is(code, 0, stderr.slice(-500));
    assert.equal({ baud: report.line?.baud_rate, parity: report.line?.parity, stop: report.line?.stop_bits }, { baud: 19200, parity: 'odd', stop: 1 });
    assert.is(report.line?.echo, echo);
    assert.equal(report.units.map((u) => u.unit), [1, 7, 33], `units found; hints: ${report.hints.join(' / ')}`);
    assert.is(report.units.find((u) => u.unit === 7)!.answers, 'exception');
    if (echo) assert.ok(report.hints.some((h) => /echoes/.test(h)), report.hints.join('\n'));
    assert.is(report.units.find((u) => u.unit === 1)!.candidates[0]?.model, 'eastron-sdm630', JSON.stringify(report.units[0], null, 1));
    assert.is(report.units.find((u) => u.unit === 7)!.candidates[0]?.model, 'xy-md02');
    assert.is(report.units.find((u) => u.unit === 33)!.candidates[0]?.model, 'waveshare-modbus-rtu-relay');
    assert.ok(report.elapsed_ms <= 60_000, `the doctor took ${report.elapsed_ms} ms`);
    assert.match(stderr, /\[units\]/, 'a progress line');
  });
  return s;
}

const plain = lineSuite(false);
const echoing = lineSuite(true);
plain.run();
echoing.run();
