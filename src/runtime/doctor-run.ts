/**
 * The doctor's core (drivers/modbus/doctor/doctor.ts) on a configured bus: the line as it is (through the bus's
 * queue), or the line taken from the bus and opened by the doctor at each setting it tries; the running
 * config's models (library and inline) as the candidates.
 */
import type { ModelConfig } from '../config/types.js';
import { runDoctor, type DoctorLink } from '../drivers/modbus/doctor/doctor.js';
import type { LineSettings } from '../protocol/modbus/doctor-types.js';
import type { DoctorRun } from './doctor-service.js';

/**
 * A Modbus TCP bus has no serial settings; the core times its waits from a setting, which the bus's own
 * timeout replaces anyway (doctor/bus-io.ts), so any will do. The report's `line` is then null: there is none.
 */
const TCP_NOMINAL: LineSettings = { baud_rate: 115_200, parity: 'none', data_bits: 8, stop_bits: 1 };

export function busDoctorRun(models: () => readonly ModelConfig[]): DoctorRun {
  return async (link, options, onProgress) => {
    if ('open' in link) return runDoctor(link, options, models(), onProgress);
    const asIs: DoctorLink = { io: link.io, settings: link.line ?? TCP_NOMINAL };
    const report = await runDoctor(asIs, options, models(), onProgress);
    return link.line ? report : { ...report, line: null };
  };
}
