/**
 * The gpio part of config validation, pure: the config loader calls it after the schema pass and
 * prints each `path: message` with the rest (startup then exits 2 before touching any hardware).
 */
import type { GatewayConfig, PointConfig, ResolvedDevice } from '../../config/types.js';
import { resolveConfigBoard, type BoardDefinition, type BoardUart } from './board.js';
import { PI_40PIN_HEADER, describePin } from './header.js';
import { planLines } from './plan.js';

export interface GpioCheckOptions {
  /** Serial ports of the configured modbus-rtu buses: a UART on the header claims its TX/RX pins. */
  serialPorts?: readonly string[];
  /** DE pins of modbus-rtu buses in rs485 "gpio" mode (BCM, with the bus's id): the bus drives them around each frame. */
  dePins?: readonly { pin: number; bus: string }[];
  /** How a device is named in paths; default `devices.<id>`. */
  devicePath?: (deviceId: string) => string;
}

/**
 * Without a board the primary UART is still known: serial0/ttyAMA0/ttyS0 sit on GPIO 14/15 (header
 * pins 8/10) on every 40-pin Pi once enabled for RS-485.
 */
const PRIMARY_UART: BoardUart = {
  name: 'uart0', device: '/dev/ttyAMA0', aliases: ['/dev/serial0', '/dev/ttyS0'], tx: 14, rx: 15, config_txt: [],
};

function uartFor(port: string, board?: BoardDefinition): BoardUart | undefined {
  const uarts = board?.uarts ?? [PRIMARY_UART];
  return uarts.find((u) => u.device === port || (u.aliases ?? []).includes(port));
}

/**
 * Problems with the gpio devices (pass every device on a gpio bus, all buses together): bad or unknown
 * pins, a pin claimed twice (by two points or by a configured UART), options that do not fit the
 * direction. `board` narrows the pin range and names the UARTs; without it the 40-pin header is used.
 */
export function checkGpioConfig(devices: readonly ResolvedDevice[], board?: BoardDefinition, options: GpioCheckOptions = {}): string[] {
  const devicePath = options.devicePath ?? ((id: string) => `devices.${id}`);
  const pointPath = (deviceId: string, point: string, key: string): string =>
    `${devicePath(deviceId)}.points.${point}.${key}`;
  const header = board?.header ?? PI_40PIN_HEADER;
  const { lines, problems } = planLines(devices, board);
  const out = problems.map((p) => `${pointPath(p.deviceId, p.point, p.key)}: ${p.message}`);

  const claims = new Map<number, string>();
  for (const port of options.serialPorts ?? []) {
    const uart = uartFor(port, board);
    if (!uart) continue;
    for (const pin of [uart.tx, uart.rx]) claims.set(pin, `the UART ${uart.name} of bus port ${port}`);
  }
  // A DE pin toggled by a bus around every frame would fight a point's writes, or flood an input with edges.
  for (const { pin, bus } of options.dePins ?? []) if (!claims.has(pin)) claims.set(pin, `the DE pin (rs485 "gpio") of bus "${bus}"`);
  for (const line of lines) {
    const owner = claims.get(line.bcm);
    const here = `device ${line.deviceId} point ${line.point}`;
    if (owner !== undefined) {
      out.push(`${pointPath(line.deviceId, line.point, 'gpio.pin')}: ${describePin(line.bcm, header)} is already used by ${owner}`);
    } else {
      claims.set(line.bcm, here);
    }
  }
  return out;
}

/**
 * The whole gpio check on a validated config, in the shape of the loader's ConfigChecker hook
 * (src/config/checkers.ts): devices on gpio buses, `gateway.board`, and the serial ports of the
 * modbus-rtu buses. Devices naming an unknown bus or model are skipped (already reported). Never throws.
 */
export function gpioConfigChecker(config: GatewayConfig, boardsDir?: string): string[] {
  try {
    const gpioBuses = new Set(config.buses.filter((b) => b.driver === 'gpio').map((b) => b.id));
    if (gpioBuses.size === 0) return [];
    const { board, problems } = resolveConfigBoard(config.gateway.board, boardsDir);
    const rtuBuses = config.buses.filter((b) => b.driver === 'modbus-rtu');
    const serialPorts = rtuBuses.filter((b) => typeof b.port === 'string').map((b) => b.port as string);
    const dePins = rtuBuses.flatMap((b) => {
      const rs485 = b.rs485 as { mode?: string; de_pin?: unknown } | undefined;
      return rs485?.mode === 'gpio' && typeof rs485.de_pin === 'number' ? [{ pin: rs485.de_pin, bus: b.id }] : [];
    });
    const devices: ResolvedDevice[] = [];
    const paths = new Map<string, string>();
    config.devices.forEach((device, index) => {
      const model = Object.hasOwn(config.models, device.model) ? config.models[device.model] : undefined;
      if (!gpioBuses.has(device.bus) || !model || paths.has(device.id)) return;
      paths.set(device.id, `devices[${index}]`);
      const points = new Map<string, PointConfig>(model.points.map((p) => [p.name, p]));
      devices.push({ config: device, model, points, ttl: device.ttl ?? config.shadow.default_ttl });
    });
    return [...problems, ...checkGpioConfig(devices, board, {
      serialPorts,
      dePins,
      devicePath: (id) => paths.get(id) ?? `devices.${id}`,
    })];
  } catch (e) {
    return [`buses: gpio check failed: ${(e as Error).message}`];
  }
}
