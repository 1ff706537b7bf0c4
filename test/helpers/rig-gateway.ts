/**
 * A real gateway on the pymodbus rig, for tests that go through REST/MQTT: the rig (socat pty pair +
 * slave), a unique temp data dir, the gateway from a config built with the rig's port; all stopped and
 * removed afterwards, whatever the test did.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { Rig } from '../drivers/modbus-rig.js';

/** The config around the devices: silent log, HTTP on port 0, MQTT and history off unless `extra` says so. */
export function rigConfig(dir: string, rig: Rig, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    gateway: { id: 'rig', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600 }],
    ...extra,
  };
}

export async function withRigGateway(
  units: string,
  config: (rig: Rig, dir: string) => Promise<Record<string, unknown>> | Record<string, unknown>,
  fn: (g: Gateway, rig: Rig) => Promise<void>,
): Promise<void> {
  const rig = new Rig(units);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-rig-gw-'));
  let gw: Gateway | undefined;
  try {
    await rig.start();
    const raw = await config(rig, dir);
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    await fn(gw, rig);
  } finally {
    await gw?.stop();
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
