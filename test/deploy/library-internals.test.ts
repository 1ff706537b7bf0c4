/**
 * Canaries for the library internals the gateway reaches into where no public API exists. Each one
 * checks that the private field or hook is still where our code expects it, so an upgrade that moves
 * it fails here, loudly, instead of silently breaking the feature in the field:
 * - modbus-serial `_port` (late-error mute), `_port._buffer` and `_port._client` (RTU drain after a timeout);
 * - polka `routes` (405 with Allow instead of 404);
 * - aedes `persistence.storeRetained` (retained messages kept in order for the flat-file store);
 * - Node's `socket._httpMessage` (an envelope for a parse error of a request already in a handler);
 * - prom-client's Registry.registerMetric taking any object with get() (api/metrics.ts: a histogram counted
 *   elsewhere); aedes' `publish`, replaced to drop a refused publish (export/broker.ts; behaviour in
 *   test/export/ha-client.test.ts);
 * - serialport's Linux binding port: `fd`, `poller.once`, `read`/`write` and `writeOperation`, which
 *   src/drivers/modbus/poll-binding.ts replaces and sets (reads and writes on the event loop).
 * (node-persist is used through its documented setItem/getItem only.)
 */
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

test('modbus-serial: an RTU buffered client keeps its port in _port, with _buffer and _client', async () => {
  const { default: M } = await import('modbus-serial');
  const ModbusRTU = M.default; // the d.ts is CJS with `export default` (as in transport.ts)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-canary-'));
  const client = new ModbusRTU();
  // A path that does not exist: the port object is built before the open fails.
  await client.connectRTUBuffered(path.join(dir, 'no-such-tty'), { baudRate: 9600 }).catch(() => {});
  const port = (client as unknown as { _port?: { _buffer?: unknown; _client?: { on?: unknown }; on?: unknown } })._port;
  assert.ok(port, 'modbus-serial no longer keeps its port in client._port (src/drivers/modbus/transport.ts)');
  assert.type(port.on, 'function');
  assert.ok(Buffer.isBuffer(port._buffer), 'RtuBufferedPort._buffer moved (transport.ts drain)');
  assert.type(port._client?.on, 'function', 'RtuBufferedPort._client (the serialport) moved (transport.ts drain)');
  await rm(dir, { recursive: true, force: true });
});

test('polka: the app lists its routes with method and pattern', async () => {
  const { default: polka } = await import('polka');
  const app = polka();
  app.get('/a/b', () => {});
  const routes = (app as unknown as { routes?: { method: string; pattern: RegExp }[] }).routes;
  assert.ok(Array.isArray(routes), 'polka no longer exposes app.routes (src/api/app.ts allowedMethods)');
  assert.is(routes[0]!.method, 'GET');
  assert.ok(routes[0]!.pattern.test('/a/b'));
});

test('aedes: the instance exposes its persistence with storeRetained', async () => {
  const { Aedes } = await import('aedes');
  const broker = await Aedes.createBroker();
  const persistence = (broker as unknown as { persistence?: { storeRetained?: unknown } }).persistence;
  assert.type(persistence?.storeRetained, 'function', 'aedes.persistence.storeRetained moved (src/export/broker.ts)');
  await new Promise<void>((resolve) => broker.close(() => resolve()));
});

test("node: a server socket points at its in-flight response through _httpMessage", async () => {
  let seen: unknown;
  const server = http.createServer((req, res) => {
    seen = (req.socket as Socket & { _httpMessage?: unknown })._httpMessage;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text());
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(seen instanceof http.ServerResponse, 'socket._httpMessage is gone (src/api/server.ts onClientError)');
});

test('serialport: its binding opens a tty as a port with fd, poller.once, read, write and writeOperation', async () => {
  if (spawnSync('socat', ['-V']).status !== 0) {
    console.log('SKIP: serialport canary: socat is not installed (apt-get install socat)');
    return;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-canary-tty-'));
  const a = path.join(dir, 'a');
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${path.join(dir, 'b')}`], { stdio: 'ignore' });
  try {
    const { existsSync } = await import('node:fs');
    const until = Date.now() + 5000;
    while (!existsSync(a) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const { SerialPort } = await import('serialport');
    const binding = SerialPort.binding as unknown as { open(o: object): Promise<Record<string, unknown> & { close(): Promise<void> }> };
    const port = await binding.open({ path: a, baudRate: 9600, dataBits: 8, parity: 'none', stopBits: 1 });
    try {
      assert.type(port['fd'], 'number', 'the binding port no longer exposes fd (poll-binding.ts reads it)');
      assert.type((port['poller'] as { once?: unknown } | undefined)?.once, 'function', 'the binding port has no poller.once (poll-binding.ts)');
      assert.type(port['read'], 'function');
      assert.type(port['write'], 'function');
      assert.ok('writeOperation' in port, 'the binding port no longer keeps writeOperation (poll-binding.ts sets it for drain)');
    } finally {
      await port.close();
    }
  } finally {
    socat.kill();
    await rm(dir, { recursive: true, force: true });
  }
});

test('prom-client: a registered object with get() is rendered as the histogram it returns', async () => {
  const { Registry } = await import('prom-client');
  const registry = new Registry();
  const values = [
    { metricName: 'x_seconds_bucket', labels: { le: 0.5 }, value: 1 }, { metricName: 'x_seconds_bucket', labels: { le: '+Inf' }, value: 2 },
    { metricName: 'x_seconds_sum', labels: {}, value: 1.5 }, { metricName: 'x_seconds_count', labels: {}, value: 2 },
  ];
  registry.registerMetric({ name: 'x_seconds', get: () => ({ name: 'x_seconds', help: 'h', type: 'histogram', values, aggregator: 'sum' }) } as never);
  const text = await registry.metrics();
  assert.match(text, /# TYPE x_seconds histogram/, 'prom-client no longer renders a get() object (api/metrics.ts histograms)');
  assert.match(text, /x_seconds_bucket\{le="\+Inf"\} 2/);
});

test('aedes: publish is a replaceable method of the instance', async () => {
  const { Aedes } = await import('aedes');
  const broker = await Aedes.createBroker();
  assert.type((broker as unknown as { publish?: unknown }).publish, 'function', 'aedes.publish moved (export/broker.ts wraps it to drop refused publishes)');
  await new Promise<void>((r) => broker.close(() => r()));
});

test.run();
