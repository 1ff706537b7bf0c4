/**
 * Bus option `rs485` "gpio" on the real GPIO path, timed by its own syscalls: a modbus-rtu bus claims BCM 17
 * (gpio529) through onoff on the fake Pi 4 sysfs (scripts/gpio-fake/) and polls the pymodbus slave, in its own
 * process under strace. For each request the trace must show DE written 1 before the tty write and 0 no earlier
 * than the frame's wire time after (test/helpers/de-trace.ts says why strace can make the 0 look late, never
 * early). Timestamps from other processes (a watcher, a tap) were tried and cannot prove this: they come late by
 * unknown amounts in either direction of the check. Skipped with the reason when strace, unshare, socat or
 * pymodbus are missing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { checkFrames, median, parseTrace } from '../helpers/de-trace.js';
import { runInNamespace, unshareProblem } from '../helpers/namespace.js';
import { needs } from '../helpers/peers.js';
import { rigUnavailable } from './modbus-rig.js';
import { test } from 'uvu';

const RUNNER = 'scripts/gpio-fake/rs485-de-in-namespace.ts';
const TIMEOUT_MS = 38_000; // the runner gives up at 35 s; about 8 s at rest
const POLLS = 8;
const REQUEST_BYTES = 8; // read holding 0 × 1 of unit 1
const CHAR_MS = 11 / 9600 * 1000; // 8N1 is 10 bits; the bus counts 11 (rtu-transport.ts), as deReleaseAt is given
const TOLERANCE_MS = 0.05; // strace stamps in whole microseconds

function straceProblem(): string | undefined {
  const r = spawnSync('strace', ['-V'], { encoding: 'utf8', timeout: 5000 });
  return r.status === 0 ? undefined : `strace is not installed (apt-get install strace)${r.error ? `: ${r.error.message}` : ''}`;
}

const problem = straceProblem() ?? rigUnavailable() ?? unshareProblem();
const deTest = needs(problem, 'rs485 DE on the fake sysfs under strace');

deTest('rs485 "gpio": DE high before each request and low no earlier than its last byte leaves, by the syscalls', async () => {
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'sg-rs485-de-'));
  try {
    const r = await runInNamespace(RUNNER, [workDir, String(POLLS)], TIMEOUT_MS, 'rs485 de');
    // The bus read its point every poll, and the DE line was given back at stop.
    assert.ok(r.polls >= POLLS, `polls: ${r.polls}`);
    assert.equal(r.latest, { s16: -1 });
    assert.equal(r.failures, []);
    assert.equal(r.exportedAfterStop, []);

    const writes = parseTrace(await readFile(r.trace, 'utf8'), r.dePath, r.ttyPath);
    const frames = checkFrames(writes, REQUEST_BYTES, CHAR_MS, TOLERANCE_MS);
    assert.ok(frames.length >= 5, `requests seen in the trace: ${frames.length} (${writes.length} writes of DE/tty)`);
    const bad = frames.filter((f) => f.problems.length > 0);
    assert.equal(bad.map((f) => f.problems.join('; ')), [], 'every request framed by DE');
    // Late is allowed (the loop's timer, the drain in the thread pool, strace's stops): printed, not asserted.
    const late = frames.filter((f) => !f.heldOver).map((f) => f.lateMs!);
    const held = frames.length - late.length;
    console.log(`rs485 DE: ${frames.length} requests; DE fell after the computed end of the frame by median ${late.length ? median(late).toFixed(3) : '-'} ms, `
      + `max ${late.length ? Math.max(...late).toFixed(3) : '-'} ms (${(REQUEST_BYTES * CHAR_MS).toFixed(3)} ms on the wire)${held ? `; ${held} held high into the next frame` : ''}`);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
});

test.run();
