/**
 * The gateway under test for kills and disk-full: a simulator bus whose values change every poll (a
 * counter and random walks on `m1`, a fleet of random-walk devices so history and snapshots carry real
 * volume), history on, the MQTT broker on with a user that may retain messages (so retained.json is
 * rewritten), and a short persist_interval so the loss bound is measurable.
 */
import { writeFile } from 'node:fs/promises';
import { hashPassword } from '../../../src/export/auth.js';

export const DEVICE = 'm1';
export const COUNTER = 'counter';
export const SETPOINT = 'setpoint';
export const BASE_TOPIC = 'rel';
export const MQTT_USER = 'rel';
export const MQTT_PASSWORD = 'reliability';

export interface RigOptions {
  dataDir: string;
  persistInterval: string;
  /** m1's poll period (the counter steps by 1 per poll). */
  poll: string;
  fleet: number;
  fleetPoints: number;
  /** history.max_disk: small, so logs are sealed (and killed mid-seal) within a run. */
  historyMaxDisk: string;
}

export async function writeRigConfig(file: string, o: RigOptions): Promise<void> {
  // N=1024: the broker checks this hash on every (re)connect; the default costs ~50 ms of the gateway's CPU.
  const hash = await hashPassword(MQTT_PASSWORD, { N: 1024 });
  const walk = (name: string): object => ({ name, type: 'float', decimals: 3, sim: { fn: 'random_walk', min: 0, max: 1000, step: 5 } });
  const config = {
    gateway: { id: 'reliability', data_dir: o.dataDir, log_level: 'info' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: {
      enable: true, host: '127.0.0.1', port: 0, ws_port: 0, base_topic: BASE_TOPIC, allow_anonymous: false,
      users: [{ username: MQTT_USER, password_hash: hash, can_write: true }],
    },
    history: { enable: true, max_disk: o.historyMaxDisk },
    // A TTL far longer than a run: restored values must not be dropped as expired, whatever the restart took.
    shadow: { persist_interval: o.persistInterval, default_ttl: '1h' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      meter: {
        points: [
          { name: COUNTER, type: 'int', sim: { fn: 'counter', step: 1 } },
          walk('power'),
          { name: SETPOINT, type: 'float', access: 'RW', sim: { fn: 'constant', value: 20 } },
        ],
      },
      fleet: { points: Array.from({ length: o.fleetPoints }, (_, i) => walk(`w${i}`)) },
    },
    devices: [
      { id: DEVICE, model: 'meter', bus: 'sim', poll: o.poll, ttl: '1h' },
      ...Array.from({ length: o.fleet }, (_, i) => ({ id: `f${i}`, model: 'fleet', bus: 'sim', poll: '500ms', ttl: '1h' })),
    ],
  };
  await writeFile(file, JSON.stringify(config, null, 1));
}
