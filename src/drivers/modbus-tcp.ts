/** modbus-tcp: Modbus TCP to a PLC or an RS-485/TCP gateway, DESIGN §6. */
import type { BusConfig, ResolvedDevice } from '../config/types.js';
import { tcpCostModel } from '../protocol/modbus/wire-cost.js';
import { configError, createModbusDriver, maxGapOf, num, type ModbusTuning } from './modbus/driver.js';
import { TcpTransport } from './modbus/transport.js';
import type { Driver, DriverContext, DriverFactory } from './types.js';

export function createModbusTcpDriverWith(bus: BusConfig, devices: readonly ResolvedDevice[], ctx: DriverContext, tuning?: ModbusTuning): Driver {
  const host = bus['host'];
  if (typeof host !== 'string' || host === '') throw configError(bus, 'modbus-tcp needs "host"');
  const timeoutMs = num(bus, 'timeout', 1000);
  return createModbusDriver({
    bus, devices, ctx, tuning,
    // One connection, one request at a time: most TCP endpoints are RS-485 gateways with a serial
    // line behind them, and many PLCs answer only one transaction at a time anyway.
    transport: new TcpTransport(host, num(bus, 'port', 502), timeoutMs),
    plan: { cost: tcpCostModel(), maxRegisters: num(bus, 'max_registers', 125), maxGap: maxGapOf(bus) },
    retries: num(bus, 'retries', 1),
    owner: { timeoutMs, silenceMs: 0, drainMaxMs: 0, reopenAfterTimeouts: 3 },
  });
}

export const createModbusTcpDriver: DriverFactory = (bus, devices, ctx) => createModbusTcpDriverWith(bus, devices, ctx);
