/**
 * The serial port of a bus the doctor took for a settings search, opened at each setting it tries, and stopped
 * from outside when the gateway stops: the next open or request fails and the port open now closes, so the run
 * ends at once and the bus gets its line back.
 */
import { GatewayError } from '../core/errors.js';
import type { OwnedIo } from '../drivers/modbus/doctor/doctor.js';
import type { LineSettings } from '../protocol/modbus/doctor-types.js';
import { describeSetting } from '../drivers/modbus/doctor/settings.js';

export interface TakenLine {
  open(settings: LineSettings): Promise<OwnedIo>;
  /** Stops the run's use of the port: the io open now is closed, later opens and requests fail. */
  abort(): Promise<void>;
}

const stopped = (): GatewayError => new GatewayError('DRIVER_ERROR', 'the bus doctor was stopped');

export function takenLine(path: string, openSerial: (path: string, settings: LineSettings) => Promise<OwnedIo>): TakenLine {
  let aborted = false;
  let current: OwnedIo | null = null;
  return {
    async open(settings) {
      if (aborted) throw stopped();
      const io = await openSerial(path, settings).catch((err: unknown) => {
        // The port's own words (missing, in use by another program), as the CLI says them.
        throw new GatewayError('DRIVER_ERROR', `cannot open ${path} at ${describeSetting(settings)}: ${err instanceof Error ? err.message : String(err)}`);
      });
      if (aborted) {
        await io.close();
        throw stopped();
      }
      current = io;
      return {
        ask: (unit, pdu, timeoutMs) => (aborted ? Promise.reject(stopped()) : io.ask(unit, pdu, timeoutMs)),
        sentBytes: () => io.sentBytes(),
        echo: () => io.echo?.() ?? false,
        lateUnits: () => io.lateUnits?.() ?? [],
        close: async () => {
          if (current === io) current = null;
          await io.close();
        },
      };
    },
    async abort() {
      aborted = true;
      const io = current;
      current = null;
      await io?.close();
    },
  };
}
