/**
 * Checks across sections that JSON Schema cannot express: unique ids, devices pointing at existing buses and
 * models, each model's driver blocks fitting its device's bus, Modbus unit ids, export targets, capacity.
 * They run on whatever the schema left (possibly invalid), so every access is guarded.
 */
import { checkConsumerReads } from './persona-consumers.js';
import { checkPortOwners } from './port-owners.js';
import { isObj, type DriverBlock } from './model-checks.js';

type Obj = Record<string, unknown>;

/** The point driver block each bus driver reads. */
export const BLOCK_FOR_DRIVER: Record<string, DriverBlock> = {
  simulator: 'sim',
  'modbus-rtu': 'modbus',
  'modbus-tcp': 'modbus',
  gpio: 'gpio',
};

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const section = (cfg: Obj, key: string): Obj => (isObj(cfg[key]) ? cfg[key] : {});
const known = (names: Iterable<string>): string => {
  const all = [...names].sort();
  if (all.length === 0) return 'none defined';
  return all.length > 20 ? `known: ${all.slice(0, 20).join(', ')}, …` : `known: ${all.join(', ')}`;
};

/** Ids must be unique within their list: a second `sim` would make references ambiguous. */
function checkUniqueIds(items: unknown[], name: string, what: string, problems: string[]): void {
  const first = new Map<string, number>();
  items.forEach((item, i) => {
    if (!isObj(item) || typeof item.id !== 'string') return;
    const earlier = first.get(item.id);
    if (earlier !== undefined) problems.push(`${name}[${i}].id: duplicate ${what} id "${item.id}" (also ${name}[${earlier}])`);
    else first.set(item.id, i);
  });
}

function checkDevice(device: Obj, i: number, buses: Map<string, string>, models: ReadonlyMap<string, unknown>, problems: string[]): void {
  const at = (key: string): string => `devices[${i}].${key}`;
  const driver = typeof device.bus === 'string' ? buses.get(device.bus) : undefined;
  if (typeof device.bus === 'string' && driver === undefined) {
    problems.push(`${at('bus')}: unknown bus "${device.bus}" (${known(buses.keys())})`);
  }
  const model = typeof device.model === 'string' ? models.get(device.model) : undefined;
  if (typeof device.model === 'string' && model === undefined) {
    problems.push(`${at('model')}: unknown model "${device.model}" (${known(models.keys())})`);
  }
  if (Array.isArray(device.unlock_writes) && isObj(model)) {
    const guarded = new Set(list(model.points).filter((p): p is Obj => isObj(p) && p.guarded === true).map((p) => String(p.name)));
    for (const name of device.unlock_writes) {
      if (!guarded.has(String(name))) problems.push(`${at('unlock_writes')}: "${String(name)}" is not a guarded point of model "${String(device.model)}" (${known(guarded)})`);
    }
  }
  if (driver === undefined) return;
  if (driver.startsWith('modbus') && device.unit_id === undefined) problems.push(`${at('unit_id')}: is required on a ${driver} bus`);
  if (driver !== 'simulator' && device.sim_fault !== undefined) problems.push(`${at('sim_fault')}: is only for devices on a simulator bus`);
  const block = BLOCK_FOR_DRIVER[driver];
  if (!block || !isObj(model)) return;
  const misfits = list(model.points)
    .filter((p): p is Obj => isObj(p) && p[block] === undefined)
    .map((p) => String(p.name));
  if (misfits.length > 0) {
    const shown = misfits.length > 5 ? `${misfits.slice(0, 5).join(', ')}, …` : misfits.join(', ');
    problems.push(`${at('model')}: model "${String(device.model)}" does not fit bus "${String(device.bus)}" (${driver}): point(s) ${shown} have no ${block} block`);
  }
}

/** A persona unit: its model exists, every bound or written point is one of its register points, every source device exists. */
function checkPersona(unit: Obj, at: string, deviceIds: Set<string>, models: ReadonlyMap<string, unknown>, problems: string[]): void {
  const model = models.get(String(unit.persona));
  if (!isObj(model)) {
    problems.push(`${at}.persona: unknown model "${String(unit.persona)}"`);
    return;
  }
  const tableOf = new Map(list(model.points).filter((p) => isObj(p) && isObj(p.modbus)).map((p) => [String((p as Obj).name), String(((p as Obj).modbus as Obj).table)]));
  const registers = new Set([...tableOf].filter(([, table]) => table === 'input' || table === 'holding').map(([name]) => name));
  const bind = isObj(unit.bind) ? unit.bind : {};
  for (const [name, spec] of Object.entries(bind)) {
    if (!registers.has(name)) problems.push(`${at}.bind.${name}: model "${String(unit.persona)}" has no register point "${name}"`);
    const sources = typeof spec === 'string' ? [spec] : isObj(spec) ? [spec.point, ...list(spec.sum)] : [];
    for (const source of sources) {
      if (typeof source !== 'string' || !source.includes('.')) continue; // the schema names a malformed source
      const device = source.slice(0, source.indexOf('.'));
      if (!deviceIds.has(device)) problems.push(`${at}.bind.${name}: unknown device "${device}" in "${source}" (${known(deviceIds)})`);
    }
  }
  for (const [name, policy] of Object.entries(isObj(unit.write) ? unit.write : {})) {
    if (!registers.has(name)) problems.push(`${at}.write.${name}: model "${String(unit.persona)}" has no register point "${name}"`);
    else if (policy !== 'reject' && tableOf.get(name) !== 'holding') problems.push(`${at}.write.${name}: an input register cannot be written`);
    else if (policy === 'forward' && !(typeof bind[name] === 'string' || (isObj(bind[name]) && typeof (bind[name] as Obj).point === 'string'))) {
      problems.push(`${at}.write.${name}: "forward" needs the point bound to one source point`);
    }
  }
  checkConsumerReads(unit, at, model, problems);
}

/** Servers: unique ids (their ports: port-owners.ts), unit ids unique per server, each unit one existing device (or a persona). */
function checkServers(servers: unknown[], deviceIds: Set<string>, models: ReadonlyMap<string, unknown>, problems: string[]): void {
  checkUniqueIds(servers, 'servers', 'server', problems);
  servers.forEach((server, i) => {
    if (!isObj(server)) return;
    const seen = new Map<number, string>();
    if (typeof server.diagnostic_unit === 'number') seen.set(server.diagnostic_unit, 'diagnostic_unit');
    list(server.units).forEach((unit, j) => {
      if (!isObj(unit)) return;
      const at = `servers[${i}].units[${j}]`;
      if (typeof unit.unit === 'number') {
        const earlier = seen.get(unit.unit);
        if (earlier !== undefined) problems.push(`${at}.unit: unit ${unit.unit} is already used by ${earlier === 'diagnostic_unit' ? `servers[${i}].diagnostic_unit` : `servers[${i}].${earlier}`}`);
        else seen.set(unit.unit, `units[${j}]`);
      }
      if ((unit.device === undefined) === (unit.persona === undefined)) problems.push(`${at}: needs exactly one of "device" or "persona"`);
      if (typeof unit.device === 'string' && !deviceIds.has(unit.device)) problems.push(`${at}.device: unknown device "${unit.device}" (${known(deviceIds)})`);
      if (unit.persona !== undefined && unit.writes !== undefined && unit.writes !== false) problems.push(`${at}.writes: is for device units`);
      if (typeof unit.persona === 'string') checkPersona(unit, at, deviceIds, models, problems);
    });
  });
}

/** Problems between sections; `models` holds every model a device may name (library and inline merged). */
export function checkCrossReferences(cfg: Obj, models: ReadonlyMap<string, unknown>): string[] {
  const problems: string[] = [];
  const buses = list(cfg.buses);
  const devices = list(cfg.devices);
  checkUniqueIds(buses, 'buses', 'bus', problems);
  checkUniqueIds(devices, 'devices', 'device', problems);

  const busDrivers = new Map<string, string>();
  for (const bus of buses) {
    if (isObj(bus) && typeof bus.id === 'string' && typeof bus.driver === 'string' && !busDrivers.has(bus.id)) busDrivers.set(bus.id, bus.driver);
  }
  let points = 0;
  devices.forEach((device, i) => {
    if (!isObj(device)) return;
    checkDevice(device, i, busDrivers, models, problems);
    if (device.poll === 0) problems.push(`devices[${i}].poll: must be greater than 0`);
    if (device.ttl === 0) problems.push(`devices[${i}].ttl: must be greater than 0`);
    const model = typeof device.model === 'string' ? models.get(device.model) : undefined;
    if (isObj(model)) points += list(model.points).length;
  });

  const shadow = section(cfg, 'shadow');
  if (typeof shadow.max_devices === 'number' && devices.length > shadow.max_devices) {
    problems.push(`shadow.max_devices: ${devices.length} devices are configured but the capacity is ${shadow.max_devices}`);
  }
  if (typeof shadow.max_points === 'number' && points > shadow.max_points) {
    problems.push(`shadow.max_points: ${points} points are configured but the capacity is ${shadow.max_points}`);
  }
  for (const key of ['default_ttl', 'check_interval', 'persist_interval']) {
    if (shadow[key] === 0) problems.push(`shadow.${key}: must be greater than 0`);
  }

  const exportShadow = section(section(cfg, 'export'), 'shadow');
  for (const target of ['http', 'file']) {
    if (list(exportShadow.targets).includes(target) && exportShadow[target] === undefined) {
      problems.push(`export.shadow.${target}: is required when targets include "${target}"`);
    }
  }
  const users = new Set<string>();
  list(section(cfg, 'mqtt').users).forEach((user, i) => {
    if (!isObj(user) || typeof user.username !== 'string') return;
    if (users.has(user.username)) problems.push(`mqtt.users[${i}].username: duplicate user "${user.username}"`);
    users.add(user.username);
  });
  if (exportShadow.interval === 0) problems.push('export.shadow.interval: must be greater than 0');
  const deviceIds = new Set(devices.filter(isObj).map((d) => d.id).filter((id): id is string => typeof id === 'string'));
  checkServers(list(cfg.servers), deviceIds, models, problems);
  checkPortOwners(cfg, problems);
  return problems;
}
