/** The gateway the console tests run against: the simulator, the pymodbus rig on a pty, the whole model library. */
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { readActiveConfig } from '../../src/runtime/config-store.js';
import { silentLogger } from '../../src/util/logger.js';

export const rigModel = {
  manufacturer: 'test', description: 'A meter on the pymodbus rig',
  points: [
    { name: 'voltage', type: 'float', unit: 'V', modbus: { table: 'input', address: 0, data_type: 'float32' } },
    { name: 'unit_no', type: 'int', modbus: { table: 'holding', address: 24, data_type: 'uint16' } },
    { name: 'limit', type: 'float', access: 'RW', unit: 'A', modbus: { table: 'holding', address: 100, data_type: 'float32' } },
  ],
};

export function rawConfig(dir: string, port: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    gateway: { id: 'console', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    shadow: { persist_interval: '200ms' },
    // 500 ms per answer: the pymodbus slave answers in ~20 ms at rest, but beside a CPU hog a 150 ms timeout
    // lost unit 1 of a scan (found [2], not [1, 2]); the tests check what is found, not how fast.
    buses: [{ id: 'sim', driver: 'simulator' }, { id: 'rs485', driver: 'modbus-rtu', port, baud_rate: 9600, timeout: '500ms' }],
    models: {
      thermo: { description: 'simulated thermostat', points: [
        { name: 'temperature', type: 'float', unit: '°C', sim: { fn: 'sine', min: 18, max: 26, period: '20s' } },
        { name: 'setpoint', type: 'float', access: 'RW', unit: '°C', sim: { fn: 'constant', value: 21.5 } },
      ] },
      quiet: { points: [{ name: 'level', type: 'float', unit: 'mm', sim: { fn: 'constant', value: 1 } }] },
      'rig-meter': rigModel,
    },
    devices: [
      { id: 't1', model: 'thermo', bus: 'sim', poll: '200ms' },
      { id: 'slow', model: 'quiet', bus: 'sim', poll: '1h' },
      { id: 'm1', model: 'rig-meter', bus: 'rs485', unit_id: 1, poll: '500ms' },
    ],
    ...extra,
  };
}

/** Starts as `shadowgate run` does: the config applied from the console wins while the file is unchanged. */
export async function start(raw: Record<string, unknown>, fileText = JSON.stringify(raw), opts: { restart?: () => void } = {}): Promise<Gateway> {
  const active = await readActiveConfig(String((raw.gateway as { data_dir: string }).data_dir), fileText);
  const use = (active ?? raw) as Record<string, unknown>;
  return startGateway(validateConfig(use, { env: {} }), { log: silentLogger, raw: use, fileText, ...opts });
}
