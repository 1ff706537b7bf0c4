/**
 * The doctor's own serial line (doctor/serial-io.ts) over a real pty pair: an answer still coming at the ask's
 * deadline is waited for, not cut into garbage (cut, it was garbage in that ask and the next, and the unit that
 * answered was never found in the scan). The far end is played by this test: it writes the answer a byte every
 * 20 ms across the deadline, as a slow unit or a busy adapter hands it over.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSerialDoctorIo } from '../../src/drivers/modbus/doctor/serial-io.js';
import { encodeRequest } from '../../src/protocol/modbus/client-pdu.js';
import { rtuFrame } from '../../src/protocol/modbus/frame.js';
import { needs } from '../helpers/peers.js';
import { kill, rigUnavailable, sleep, socatPair, waitFor } from './modbus-rig.js';

const rigTest = needs(rigUnavailable(), 'doctor serial line test');
const SETTINGS = { baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1 } as const;

/**
 * Asks unit 7 with a 300 ms deadline and plays its exception answer a byte every 20 ms from 40 ms before the deadline,
 * so the frame straddles it. Returns what the ask got, or null where this machine did not play it so (its first byte
 * written after the deadline, or a gap of the frame gap or more: a busy machine runs timers late).
 */
async function straddle(io: Awaited<ReturnType<typeof openSerialDoctorIo>>, far: number): Promise<unknown> {
  const answer = rtuFrame(7, Uint8Array.of(0x83, 2));
  const timeoutMs = 300;
  const asked = performance.now();
  const got = io.ask(7, encodeRequest({ fc: 3, address: 0, count: 1 }), timeoutMs);
  const rx = Buffer.alloc(64);
  await waitFor('the request at the far end', () => { try { return readSync(far, rx) > 0; } catch { return false; } }, 5000);
  await sleep(Math.max(0, asked + timeoutMs - 40 - performance.now()));
  const at: number[] = [];
  for (const byte of answer) {
    if (at.length > 0) await sleep(20);
    writeSync(far, Uint8Array.of(byte));
    at.push(performance.now());
  }
  const result = await got;
  const played = at[0]! < asked + timeoutMs && at.at(-1)! > asked + timeoutMs && at.every((t, i) => i === 0 || t - at[i - 1]! < 45);
  return played ? result : null;
}

rigTest('an answer still coming at the deadline is waited for; a silent line is silence', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sg-doctor-io-'));
  let socat: ChildProcess | null = null;
  let far: number | null = null;
  try {
    socat = await socatPair(join(dir, 'doctor'), join(dir, 'far'));
    far = openSync(join(dir, 'far'), constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
    const io = await openSerialDoctorIo(join(dir, 'doctor'), SETTINGS);
    try {
      let got: unknown = null;
      for (let attempt = 0; attempt < 5 && got === null; attempt++) got = await straddle(io, far);
      assert.ok(got !== null, 'the answer was played across the deadline in one of 5 attempts');
      assert.equal(got, { kind: 'exception', code: 2 }, 'the whole answer, not its first bytes as garbage');
      assert.equal(await io.ask(8, encodeRequest({ fc: 3, address: 0, count: 1 }), 100), { kind: 'silence' }, 'a silent line still ends in silence');
    } finally {
      await io.close();
    }
  } finally {
    if (far !== null) closeSync(far);
    await kill(socat);
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
