/**
 * One Modbus link set-up from a bus config, shared by the driver factories and the one-off CLI
 * commands: transport, plan options and bus-owner timing (t3.5 silence, drain, reopen) come from here only.
 */
import type { BusConfig, ModbusRtuBusConfig, ModbusTcpBusConfig } from '../../config/types.js';
import { charMs, rtuCostModel, silenceMs, tcpCostModel } from '../../protocol/modbus/wire-cost.js';
import type { PlanOptions } from '../../protocol/modbus/planner.js';
import { PRIORITY, type BusOwner, type BusOwnerOptions } from './bus-owner.js';
import { GatewayError, isGatewayError } from '../../core/errors.js';
import { RtuTransport } from './rtu-transport.js';
import { TcpTransport } from './tcp-transport.js';
import type { ModbusTransport, RtuOptions } from './transport.js';

/**
 * Every value comes from the validated config: the schema is the one source of defaults (baud 9600,
 * timeout 300 ms on RTU / 1 s on TCP, …), so none is written again here.
 */
export interface ModbusLink {
  transport: ModbusTransport;
  plan: PlanOptions;
  owner: Omit<BusOwnerOptions, 'busId' | 'log' | 'reopenMinMs' | 'reopenMaxMs'>;
  retries: number;
}

const configError = (bus: BusConfig, message: string): GatewayError => new GatewayError('CONFIG_INVALID', `bus ${bus.id}: ${message}`);

export function rtuOptions(bus: ModbusRtuBusConfig): RtuOptions {
  return { path: bus.port, baudRate: bus.baud_rate, parity: bus.parity, dataBits: bus.data_bits, stopBits: bus.stop_bits, echo: bus.echo, ...rs485Of(bus) };
}

/** The bus option `rs485` as the link takes it (the schema filled its defaults). */
function rs485Of(bus: ModbusRtuBusConfig): Pick<RtuOptions, 'rs485'> {
  const rs485 = bus.rs485;
  if (!rs485) return {};
  if (rs485.mode === 'gpio') return { rs485: { mode: 'gpio', dePin: rs485.de_pin } };
  return { rs485: { mode: 'kernel', rtsOnSend: rs485.rts_on_send, delayBeforeSendUs: rs485.delay_before_send_us, delayAfterSendUs: rs485.delay_after_send_us } };
}

const maxGapOf = (bus: ModbusRtuBusConfig | ModbusTcpBusConfig): 'auto' | number => (typeof bus.max_gap === 'number' ? bus.max_gap : 'auto');

/** The link of a modbus-rtu or modbus-tcp bus (validated config); a config error for any other driver. */
export function modbusLink(config: BusConfig): ModbusLink {
  if (config.driver === 'modbus-rtu') {
    const bus = config as ModbusRtuBusConfig;
    if (typeof bus.port !== 'string' || bus.port === '') throw configError(bus, 'modbus-rtu needs "port" (e.g. /dev/ttyUSB0 or /dev/serial/by-id/...)');
    const baud = bus.baud_rate;
    return {
      transport: new RtuTransport(rtuOptions(bus)),
      plan: { cost: rtuCostModel(baud), maxRegisters: bus.max_registers, maxGap: maxGapOf(bus) },
      retries: bus.retries,
      owner: {
        timeoutMs: bus.timeout,
        silenceMs: silenceMs(baud),
        // The longest frame (256 bytes) plus slack: no late answer can arrive after this.
        drainMaxMs: Math.ceil(256 * charMs(baud)) + 20,
        reopenAfterTimeouts: 5,
      },
    };
  }
  if (config.driver === 'modbus-tcp') {
    const bus = config as ModbusTcpBusConfig;
    if (typeof bus.host !== 'string' || bus.host === '') throw configError(bus, 'modbus-tcp needs "host"');
    return {
      // One connection, one request at a time: most TCP endpoints are RS-485 gateways with a serial
      // line behind them, and many PLCs answer only one transaction at a time anyway.
      transport: new TcpTransport(bus.host, bus.port, bus.timeout),
      plan: { cost: tcpCostModel(), maxRegisters: bus.max_registers, maxGap: maxGapOf(bus) },
      retries: bus.retries,
      owner: { timeoutMs: bus.timeout, silenceMs: 0, drainMaxMs: 0, reopenAfterTimeouts: 3 },
    };
  }
  throw configError(config, `is a ${config.driver} bus, not modbus-rtu or modbus-tcp`);
}

/**
 * Unit ids that answer a one-register holding read between `from` and `to`, in order, through the
 * bus's queue (so a scan on a running bus waits its turn between polls). Any answer — data or a Modbus
 * exception — proves a device owns the id. The requests are scan probes (BusIo.probe), not counted as the
 * bus's timeouts. `onUnit` hears each find as it happens.
 */
export async function scanUnits(
  bus: BusOwner, from: number, to: number, onUnit: (unit: number, how: string) => void = () => {},
): Promise<number[]> {
  const found: number[] = [];
  for (let unit = from; unit <= to; unit++) {
    try {
      await bus.enqueue(PRIORITY.read, (io) => io.probe(unit, { fc: 3, address: 0, count: 1 }));
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
