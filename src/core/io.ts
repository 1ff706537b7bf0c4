/** What the API and exporters call to talk to devices; implemented by src/io/device-io.ts. Types only. */
import type { Value } from './types.js';

export interface WriteRequest {
  name: string;
  value: unknown;
}

export interface DeviceIO {
  /** Real read through the driver, then the shadow's value (null when offline or expired). */
  readPoint(id: string, point: string): Promise<Value | null>;
  /** Validates the whole batch first (nothing is sent on any error), writes, then reads back (rule 9). */
  writePoints(id: string, values: readonly WriteRequest[]): Promise<void>;
}
