/**
 * The hardware contract, types only: every driver (simulator, modbus-rtu, modbus-tcp, gpio) implements
 * Driver and is built by a DriverFactory; the composition root hands it a DataSink and never the shadow.
 * Values crossing this boundary are RAW device values (before scale/offset); the sink applies the model.
 */
import type { Clock } from '../core/clock.js';
import type { Lifecycle } from '../core/lifecycle.js';
import type { Value } from '../core/types.js';
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import type { Logger } from '../util/logger.js';
import type { BusDoctorIo } from '../protocol/modbus/doctor-types.js';

export type RawValue = number | string | boolean;

export interface PointWrite {
  name: string;
  /** Raw value to send (scale/offset already inverted, type already checked). */
  value: RawValue;
}

/** Where a driver reports what it read; the gateway turns it into shadow updates and offline accounting. */
export interface DataSink {
  /** Raw values read from one device in one request (applied atomically to the shadow). */
  data(deviceId: string, values: Record<string, RawValue>): void;
  /** One failed request to a device: feeds MayBeOffline when it is a device failure (core/errors isDeviceFailure). */
  failure(deviceId: string, error: Error): void;
}

export interface DriverContext {
  sink: DataSink;
  clock: Clock;
  log: Logger;
  /** Last value the shadow holds for a point after restore (a simulator resumes from it). */
  lastValue(deviceId: string, point: string): Value | null;
  /** Last control value written to a point (survives restarts). */
  lastWrite(deviceId: string, point: string): Value | null;
}

/** start() opens ports, claims lines and starts polling (one bad device is reported via sink.failure, not thrown). */
export interface Driver extends Lifecycle {
  readonly busId: string;
  /**
   * Live reconfiguration: the bus's devices from now on. A device passed as the same object as before is
   * left alone (its polls keep their rhythm); new ones start polling, missing ones stop. Absent: the
   * gateway restarts the whole bus for a device change.
   */
  setDevices?(devices: readonly ResolvedDevice[]): Promise<void>;
  /**
   * One read of every readable point of a device that need not be configured yet (the console's "test
   * read" before saving), through the running bus. Raw values by point; points that failed are absent and
   * named in `errors`.
   */
  probe?(device: ResolvedDevice): Promise<{ values: Record<string, RawValue>; errors: Record<string, string> }>;
  /** Unit ids answering on this bus (Modbus), through the running bus's own queue. */
  scan?(from: number, to: number): Promise<number[]>;
  /** The bus doctor's line through this bus's own queue, between its polls (Modbus); its settings are the bus's. */
  doctorIo?(): BusDoctorIo;
  /**
   * A real read of these points now (readPoint, rule-9 read-back). Resolves with raw values and does NOT
   * report them to the sink itself: the caller does. Absent when the driver cannot read actively.
   */
  read?(deviceId: string, points: readonly string[]): Promise<Record<string, RawValue>>;
  /**
   * Checks, without sending anything, that the device can take these raw values (encoding range, 0/1 of
   * a line, an output's direction); throws INVALID_VALUE or POINT_READONLY naming the point. The pipeline
   * calls it before it stores the write value, so a refused value leaves the shadow untouched.
   */
  check?(deviceId: string, values: readonly PointWrite[]): void;
  /** Sends the writes (one batch, contiguous registers as one request where the protocol allows). */
  write(deviceId: string, values: readonly PointWrite[]): Promise<void>;
  /** Raw register access for the Modbus server (Modbus drivers only). */
  readonly raw?: RawModbusAccess;
  /** Driver metrics for health/stats (requests, timeouts, RTT, queue depth, …). */
  stats?(): Record<string, unknown>;
}

/** One request a Modbus server forwards as it came (the same shapes as the wire's). */
export type RawRequest =
  | { fc: 1 | 2 | 3 | 4; address: number; count: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; values: boolean[] }
  | { fc: 16; address: number; values: number[] };

/**
 * Raw register access to a Modbus bus's devices for the Modbus server (the "front door"): reads answered
 * from the image of the last poll when young enough, else through the bus owner's queue; writes sent once.
 * Errors are GatewayErrors; a device's exception answer carries its code as `exception`.
 */
export interface RawModbusAccess {
  /** Whether this bus serves the device. */
  has(deviceId: string): boolean;
  /** The range from the last poll when every register is younger than `maxAgeMs` and of one cycle; else null. */
  peek(deviceId: string, req: Extract<RawRequest, { count: number }>, maxAgeMs: number): number[] | boolean[] | null;
  /** `hit`: answered from the image without a frame on the bus. */
  read(deviceId: string, req: Extract<RawRequest, { count: number }>, maxAgeMs: number): Promise<{ data: number[] | boolean[]; hit: boolean }>;
  /** Sent exactly once (never retried); resolves when the device confirmed it. */
  write(deviceId: string, req: Exclude<RawRequest, { count: number }>): Promise<void>;
  /** Online (answering: not backed off as dead) and the age of its newest raw read, ms (null: none yet). */
  state(deviceId: string): { online: boolean; ageMs: number | null };
}

export type DriverFactory = (bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext) => Driver;
