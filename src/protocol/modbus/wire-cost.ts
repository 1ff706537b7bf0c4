/**
 * Wire-time cost model of one read request, in milliseconds. The planner minimises the sum of these.
 *
 * RTU (11 bits per character: start + 8 data + parity or second stop + stop): request 8 bytes
 * (unit, fc, address, count, crc); response 5 bytes (unit, fc, byte count, crc) + data; a t3.5
 * silence after each frame (fixed 1.75 ms above 19200 baud, Modbus over serial line §2.5.1.1);
 * plus the slave's turnaround, which the wire does not show but every request pays.
 * TCP: MBAP framing; bytes are nearly free, the round trip dominates, so bridging almost always pays.
 */
import type { ModbusTable } from './address.js';
import { isBitTable } from './codec.js';

export interface CostModel {
  /** Fixed cost of one request/response pair, ms (framing bytes, silences, turnaround). */
  overheadMs: number;
  /** Cost of one data byte in the response, ms. */
  byteMs: number;
}

/** Bytes of response data for `count` registers or bits. */
export function dataBytes(table: ModbusTable, count: number): number {
  return isBitTable(table) ? Math.ceil(count / 8) : count * 2;
}

export function requestCostMs(model: CostModel, table: ModbusTable, count: number): number {
  return model.overheadMs + dataBytes(table, count) * model.byteMs;
}

/** Character time at a baud rate, ms (11 bits per character on the wire). */
export const charMs = (baud: number): number => 11_000 / baud;

/** t3.5 inter-frame silence, ms. */
export const silenceMs = (baud: number): number => (baud > 19_200 ? 1.75 : 3.5 * charMs(baud));

/**
 * Silence that ends an answer as a master reads it: t3.5 in the standard, but USB adapters hand bytes over in
 * bursts (an FTDI waits up to 16 ms), so never under 50 ms — still a sixth of the default timeout.
 */
export const answerGapMs = (baud: number): number => Math.max(50, Math.ceil(4 * silenceMs(baud)));

/**
 * RTU cost at a baud rate. `turnaroundMs` is the slave's reply latency: typical meters answer in
 * 2–10 ms; 3 ms keeps the model honest without making every gap look cheap.
 */
export function rtuCostModel(baud: number, turnaroundMs = 3): CostModel {
  const c = charMs(baud);
  return { overheadMs: (8 + 5) * c + 2 * silenceMs(baud) + turnaroundMs, byteMs: c };
}

/** TCP: ~1 ms round trip on a LAN against 100 Mbit/s bytes. */
export function tcpCostModel(rttMs = 1): CostModel {
  return { overheadMs: rttMs + (12 + 9) * 0.00008, byteMs: 0.00008 };
}
