/**
 * The bus doctor on a running gateway (`POST /api/v1/buses/<id>/doctor`): one run per bus at a time, started
 * at once and followed by its progress; the last run's report is kept until the next run of that bus. The
 * requests go through the bus's own queue between its polls (drivers/modbus/doctor/bus-io.ts), at the bus's
 * own settings: no settings search on a configured bus (the CLI's `shadowgate doctor` on a free port has one).
 */
import { randomUUID } from 'node:crypto';
import type { BusConfig, ModbusRtuBusConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { GatewayError } from '../core/errors.js';
import type { BusDoctorIo } from '../drivers/modbus/doctor/bus-io.js';
import type { DoctorOptions, DoctorProgress, DoctorReport, LineSettings } from '../drivers/modbus/doctor/types.js';
import type { Driver } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';

/** Runs the doctor over `io` (runDoctor of drivers/modbus/doctor/doctor.ts, handed in by the composition root). */
export type DoctorRun = (
  io: BusDoctorIo, line: LineSettings | null, options: DoctorOptions, onProgress: (p: DoctorProgress) => void,
) => Promise<DoctorReport>;

/** A run as `GET /api/v1/buses/<id>/doctor` shows it. */
export interface DoctorJob {
  id: string;
  bus: string;
  state: 'running' | 'done' | 'failed';
  /** ISO 8601 wall time. */
  started_at: string;
  finished_at: string | null;
  /** The options the run uses, the bus's own settings in place of `auto`. */
  options: { baud: number | null; parity: LineSettings['parity'] | null; stop_bits: 1 | 2 | null; from: number; to: number; listen: number };
  progress: DoctorProgress | null;
  report: DoctorReport | null;
  error: string | null;
}

/** Why a run was not started; `status` is the HTTP status the REST layer answers with. */
export class DoctorRefused extends GatewayError {
  constructor(readonly status: 400 | 404 | 409, message: string) {
    super(status === 409 ? 'BUS_BUSY' : 'BAD_REQUEST', message);
  }
}

export interface DoctorServiceDeps {
  drivers: ReadonlyMap<string, Driver>;
  /** The running config's buses. */
  buses: () => readonly BusConfig[];
  run: DoctorRun;
  clock: Clock;
  log: Logger;
}

/** How long stop() waits for a run to notice it was stopped (one request in flight, at most a timeout). */
const STOP_WAIT_MS = 5000;

export class DoctorService {
  readonly name = 'doctor';
  private readonly jobs = new Map<string, DoctorJob>();
  private readonly running = new Map<string, { io: BusDoctorIo; done: Promise<void> }>();

  constructor(private readonly deps: DoctorServiceDeps) {}

  async start(): Promise<void> {}

  /** Stops every run: its next request fails, and the run ends failed ("the bus doctor was stopped"). */
  async stop(): Promise<void> {
    const runs = [...this.running.values()];
    for (const r of runs) r.io.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((r) => r.done)), new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** The bus's last or current run, or null when none was started since the gateway started. */
  status(busId: string): DoctorJob | null {
    this.bus(busId);
    return this.jobs.get(busId) ?? null;
  }

  /** Starts a run on a running Modbus bus; refused while one runs there. */
  begin(busId: string, options: DoctorOptions): DoctorJob {
    const bus = this.bus(busId);
    if (bus.driver !== 'modbus-rtu' && bus.driver !== 'modbus-tcp') {
      throw new DoctorRefused(400, `bus ${busId} is a ${bus.driver} bus: the doctor speaks Modbus (modbus-rtu or modbus-tcp)`);
    }
    const current = this.jobs.get(busId);
    if (current?.state === 'running') {
      throw new DoctorRefused(409, `the bus doctor is already running on bus ${busId} (started ${current.started_at}, job ${current.id}): wait for it to finish`);
    }
    const driver = this.deps.drivers.get(busId);
    if (!driver?.doctorIo) throw new DoctorRefused(409, `bus ${busId} is not running`);
    const line = bus.driver === 'modbus-rtu' ? lineOf(bus as ModbusRtuBusConfig, options) : null;
    if (bus.driver === 'modbus-tcp' && (options.baud !== 'auto' || options.parity !== 'auto' || options.stopBits !== 'auto')) {
      throw new DoctorRefused(400, `${options.baud !== 'auto' ? 'baud' : options.parity !== 'auto' ? 'parity' : 'stop_bits'}: bus ${busId} is Modbus TCP, which has no serial settings`);
    }
    if (options.listenS > 0) {
      // Listening means sending nothing for that long: on a running bus the gateway's own polls are what it would hear.
      throw new DoctorRefused(400, `listen: bus ${busId} is polled by the gateway, so there is no quiet line to listen to; stop the bus and run shadowgate doctor --listen on its port`);
    }
    const used: DoctorOptions = line ? { ...options, baud: line.baud_rate, parity: line.parity, stopBits: line.stop_bits } : options;
    const job: DoctorJob = {
      id: randomUUID(), bus: busId, state: 'running', started_at: new Date(this.deps.clock.now()).toISOString(), finished_at: null,
      options: {
        baud: line?.baud_rate ?? null, parity: line?.parity ?? null, stop_bits: line?.stop_bits ?? null,
        from: options.from, to: options.to, listen: options.listenS,
      },
      progress: null, report: null, error: null,
    };
    const io = driver.doctorIo();
    this.jobs.set(busId, job);
    const log = this.deps.log.child({ bus: busId, job: job.id });
    log.info({ options: job.options }, 'bus doctor started');
    const done = this.deps.run(io, line, used, (p) => (job.progress = p)).then((report) => {
      job.report = report;
      job.state = 'done';
      log.info({ units: report.units.length, sentBytes: report.sent_bytes, ms: report.elapsed_ms }, 'bus doctor done');
    }, (err: unknown) => {
      job.state = 'failed';
      // A GatewayError says what happened (the bus stopped, the link went down); anything else is logged only.
      job.error = err instanceof GatewayError ? err.message : 'internal error';
      log.warn({ err }, 'bus doctor failed');
    }).finally(() => {
      job.finished_at = new Date(this.deps.clock.now()).toISOString();
      this.running.delete(busId);
    });
    this.running.set(busId, { io, done });
    return job;
  }

  private bus(busId: string): BusConfig {
    const bus = this.deps.buses().find((b) => b.id === busId);
    if (!bus) throw new DoctorRefused(404, `unknown bus: ${busId}`);
    return bus;
  }
}

/**
 * The bus's own settings: a running bus is not switched to others (its devices would stop answering), so a
 * setting asked for that is not the bus's is refused, naming the field.
 */
function lineOf(bus: ModbusRtuBusConfig, options: DoctorOptions): LineSettings {
  const refuse = (field: string, asked: unknown, own: unknown): never => {
    throw new DoctorRefused(400, `${field}: bus ${bus.id} runs at ${String(own)}, not ${String(asked)}; a running bus is checked at its own settings (leave ${field} out or "auto"; to try others, stop the bus and run shadowgate doctor on its port)`);
  };
  if (options.baud !== 'auto' && options.baud !== bus.baud_rate) refuse('baud', options.baud, bus.baud_rate);
  if (options.parity !== 'auto' && options.parity !== bus.parity) refuse('parity', options.parity, bus.parity);
  if (options.stopBits !== 'auto' && options.stopBits !== bus.stop_bits) refuse('stop_bits', options.stopBits, bus.stop_bits);
  // The schema allows 7 data bits for old devices; the doctor's frames are 8-bit RTU.
  return { baud_rate: bus.baud_rate, parity: bus.parity, data_bits: 8, stop_bits: bus.stop_bits };
}
