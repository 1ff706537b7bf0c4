/**
 * The bus doctor on a running gateway (`POST /api/v1/buses/<id>/doctor`): one run per bus at a time, started
 * at once and followed by its progress; the last run's report is kept until the next run of that bus. At the
 * bus's own settings the requests go through the bus's own queue between its polls (drivers/modbus/doctor/
 * bus-io.ts). Other serial settings, or `auto`, search the line: the doctor takes the line from the bus (its
 * driver stops, its port closes), opens the port itself at each setting it tries, and gives the line back (the
 * driver starts at its configured settings) however the run ends.
 */
import { randomUUID } from 'node:crypto';
import type { BusConfig, ModbusRtuBusConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { GatewayError } from '../core/errors.js';
import type { OwnedIo } from '../drivers/modbus/doctor/doctor.js';
import { candidateSettings } from '../drivers/modbus/doctor/settings.js';
import type { BusDoctorOptions } from '../api/context.js';
import type { DoctorIo, DoctorOptions, DoctorProgress, DoctorReport, LineSettings } from '../protocol/modbus/doctor-types.js';
import type { Driver } from '../drivers/types.js';
import type { Logger } from '../util/logger.js';
import { takenLine } from './doctor-taken-line.js';

/** What a run talks through: the bus's queue at its own settings (`line` null on Modbus TCP), or an opener on its port. */
export type DoctorRunLink =
  | { io: DoctorIo; line: LineSettings | null }
  | { open: (settings: LineSettings) => Promise<OwnedIo>; first: LineSettings };

/** Runs the doctor over `link` (runDoctor of drivers/modbus/doctor/doctor.ts, handed in by the composition root). */
export type DoctorRun = (link: DoctorRunLink, options: DoctorOptions, onProgress: (p: DoctorProgress) => void) => Promise<DoctorReport>;

/** A bus's serial settings in the running config, echo included. */
export interface BusLine {
  baud_rate: number;
  parity: LineSettings['parity'];
  stop_bits: 1 | 2;
  echo: boolean | 'auto';
}

/** A run as `GET /api/v1/buses/<id>/doctor` shows it. */
export interface DoctorJob {
  id: string;
  bus: string;
  state: 'running' | 'done' | 'failed';
  /** ISO 8601 wall time. */
  started_at: string;
  finished_at: string | null;
  /** The options the run uses: the bus's own settings in place of those left out, `auto` where it searches. */
  options: {
    baud: number | 'auto' | null; parity: LineSettings['parity'] | 'auto' | null; stop_bits: 1 | 2 | 'auto' | null;
    from: number; to: number; listen: number;
  };
  /** The run has the line to itself (a settings search): the bus's devices are not polled until it ends. */
  takes_line: boolean;
  /** The bus's settings in the running config as they are now (null on Modbus TCP): what to compare the report's line with. */
  bus_line: BusLine | null;
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
  /** Stops the bus's driver (its port closed); resolves with what starts it again at its configured settings. */
  takeLine: (busId: string) => Promise<() => Promise<void>>;
  /** Opens a serial port at one setting (drivers/modbus/doctor/serial-io.ts). */
  openSerial: (path: string, settings: LineSettings) => Promise<OwnedIo>;
  /** Listens on a serial port without sending (drivers/modbus/doctor/listen.ts listenReport). */
  listen: (path: string, candidates: LineSettings[], seconds: number, onProgress: (p: DoctorProgress) => void, signal: AbortSignal) => Promise<DoctorReport>;
  clock: Clock;
  log: Logger;
}

/** How long stop() waits for a run to notice it was stopped (one request in flight, at most a timeout). */
const STOP_WAIT_MS = 5000;

export class DoctorService {
  readonly name = 'doctor';
  private readonly jobs = new Map<string, DoctorJob>();
  private readonly running = new Map<string, { stop: () => void | Promise<void>; done: Promise<void> }>();

  constructor(private readonly deps: DoctorServiceDeps) {}

  async start(): Promise<void> {}

  /** Stops every run: its next request fails, and the run ends failed ("the bus doctor was stopped"); a taken line is given back. */
  async stop(): Promise<void> {
    const runs = [...this.running.values()];
    for (const r of runs) void r.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((r) => r.done)), new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** The bus's last or current run, or null when none was started since the gateway started. */
  status(busId: string): DoctorJob | null {
    const bus = this.bus(busId);
    const job = this.jobs.get(busId);
    return job ? { ...job, bus_line: busLine(bus) } : null;
  }

  /** Starts a run on a running Modbus bus; refused while one runs there. */
  begin(busId: string, options: BusDoctorOptions): DoctorJob {
    const bus = this.bus(busId);
    if (bus.driver !== 'modbus-rtu' && bus.driver !== 'modbus-tcp') {
      throw new DoctorRefused(400, `bus ${busId} is a ${bus.driver} bus: the doctor speaks Modbus (modbus-rtu or modbus-tcp)`);
    }
    const current = this.jobs.get(busId);
    if (current?.state === 'running') {
      throw new DoctorRefused(409, `the bus doctor is already running on bus ${busId} (started ${current.started_at}, job ${current.id}): wait for it to finish`);
    }
    if (bus.driver === 'modbus-tcp') {
      const field = options.baud !== 'own' ? 'baud' : options.parity !== 'own' ? 'parity' : options.stopBits !== 'own' ? 'stop_bits' : null;
      if (field) throw new DoctorRefused(400, `${field}: bus ${busId} is Modbus TCP, which has no serial settings`);
    }
    if (bus.driver === 'modbus-tcp' && options.listenS > 0) throw new DoctorRefused(400, `listen: bus ${busId} is Modbus TCP, which has no line to listen to`);
    const driver = this.deps.drivers.get(busId);
    if (!driver?.doctorIo) throw new DoctorRefused(409, `bus ${busId} is not running`);
    const rtu = bus.driver === 'modbus-rtu' ? (bus as ModbusRtuBusConfig) : null;
    const other = <T>(asked: 'own' | 'auto' | T, own: T): boolean => asked !== 'own' && asked !== own;
    // Listening takes the line too: with the bus's own polls going on, they are what it would hear.
    const listen = rtu !== null && options.listenS > 0;
    const search = rtu !== null && (other(options.baud, rtu.baud_rate) || other(options.parity, rtu.parity) || other(options.stopBits, rtu.stop_bits));
    // A search does not know the fields left out either: they are searched too; without one, they are the bus's.
    const pick = <T>(asked: 'own' | 'auto' | T, own: T | undefined): 'auto' | T => (asked !== 'own' ? asked : search || own === undefined ? 'auto' : own);
    const used: DoctorOptions = {
      ...options, baud: pick(options.baud, rtu?.baud_rate), parity: pick(options.parity, rtu?.parity), stopBits: pick(options.stopBits, rtu?.stop_bits),
    };
    if (search && rtu.rs485?.mode === 'gpio') {
      // The search opens the port itself: nothing would drive the transceiver's DE pin, so nothing would be sent.
      throw new DoctorRefused(400, `baud: bus ${busId} drives its transceiver through a DE pin (rs485 "gpio"), which the settings search cannot; it runs at its own settings only`);
    }
    const job: DoctorJob = {
      id: randomUUID(), bus: busId, state: 'running', started_at: new Date(this.deps.clock.now()).toISOString(), finished_at: null,
      options: {
        baud: rtu ? used.baud : null, parity: rtu ? used.parity : null, stop_bits: rtu ? used.stopBits : null,
        from: options.from, to: options.to, listen: options.listenS,
      },
      takes_line: search || listen, bus_line: busLine(bus), progress: null, report: null, error: null,
    };
    this.jobs.set(busId, job);
    const log = this.deps.log.child({ bus: busId, job: job.id });
    log.info({ options: job.options, takesLine: job.takes_line }, listen ? 'bus doctor started: listening to the line, the bus is stopped meanwhile'
      : search ? 'bus doctor started: searching the line settings, the bus is stopped meanwhile' : 'bus doctor started');
    const progress = (p: DoctorProgress): void => void (job.progress = p);
    let stop: () => void | Promise<void>;
    let run: Promise<DoctorReport>;
    if (listen) {
      const abort = new AbortController();
      stop = () => abort.abort();
      run = this.searching(busId, () => this.deps.listen(rtu.port, candidateSettings(used, ownLine(rtu)), options.listenS, progress, abort.signal), log);
    } else if (search) {
      const line = takenLine(rtu.port, this.deps.openSerial);
      stop = () => line.abort();
      run = this.searching(busId, () => this.deps.run({ open: line.open, first: ownLine(rtu) }, used, progress), log);
    } else {
      const io = driver.doctorIo();
      stop = () => io.close();
      run = this.deps.run({ io, line: rtu && ownLine(rtu) }, used, progress);
    }
    const done = run.then((report) => {
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
    this.running.set(busId, { stop, done });
    return job;
  }

  /** `run` with the bus's driver stopped; the driver starts again at its configured settings however the run ends. */
  private async searching(busId: string, run: () => Promise<DoctorReport>, log: Logger): Promise<DoctorReport> {
    const giveBack = await this.deps.takeLine(busId);
    try {
      return await run();
    } finally {
      await giveBack().catch((err: unknown) => log.error({ err }, 'the bus did not start again after the bus doctor'));
      log.info('bus doctor gave the line back to the bus');
    }
  }

  private bus(busId: string): BusConfig {
    const bus = this.deps.buses().find((b) => b.id === busId);
    if (!bus) throw new DoctorRefused(404, `unknown bus: ${busId}`);
    return bus;
  }
}

/** The schema allows 7 data bits for old devices; the doctor's frames are 8-bit RTU. */
const ownLine = (bus: ModbusRtuBusConfig): LineSettings => ({ baud_rate: bus.baud_rate, parity: bus.parity, data_bits: 8, stop_bits: bus.stop_bits });

function busLine(bus: BusConfig): BusLine | null {
  if (bus.driver !== 'modbus-rtu') return null;
  const rtu = bus as ModbusRtuBusConfig;
  return { baud_rate: rtu.baud_rate, parity: rtu.parity, stop_bits: rtu.stop_bits, echo: rtu.echo };
}
