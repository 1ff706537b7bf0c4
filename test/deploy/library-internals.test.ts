/**
 * Canaries for the library internals the gateway reaches into where no public API exists. Each one
 * checks that the private field or hook is still where our code expects it, so an upgrade that moves
 * it fails here, loudly, instead of silently breaking the feature in the field:
 * - serialport's Linux binding port: `fd` and `poller` (the RTU line's non-blocking reads on the loop);
 * - polka `routes` (405 with Allow instead of 404);
 * - aedes `persistence.storeRetained` (retained messages kept in order for the flat-file store);
 * - Node's `socket._httpMessage` (an envelope for a parse error of a request already in a handler);
 * - aedes' `publish`, replaced to drop a refused publish (export/broker.ts; behaviour in
 *   test/export/ha-client.test.ts);
 * - node-persist's instance hook `writeFile(file, content)`, the one place setItem writes (store/persist-writer.ts
 *   replaces it with temp + rename).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { needs } from '../helpers/peers.js';

/**
 * serialport's Linux binding (@serialport/bindings-cpp): the port it opens has a numeric fd and a poller
 * whose poll(1) (UV_READABLE) emits 'readable' once bytes wait — declared public in its d.ts, but outside
 * the binding interface every binding implements; src/drivers/modbus/serial-bytes.ts reads the fd on it.
 */
const withSocat = needs(spawnSync('socat', ['-V']).status !== 0 && 'socat is not installed (apt-get install socat)', 'serialport canary');

withSocat('serialport: the opened binding port has an fd and a poller that says when the tty is readable', async () => {
  const { SerialPort } = await import('serialport');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-canary-'));
  const [a, b] = [path.join(dir, 'a'), path.join(dir, 'b')];
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  try {
    for (let i = 0; i < 100 && !(existsSync(a) && existsSync(b)); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(a) && existsSync(b), 'socat made its pty pair');
    const binding = SerialPort.binding as unknown as { open(o: object): Promise<{ fd: unknown; poller?: { on?: unknown; poll?: unknown }; close(): Promise<void> }> };
    const port = await binding.open({ path: a, baudRate: 9600 });
    try {
      assert.type(port.fd, 'number', 'the binding port has no numeric fd (serial-bytes.ts)');
      assert.type(port.poller?.on, 'function', 'the binding port has no poller (serial-bytes.ts)');
      assert.type(port.poller?.poll, 'function', 'the poller has no poll(flags) (serial-bytes.ts)');
      const poller = port.poller as { on(e: string, fn: (err: Error | null) => void): void; poll(f: number): void };
      const readable = new Promise<Error | null>((resolve, reject) => {
        poller.on('readable', resolve);
        setTimeout(() => reject(new Error('poll(1) never said readable (serial-bytes.ts UV_READABLE)')), 3000);
      });
      poller.poll(1);
      await writeFile(b, Buffer.from([1, 2, 3]));
      assert.is(await readable, null);
    } finally {
      await port.close();
    }
  } finally {
    socat.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
});

test('polka: the app lists its routes with method and pattern', async () => {
  const { default: polka } = await import('polka');
  const app = polka();
  app.get('/a/b', () => {});
  const routes = (app as unknown as { routes?: { method: string; pattern: RegExp }[] }).routes;
  assert.ok(Array.isArray(routes), 'polka no longer exposes app.routes (src/api/polka-routes.ts)');
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

test('aedes: publish is a replaceable method of the instance', async () => {
  const { Aedes } = await import('aedes');
  const broker = await Aedes.createBroker();
  assert.type((broker as unknown as { publish?: unknown }).publish, 'function', 'aedes.publish moved (export/broker.ts wraps it to drop refused publishes)');
  await new Promise<void>((r) => broker.close(() => r()));
});

test('node-persist: setItem writes through the instance hook writeFile(file, content), and getItem reads what the replacement wrote', async () => {
  const { default: nodePersist } = await import('node-persist');
  const { replaceInPlaceWrites } = await import('../../src/store/persist-writer.js');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-canary-persist-'));
  try {
    const storage = nodePersist.create({ dir, expiredInterval: 0, writeQueue: false, ttl: false });
    await storage.init();
    storage.stopWriteQueueInterval();
    replaceInPlaceWrites(storage);
    const replaced = storage.writeFile;
    const files: string[] = [];
    storage.writeFile = (file, content) => {
      files.push(file);
      return replaced(file, content);
    };
    await storage.setItem('k', { seq: 7 });
    assert.equal(files, [storage.getDatumPath('k')], 'setItem went through writeFile with the key\'s file');
    assert.equal(await storage.getItem('k'), { seq: 7 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
