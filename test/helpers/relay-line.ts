/**
 * A gateway on an RS-485 line of fixed settings (scripts/modbus-rig/line_relay.py) with real device images on it
 * (scripts/modbus-rig/devices.py at the line's settings): an end at other settings hears garbled bytes, as a UART
 * at the wrong rate does. A pty shows baud, stop bits and odd parity but not even vs none (line_relay.py), so a
 * mismatch is made of baud or odd parity. Everything in a unique temp dir, every process killed by PID, every
 * wait with a timeout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { kill, waitFor } from '../drivers/modbus-rig.js';

const PYTHON = '/usr/bin/python3';

/** A rig script under Debian's python3, once it printed READY (its stderr's tail in the error otherwise). */
export async function startPython(args: string[], what: string): Promise<ChildProcess> {
  const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  try {
    await waitFor(`${what} READY`, () => out.includes('READY') || child.exitCode !== null, 15_000);
  } catch (e) {
    await kill(child);
    throw new Error(`${(e as Error).message}: ${err.slice(-400)}`);
  }
  if (child.exitCode !== null) throw new Error(`${what} exited: ${err.slice(-400)}`);
  return child;
}

export interface RelayGateway {
  gw: Gateway;
  dir: string;
  /** The gateway's end of the line (the bus's port). */
  port: string;
  stop(): Promise<void>;
}

/**
 * `line`: `19200,8,O,1`; `devices`: a devices.py spec (`sdm630:1`); `config(port, dir)`: the gateway's raw config,
 * its RTU bus on `port`. `ends`: more ends of the line than the gateway's and the devices' (`other`: a link in
 * `dir` for another master).
 */
export async function startRelayGateway(line: string, devices: string, config: (port: string, dir: string) => Record<string, unknown>, ends: string[] = []): Promise<RelayGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'sg-relay-gw-'));
  const [baud, , parity, stop] = line.split(',');
  const children: ChildProcess[] = [];
  let gw: Gateway | undefined;
  const stopAll = async (): Promise<void> => {
    await gw?.stop();
    for (const child of [...children].reverse()) await kill(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    children.push(await startPython(['scripts/modbus-rig/line_relay.py', '--dir', dir, '--line', line, '--ends', ['gw', 'slave', ...ends].join(',')], 'line relay'));
    children.push(await startPython(['scripts/modbus-rig/devices.py', '--rtu', join(dir, 'slave'), '--device', devices, '--baud', baud!, '--parity', parity!, '--stop-bits', stop!], 'devices'));
    const raw = config(join(dir, 'gw'), dir);
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    return { gw, dir, port: join(dir, 'gw'), stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
