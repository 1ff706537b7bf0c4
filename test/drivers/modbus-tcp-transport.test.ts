/**
 * The Modbus TCP link's own transaction space against a raw TCP peer the test scripts frame by frame: an
 * answer naming another unit fails the request at once, an exception keeps its code, a late answer is
 * dropped, and a connection with MAX_UNANSWERED timed-out ids is renewed (transaction-ids.test.ts: the ids).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { classify } from '../../src/drivers/modbus/errors.js';
import { MAX_UNANSWERED, TcpTransport } from '../../src/drivers/modbus/tcp-transport.js';
import { WireGarbled, WireTimeout } from '../../src/drivers/modbus/transport.js';
import { ownMs, stamp } from '../helpers/lateness.js';

type Reply = (tid: number, unit: number, pdu: Buffer, socket: Socket) => void;

/** A TCP peer that hands every request frame to `reply` (which may answer, or not). */
async function peer(reply: Reply): Promise<{ server: Server; port: number; tids: number[]; connections: number }> {
  const state = { server: createServer(), port: 0, tids: [] as number[], connections: 0 };
  state.server.on('connection', (socket) => {
    state.connections++;
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 7 && buf.length >= 6 + buf.readUInt16BE(4)) {
        const end = 6 + buf.readUInt16BE(4);
        state.tids.push(buf.readUInt16BE(0));
        reply(buf.readUInt16BE(0), buf[6]!, buf.subarray(7, end), socket);
        buf = buf.subarray(end);
      }
    });
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', () => resolve()));
  state.port = (state.server.address() as { port: number }).port;
  return state;
}

function send(socket: Socket, tid: number, unit: number, pdu: number[]): void {
  const head = Buffer.alloc(7);
  head.writeUInt16BE(tid, 0);
  head.writeUInt16BE(pdu.length + 1, 4);
  head[6] = unit;
  socket.write(Buffer.concat([head, Buffer.from(pdu)]));
}

async function withLink(reply: Reply, fn: (link: TcpTransport, p: Awaited<ReturnType<typeof peer>>) => Promise<void>): Promise<void> {
  const p = await peer(reply);
  const link = new TcpTransport('127.0.0.1', p.port, 1000);
  try {
    await link.open();
    await fn(link, p);
  } finally {
    await link.close();
    p.server.close();
  }
}

const one = { fc: 3 as const, address: 0, count: 1 };

test('an answer naming another unit fails the request at once; an exception keeps its code', async () => {
  await withLink((tid, unit, pdu, socket) => {
    if (unit === 1) send(socket, tid, 2, [3, 2, 0, 7]);
    else send(socket, tid, unit, [0x83, 2]);
  }, async (link) => {
    const t0 = stamp();
    const err = await link.request(1, one, 2000).then(() => null, (e: unknown) => e);
    assert.instance(err, WireGarbled);
    // Less what this machine kept the thread (the peer's too: it answers in this process) from a CPU; left to
    // the 2 s timeout, the request idles and the bound still fails.
    assert.ok(ownMs(t0, stamp()) < 1500, 'not left to time out');
    const exc = await link.request(5, one, 2000).then(() => null, (e: unknown) => e);
    assert.equal(classify(exc, 5, 'x').code, 2);
    assert.is(link.strayAnswers(), 0);
  });
});

test('a late answer is dropped and counted, the next request still gets its own', async () => {
  let held: Socket | null = null;
  await withLink((tid, unit, pdu, socket) => {
    if (tid === 1) held = socket; // the first request is answered only with the next one
    else {
      send(held!, 1, 1, [3, 2, 0, 99]);
      send(socket, tid, unit, [3, 2, 0, 7]);
    }
  }, async (link) => {
    assert.instance(await link.request(1, one, 50).then(() => null, (e: unknown) => e), WireTimeout);
    assert.equal(await link.request(1, one, 1000), [7]);
    assert.is(link.strayAnswers(), 1);
  });
});

test(`${MAX_UNANSWERED} answers that never came: the connection is renewed, which frees their ids`, async () => {
  await withLink(() => {}, async (link, p) => {
    let lost = '';
    link.onLost((reason) => (lost = reason));
    for (let i = 0; i < MAX_UNANSWERED; i++) await link.request(1, one, 2).catch(() => {});
    assert.match(lost, /never came/);
    assert.is(link.isOpen(), false);
    await link.open();
    assert.is(p.connections, 2);
  });
});

test.run();
