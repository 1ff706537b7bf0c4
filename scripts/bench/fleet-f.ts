/**
 * Issue 16's fleet F, the configuration every footprint figure is measured with: N devices × 100 points
 * (50 int, 40 float, 10 short strings), 10% of the points changing every second (random walks polled at 1 s),
 * simulator driver, and the shipped defaults on — history, persistence (10 s), the MQTT broker (with one
 * subscriber to the gateway's topics started by the bench) and Home Assistant discovery. `describeFleet` is printed beside
 * every figure, so a reader knows what was measured.
 */
import { writeFile } from 'node:fs/promises';

export interface FleetOptions {
  devices: number;
  /** Points that change every poll, per device (10 of 100 = 10%). */
  changing: number;
  mqtt: boolean;
  history: boolean;
  homeassistant: boolean;
}

export const FLEET_F: FleetOptions = { devices: 1000, changing: 10, mqtt: true, history: true, homeassistant: true };
/** The same features with one device: the baseline a per-point figure is taken over. */
export const FLEET_1: FleetOptions = { ...FLEET_F, devices: 1 };

const INTS = 50;
const FLOATS = 40;
const STRINGS = 10;
export const POINTS_PER_DEVICE = INTS + FLOATS + STRINGS;

/** The model: the first `changing` numeric points walk (ints and floats alike), the rest are constant. */
function fleetModel(changing: number): unknown {
  const points: unknown[] = [];
  for (let i = 0; i < INTS; i++) {
    const walk = i < Math.ceil(changing / 2);
    points.push({ name: `i${i}`, type: 'int', sim: walk ? { fn: 'random_walk', min: 0, max: 10_000, step: 1 } : { fn: 'constant', value: i } });
  }
  for (let i = 0; i < FLOATS; i++) {
    const walk = i < Math.floor(changing / 2);
    points.push({ name: `f${i}`, type: 'float', decimals: 2, unit: i % 2 ? 'V' : 'W', sim: walk ? { fn: 'random_walk', min: 0, max: 500, step: 0.25 } : { fn: 'constant', value: i * 1.5 } });
  }
  for (let i = 0; i < STRINGS; i++) points.push({ name: `s${i}`, type: 'string', sim: { fn: 'constant', value: `state-${i}` } });
  return { points };
}

export interface FleetPorts {
  http: number;
  mqtt: number;
  ws: number;
}

export function fleetConfig(dataDir: string, ports: FleetPorts, o: FleetOptions): Record<string, unknown> {
  return {
    gateway: { id: 'bench', data_dir: dataDir, log_level: 'info' },
    http: { host: '127.0.0.1', port: ports.http },
    mqtt: { enable: o.mqtt, host: '127.0.0.1', port: ports.mqtt, ws_port: ports.ws, homeassistant: { enable: o.homeassistant } },
    history: { enable: o.history },
    shadow: { max_devices: Math.max(o.devices, 16), max_points: Math.max(o.devices * POINTS_PER_DEVICE, 1024) },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { fleet: fleetModel(o.changing) },
    devices: Array.from({ length: o.devices }, (_, i) => ({ id: `dev-${i}`, model: 'fleet', bus: 'sim', poll: '1s' })),
  };
}

export async function writeFleet(file: string, dataDir: string, ports: FleetPorts, o: FleetOptions): Promise<void> {
  await writeFile(file, JSON.stringify(fleetConfig(dataDir, ports, o)));
}

export function describeFleet(o: FleetOptions): string {
  const on = (b: boolean) => (b ? 'on' : 'off');
  return `${o.devices.toLocaleString('en')} devices × ${POINTS_PER_DEVICE} points (${INTS} int, ${FLOATS} float, ${STRINGS} string), ` +
    `${o.changing}% changing every second, simulator; history ${on(o.history)}, persistence 10 s, MQTT ${on(o.mqtt)}` +
    `${o.mqtt ? ' + 1 subscriber to shadowgate/# and homeassistant/#' : ''}, HA discovery ${on(o.homeassistant)}`;
}
