/** modbus-rtu: Modbus RTU over a serial port (RS-485 HAT or USB adapter), DESIGN §6. */
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import { charMs, rtuCostModel, silenceMs } from '../protocol/modbus/wire-cost.js';
import { configError, createModbusDriver, maxGapOf, num, type ModbusTuning } from './modbus/driver.js';
import { RtuTransport, type RtuOptions } from './modbus/transport.js';
import type { Driver, DriverContext, DriverFactory } from './types.js';

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

export function createModbusRtuDriverWith(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext, tuning?: ModbusTuning): Driver {
  const serial = rtuOptions(bus);
  const baud = serial.baudRate;
  return createModbusDriver({
    bus, devices, ctx, tuning,
    transport: new RtuTransport(serial),
    plan: { cost: rtuCostModel(baud), maxRegisters: num(bus, 'max_registers', 125), maxGap: maxGapOf(bus) },
    retries: num(bus, 'retries', 1),
    owner: {
      timeoutMs: num(bus, 'timeout', 300),
      silenceMs: silenceMs(baud),
      // The longest frame (256 bytes) plus slack: no late answer can arrive after this.
      drainMaxMs: Math.ceil(256 * charMs(baud)) + 20,
      reopenAfterTimeouts: 5,
    },
  });
}

export const createModbusRtuDriver: DriverFactory = (bus, devices, ctx) => createModbusRtuDriverWith(bus, devices, ctx);
