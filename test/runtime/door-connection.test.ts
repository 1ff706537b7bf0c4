/** One Modbus server connection over a real socket: pipelined requests answered in order, at most MAX_PIPELINE open. */
import { createServer, type Server } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DoorConnection, MAX_PIPELINE } from '../../src/runtime/door/connection.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';

async function serve(handle: ConstructorParameters<typeof DoorConnection>[1]): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => void new DoorConnection(socket, handle, () => {}));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

test('40 requests in one write: answered in request order with their ids, never more than MAX_PIPELINE open', async () => {
  let open = 0;
  let most = 0;
  const { server, port } = await serve(async (frame) => {
    open++;
    most = Math.max(most, open);
    // Later requests finish first: order must come from the connection, not from completion.
    await new Promise((r) => setTimeout(r, 40 - (frame.tid % 20)));
    open--;
    return Uint8Array.of(3, 2, 0, frame.tid & 0xff);
  });
  const c = await RawModbusClient.open(port);
  try {
    const burst = Array.from({ length: 40 }, (_, i) => i + 1);
    for (const tid of burst) c.send(tid, 7, read(3, tid, 1));
    const answers = [];
    for (let i = 0; i < burst.length; i++) answers.push(await c.next(5000));
    assert.equal(answers.map((a) => a.tid), burst);
    assert.equal(answers.map((a) => a.pdu[3]), burst);
    assert.ok(answers.every((a) => a.unit === 7));
    assert.is(most, MAX_PIPELINE, `at most ${MAX_PIPELINE} open (saw ${most})`);
  } finally {
    c.close();
    server.close();
  }
});

test('a stream that is not Modbus is closed', async () => {
  const { server, port } = await serve(async () => Uint8Array.of(3, 2, 0, 1));
  const c = await RawModbusClient.open(port);
  try {
    c.send(1, 1, read(3, 0, 1));
    assert.is((await c.next()).tid, 1);
    c.sendRaw([0, 2, 0, 9, 0, 6, 1, 3, 0, 0, 0, 1]); // protocol id 9
    const outcome = await c.next(2000).then(() => 'answered', (e: Error) => e.message);
    assert.is(outcome, 'connection closed by the server');
  } finally {
    c.close();
    server.close();
  }
});

test.run();
