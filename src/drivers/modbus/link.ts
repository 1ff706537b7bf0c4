/**
 * One Modbus link set-up from a bus config, shared by the driver factories and the one-off CLI
 * commands: transport, plan options and bus-owner timing (t3.5 silence, drain, reopen) come from here only.
 */
import type { BusConfig } from '../../config/types.js';
import { isGatewayError } from '../../core/errors.js';
import { charMs, rtuCostModel, silenceMs, tcpCostModel } from '../../protocol/modbus/wire-cost.js';
import type { PlanOptions } from '../../protocol/modbus/planner.js';
import { PRIORITY, type BusOwner, type BusOwnerOptions } from './bus-owner.js';
import { configError, maxGapOf, num } from './options.js';
import { RtuTransport, TcpTransport, type ModbusTransport, type RtuOptions } from './transport.js';

export interface ModbusLink {
  transport: ModbusTransport;
  plan: PlanOptions;
  owner: Omit<BusOwnerOptions, 'busId' | 'log' | 'reopenMinMs' | 'reopenMaxMs'>;
  retries: number;
}

export function rtuOptions(bus: BusConfig): RtuOptions {
  const path = bus['port'];
  if (typeof path !== 'string' || path === '') throw configError(bus, 'modbus-rtu needs "port" (e.g. /dev/ttyUSB0 or /dev/serial/by-id/...)');
  const parity = bus['parity'];
  return {
    path,
    baudRate: num(bus, 'baud_rate', 9600),
    parity: parity === 'even' || parity === 'odd' ? parity : 'none',
    dataBits: num(bus, 'data_bits', 8) as RtuOptions['dataBits'],
    stopBits: num(bus, 'stop_bits', 1) === 2 ? 2 : 1,
  };
}

/** The link of a modbus-rtu or modbus-tcp bus; a config error for any other driver. */
export function modbusLink(bus: BusConfig): ModbusLink {
  const retries = num(bus, 'retries', 1);
  if (bus.driver === 'modbus-rtu') {
    const serial = rtuOptions(bus);
    const baud = serial.baudRate;
    return {
      transport: new RtuTransport(serial),
      plan: { cost: rtuCostModel(baud), maxRegisters: num(bus, 'max_registers', 125), maxGap: maxGapOf(bus) },
      retries,
      owner: {
        timeoutMs: num(bus, 'timeout', 300),
        silenceMs: silenceMs(baud),
        // The longest frame (256 bytes) plus slack: no late answer can arrive after this.
        drainMaxMs: Math.ceil(256 * charMs(baud)) + 20,
        reopenAfterTimeouts: 5,
      },
    };
  }
  if (bus.driver === 'modbus-tcp') {
    const host = bus['host'];
    if (typeof host !== 'string' || host === '') throw configError(bus, 'modbus-tcp needs "host"');
    const timeoutMs = num(bus, 'timeout', 1000);
    return {
      // One connection, one request at a time: most TCP endpoints are RS-485 gateways with a serial
      // line behind them, and many PLCs answer only one transaction at a time anyway.
      transport: new TcpTransport(host, num(bus, 'port', 502), timeoutMs),
      plan: { cost: tcpCostModel(), maxRegisters: num(bus, 'max_registers', 125), maxGap: maxGapOf(bus) },
      retries,
      owner: { timeoutMs, silenceMs: 0, drainMaxMs: 0, reopenAfterTimeouts: 3 },
    };
  }
  throw configError(bus, `is a ${bus.driver} bus, not modbus-rtu or modbus-tcp`);
}

/**
 * Unit ids that answer a one-register holding read between `from` and `to`, in order, through the
 * bus's queue (so a scan on a running bus waits its turn between polls). Any answer — data or a Modbus
 * exception — proves a device owns the id. `onUnit` hears each find as it happens.
 */
export async function scanUnits(
  bus: BusOwner, from: number, to: number, onUnit: (unit: number, how: string) => void = () => {},
): Promise<number[]> {
  const found: number[] = [];
  for (let unit = from; unit <= to; unit++) {
    try {
      await bus.enqueue(PRIORITY.read, (io) => io.request(unit, { fc: 3, address: 0, count: 1 }));
      found.push(unit);
      onUnit(unit, 'answered');
    } catch (err) {
      if (isGatewayError(err) && err.code === 'MODBUS_EXCEPTION') {
        found.push(unit);
        onUnit(unit, `answered with ${err.message.replace(/ from unit \d+$/, '')}`);
      }
    }
  }
  return found;
}
