/**
 * One owner per port: a serial device is read by one part (an RTU bus, or an RTU server), and a TCP port
 * is listened on by one (the REST API, the broker's MQTT and WebSocket ports, a Modbus TCP server). Two
 * owners of one tty would each read half of the other's bytes; two listeners on one port fail at start.
 * Serial paths are compared as written: a by-id link and the tty it points to are not resolved here.
 */
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

interface Listener {
  host: string;
  port: number;
  owner: string;
}

/** Whether two listen addresses take the same port: the same host, or either on every address. */
const clash = (a: Listener, b: Listener): boolean => a.port === b.port && (a.host === b.host || [a.host, b.host].some((h) => h === '0.0.0.0' || h === '::' || h === ''));

export function checkPortOwners(cfg: Obj, problems: string[]): void {
  const ttys = new Map<string, string>();
  const claimTty = (path: unknown, owner: string): void => {
    if (typeof path !== 'string' || path === '') return;
    const earlier = ttys.get(path);
    if (earlier !== undefined) problems.push(`${owner}: serial port ${path} is already used by ${earlier}; a port has one owner (a bus or a server)`);
    else ttys.set(path, owner);
  };
  const listeners: Listener[] = [];
  const claimTcp = (host: unknown, port: unknown, owner: string): void => {
    // Port 0 asks the system for a free port: never a clash.
    if (typeof port !== 'number' || port === 0) return;
    const here = { host: typeof host === 'string' ? host : '0.0.0.0', port, owner };
    const earlier = listeners.find((l) => clash(l, here));
    if (earlier) problems.push(`${owner}: TCP port ${port} is already used by ${earlier.owner}`);
    else listeners.push(here);
  };
  list(cfg.buses).forEach((bus, i) => {
    if (isObj(bus) && bus.driver === 'modbus-rtu') claimTty(bus.port, `buses[${i}].port (bus "${String(bus.id)}")`);
  });
  const http = isObj(cfg.http) ? cfg.http : {};
  claimTcp(http.host, http.port, 'http.port');
  const mqtt = isObj(cfg.mqtt) ? cfg.mqtt : {};
  if (mqtt.enable !== false) {
    claimTcp(mqtt.host, mqtt.port, 'mqtt.port');
    claimTcp(mqtt.host, mqtt.ws_port, 'mqtt.ws_port');
  }
  list(cfg.servers).forEach((server, i) => {
    if (!isObj(server)) return;
    const owner = `servers[${i}].port (server "${String(server.id)}")`;
    if (server.transport === 'rtu') claimTty(server.port, owner);
    else claimTcp(server.host, server.port, owner);
  });
}
