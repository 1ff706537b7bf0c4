/**
 * A modbus-rtu bus behind an echoing adapter (scripts/modbus-rig/line_relay.py --echo gw: the gateway's end
 * hears its own bytes back, as through a converter without echo suppression) and the pymodbus slave: with
 * `echo: true` every point is read and a write lands once; with `"auto"` the echo is detected (one log
 * line) and the same holds; with `false` the reads still work and the log says to set `echo`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import type { Driver } from '../../src/drivers/types.js';
import { needs } from '../helpers/peers.js';
import { context, device, FakeSink, kill, point, rigUnavailable, rtuBus, waitFor } from './modbus-rig.js';

const rigTest = needs(rigUnavailable(), 'RTU echo rig');
const PYTHON = '/usr/bin/python3';

async function start(args: string[], procs: ChildProcess[]): Promise<void> {
  const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-800)));
  await waitFor(`${args[0]} READY`, () => out.includes('READY') || child.exitCode !== null, 10_000);
  if (child.exitCode !== null) throw new Error(`${args[0]} exited: ${err}`);
}

const points = [
  point('s16', { table: 'holding', address: 0, data_type: 'int16' }),
  point('f32', { table: 'holding', address: 6, data_type: 'float32' }),
  point('unit', { table: 'holding', address: 24, data_type: 'uint16' }),
  point('w16', { table: 'holding', address: 30, data_type: 'uint16' }),
  point('volt', { table: 'input', address: 0, data_type: 'float32' }, 'R'),
  point('coil0', { table: 'coil', address: 0, data_type: 'bool' }, 'RW', 'int'),
  point('di1', { table: 'discrete', address: 1, data_type: 'bool' }, 'R', 'int'),
];
const expected = { s16: -1, f32: 230.5, unit: 1, volt: 231.5, coil0: 1, di1: 1 };

interface Run { driver: Driver; sink: FakeSink; logs: string[]; counts: () => Record<string, number> }

async function withEchoBus(echo: boolean | 'auto', fn: (r: Run) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-echo-rig-'));
  const procs: ChildProcess[] = [];
  const countFile = join(dir, 'counts.json');
  const logs: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _e, cb) { logs.push(chunk.toString()); cb(); } }));
  const sink = new FakeSink();
  let driver: Driver | null = null;
  try {
    await start(['scripts/modbus-rig/line_relay.py', '--dir', dir, '--line', '9600,8,N,1', '--ends', 'gw,slave', '--echo', 'gw'], procs);
    await start(['scripts/modbus-rig/slave.py', '--rtu', join(dir, 'slave'), '--units', '1', '--count', countFile], procs);
    driver = createModbusRtuDriverWith(rtuBus(join(dir, 'gw'), { echo }), [device('meter', 1, points, 150)], { ...context(sink), log });
    await driver.start();
    await fn({ driver, sink, logs, counts: () => JSON.parse(readFileSync(countFile, 'utf8')) as Record<string, number> });
  } finally {
    await driver?.stop();
    for (const p of procs.reverse()) await kill(p);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every point read at least twice over, no failure, and one FC06 write that reaches the slave once and reads back. */
async function readsAndWrites({ driver, sink, counts }: Run): Promise<void> {
  await waitFor('every point, twice', () => sink.dataOf('meter').length >= 2 && Object.keys(sink.latest('meter')).length === points.length, 8000);
  const v = sink.latest('meter');
  assert.equal({ ...v, w16: undefined }, { ...expected, w16: undefined });
  await driver.write('meter', [{ name: 'w16', value: 4321 }]);
  assert.equal(await driver.read!('meter', ['w16']), { w16: 4321 });
  const writes = Object.entries(counts()).filter(([k]) => /^1:(6|16):30:1$/.test(k)).map(([k, n]) => `${k}=${n}`);
  assert.equal(writes, ['1:6:30:1=1'], 'one FC06 write, once (its copy did not make it look failed and retried)');
  assert.equal(sink.failuresOf('meter'), [], 'no request failed on its own copy');
}

rigTest('echo true: a bus behind an echoing adapter reads every point and writes', async () => {
  await withEchoBus(true, async (run) => {
    await readsAndWrites(run);
    assert.not.ok(run.logs.some((l) => l.includes('hands back')), 'configured: nothing to detect');
  });
});

rigTest('echo "auto": the echo is detected at the first request (one log line), then every point is read and a write lands', async () => {
  await withEchoBus('auto', async (run) => {
    await readsAndWrites(run);
    const said = run.logs.filter((l) => l.includes('hands back what the gateway sends'));
    assert.is(said.length, 1, said.join('\n'));
    assert.match(said[0]!, /echo is on/);
  });
});

rigTest('echo false behind the same adapter: reads still work (a read\'s copy is ours, not another master), and the log says to set echo', async () => {
  await withEchoBus(false, async ({ sink, logs }) => {
    await waitFor('every point, twice', () => sink.dataOf('meter').length >= 2 && Object.keys(sink.latest('meter')).length === points.length, 8000);
    assert.equal({ ...sink.latest('meter'), w16: undefined }, { ...expected, w16: undefined });
    assert.equal(sink.failuresOf('meter'), []);
    const said = logs.filter((l) => l.includes('hands back what the gateway sends'));
    assert.is(said.length, 1);
    assert.match(said[0]!, /set \\"echo\\": true/);
  });
});

test.run();
