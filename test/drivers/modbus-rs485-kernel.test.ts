/**
 * Bus option `rs485` "kernel" on a pty (a socat pair, as a USB adapter with automatic direction would be: no
 * RS-485 support in its driver). The perl call reaches the tty with TIOCSRS485 and is refused with ENOTTY, which
 * proves the call was made; made to succeed under strace's fault injection, it prints nothing and is taken. A
 * modbus-rtu bus with the option logs one clear line at start and polls the pymodbus slave as without it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { RS485_SCRIPT, setKernelRs485 } from '../../src/drivers/modbus/rs485-kernel.js';
import { serialRs485Bytes } from '../../src/protocol/modbus/rs485.js';
import { needs } from '../helpers/peers.js';
import { context, device, FakeSink, kill, point, Rig, rigUnavailable, rtuBus, socatPair, waitFor } from './modbus-rig.js';

const perlMissing = spawnSync('perl', ['-e', '1']).status === 0 ? null : 'perl is not installed';
const socatMissing = spawnSync('socat', ['-V']).status === 0 ? null : 'socat is not installed (apt-get install socat)';
const straceMissing = spawnSync('strace', ['-V']).status === 0 ? null : 'strace is not installed';
const ptyTest = needs(perlMissing ?? socatMissing, 'rs485 kernel mode on a pty');
const straceTest = needs(perlMissing ?? socatMissing ?? straceMissing, 'rs485 kernel mode under strace');
const rigTest = needs(perlMissing ?? rigUnavailable(), 'rs485 kernel mode on the RTU rig');

const setting = { rtsOnSend: true, delayBeforeSendUs: 0, delayAfterSendUs: 0 };

async function withPty(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-rs485-'));
  const socat = await socatPair(join(dir, 'a'), join(dir, 'b'));
  try {
    await fn(join(dir, 'a'));
  } finally {
    await kill(socat);
    rmSync(dir, { recursive: true, force: true });
  }
}

ptyTest('a pty refuses TIOCSRS485 with ENOTTY: the errno text comes back; a missing port and a missing perl say so', async () => {
  await withPty(async (path) => {
    assert.is(await setKernelRs485(path, setting), 'Inappropriate ioctl for device');
    assert.is(await setKernelRs485(`${path}-gone`, setting), 'open: No such file or directory');
    assert.match((await setKernelRs485(path, setting, undefined, '/nonexistent/perl'))!, /^perl is not installed/);
  });
});

straceTest('the ioctl is TIOCSRS485 on the port; made to succeed, the script prints nothing and exits 0', async () => {
  await withPty(async (path) => {
    const hexStruct = Buffer.from(serialRs485Bytes({ ...setting, delayBeforeSendUs: 1500 })).toString('hex');
    const traced = spawnSync('strace', ['-e', 'trace=ioctl', 'perl', '-e', RS485_SCRIPT, path, hexStruct], { encoding: 'utf8', timeout: 10_000 });
    assert.match(traced.stderr, /ioctl\(\d+, TIOCSRS485, 0x[0-9a-f]+\)\s+= -1 ENOTTY/, traced.stderr);
    const injected = spawnSync('strace', ['-o', '/dev/null', '-e', 'trace=ioctl', '-e', 'inject=ioctl:retval=0', 'perl', '-e', RS485_SCRIPT, path, hexStruct], { encoding: 'utf8', timeout: 10_000 });
    assert.is(injected.status, 0, injected.stderr);
    assert.is(injected.stdout + injected.stderr, '');
    // Through setKernelRs485 too: the same run, taken as success (null).
    const viaStrace = await setKernelRs485(path, setting, (_file, args, options, done) => {
      const r = spawnSync('strace', ['-o', '/dev/null', '-e', 'trace=ioctl', '-e', 'inject=ioctl:retval=0', 'perl', ...args], { encoding: 'utf8', timeout: options.timeout });
      done(r.status === 0 ? null : new Error(`exit ${r.status}`), r.stdout, r.stderr);
    });
    assert.is(viaStrace, null);
  });
});

rigTest('a modbus-rtu bus with rs485 "kernel" on a pty: one clear line at start, the slave polled as without it', async () => {
  const rig = new Rig('1');
  const logs: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _e, cb) { logs.push(chunk.toString()); cb(); } }));
  const sink = new FakeSink();
  await rig.start();
  const bus = rtuBus(rig.master, { rs485: { mode: 'kernel', rts_on_send: true, delay_before_send_us: 0, delay_after_send_us: 0 } });
  const driver = createModbusRtuDriverWith(bus, [device('meter', 1, [point('s16', { table: 'holding', address: 0, data_type: 'int16' })], 100)], { ...context(sink), log });
  try {
    await driver.start();
    await waitFor('five polls', () => sink.dataOf('meter').length >= 5, 10_000);
    assert.is(sink.latest('meter').s16, -1);
    const lines = logs.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => /rs485/i.test(l.msg));
    assert.is(lines.length, 1, logs.join(''));
    assert.is(lines[0]!.level, 40, 'a warning');
    assert.is(lines[0]!.msg, `bus rs485: ${rig.master} refused RS-485 mode (Inappropriate ioctl for device): a USB adapter with automatic direction needs no rs485 option; the bus runs without it`);
    assert.is(sink.failuresOf('meter').length, 0);
  } finally {
    await driver.stop();
    await rig.stop();
  }
});

test.run();
