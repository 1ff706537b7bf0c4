/**
 * Fleet F of issue 16, the configuration the soak runs: 1,000 simulated devices × 100 points (50 int,
 * 40 float, 10 short strings), polled every second, 10 points of each device changing on every poll
 * (5 int counters, 5 float random walks), history, persistence and the MQTT broker with Home Assistant
 * discovery on — every other key at its shipped default. One int point is RW so MQTT `set` has something
 * to write (the soak's MQTT load); it is constant until written.
 */
import { writeFile } from 'node:fs/promises';
import { hashPassword } from '../../../src/export/auth.js';

export const FLEET = { devices: 1000, points: 100, changingPerDevice: 10, poll: '1s' } as const;
/** The point the MQTT load writes (`<base>/<device>/set`), and the one REST reads. */
export const RW_POINT = 'i49';
export const READ_POINT = 'i7';
export const SETTER = { username: 'soak', password: 'soak-writer-pw' } as const;
/** Fleet F's `#` subscriber: a read-only user (anonymous clients may read only the gateway's own topics). */
export const READER = { username: 'reader', password: 'soak-reader-pw' } as const;

/** One line for the table: what was running while the figures were taken. */
export const fleetLabel = (): string =>
  `fleet F ${FLEET.devices.toLocaleString('en')} × ${FLEET.points} points (50 int/40 float/10 string), ` +
  `${(FLEET.devices * FLEET.changingPerDevice).toLocaleString('en')} changes/s (poll ${FLEET.poll}), ` +
  'history + persistence (defaults) + MQTT with a # subscriber + HA discovery';

function points(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < 50; i++) {
    const sim = i < 5 ? { fn: 'counter', step: 1 } : { fn: 'constant', value: i };
    out.push({ name: `i${i}`, type: 'int', ...(`i${i}` === RW_POINT ? { access: 'RW' } : {}), sim });
  }
  // A ±1 walk rounded to 2 decimals repeats a value about 1 read in 200: ~10 changes per device per second.
  for (let i = 0; i < 40; i++) {
    const sim = i < 5 ? { fn: 'random_walk', min: 0, max: 1000, step: 1 } : { fn: 'constant', value: i * 1.5 };
    out.push({ name: `f${i}`, type: 'float', decimals: 2, sim });
  }
  for (let i = 0; i < 10; i++) out.push({ name: `s${i}`, type: 'string', sim: { fn: 'constant', value: `state-${i}` } });
  return out;
}

/**
 * Writes the config. Ports are 0 (any free port; the "ready" line names the HTTP port, /api/v1/system the
 * MQTT one); data_dir comes from SHADOWGATE_DATA_DIR as under systemd.
 */
export async function writeFleetF(file: string): Promise<void> {
  const config = {
    gateway: { id: 'soak' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: {
      host: '127.0.0.1', port: 0, ws_port: 0,
      homeassistant: { enable: true },
      users: [
        { username: SETTER.username, password_hash: await hashPassword(SETTER.password), can_write: true },
        { username: READER.username, password_hash: await hashPassword(READER.password), can_write: false },
      ],
    },
    shadow: { max_devices: FLEET.devices, max_points: FLEET.devices * FLEET.points },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { fleet: { points: points() } },
    devices: Array.from({ length: FLEET.devices }, (_, i) => ({ id: `dev-${i}`, model: 'fleet', bus: 'sim', poll: FLEET.poll })),
  };
  await writeFile(file, JSON.stringify(config));
}
