/**
 * A Modbus server whose port is taken: the gateway starts and runs on (its API answers), the server is
 * reported down, and the log has one line naming servers[<id>].port — not a stack trace.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';

test('a server port in use: one clear error line, the gateway keeps running without that server', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-port-'));
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const port = (holder.address() as { port: number }).port;
  const lines: Array<{ level: number; msg: string; err?: unknown }> = [];
  const sink = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done(); } });
  const raw = {
    gateway: { id: 'port-in-use', data_dir: dir }, http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    servers: [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, units: [] }],
  };
  const gw = await startGateway(validateConfig(raw, { env: {} }), { log: pino({ level: 'info' }, sink), raw });
  try {
    const errors = lines.filter((l) => l.level >= 50);
    assert.equal(errors.map((l) => l.msg), [`servers[door].port ${port} is in use by another program: set servers[door].port; the gateway runs on without modbus server door`]);
    assert.is(errors[0]!.err, undefined, 'no stack trace for a port in use');
    assert.equal(gw.modbusServers.ports(), {});
    const res = await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`);
    assert.match(await res.text(), /shadowgate_modbus_server_up\{server="door"\} 0/);
  } finally {
    await gw.stop();
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
