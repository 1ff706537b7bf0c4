/** The packet-size watch reads the fixed headers of what aedes reads, across chunk boundaries. */
import { PassThrough } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { watchPacketSizes } from '../../src/export/packet-limit.js';

/** A stream consumed the way aedes consumes it ('readable' + read()), watched with `limit`. */
function watched(limit: number): { feed: (b: Buffer) => Promise<void>; over: (number | null)[]; read: Buffer[] } {
  const s = new PassThrough();
  const read: Buffer[] = [];
  s.on('readable', () => {
    let c: Buffer | null;
    while ((c = s.read() as Buffer | null) !== null) read.push(c);
  });
  const over: (number | null)[] = [];
  watchPacketSizes(s, limit, (n) => over.push(n));
  return { feed: (b) => new Promise((r) => s.write(b, () => setImmediate(r))), over, read };
}

const packet = (type: number, len: number): Buffer => {
  const head = [type];
  let n = len;
  do {
    let d = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) d |= 128;
    head.push(d);
  } while (n > 0);
  return Buffer.concat([Buffer.from(head), Buffer.alloc(len, 7)]);
};

test('packets within the limit, split anywhere, pass; the consumer still gets every byte', async () => {
  const w = watched(1000);
  const all = Buffer.concat([packet(0x10, 20), packet(0x30, 1000), packet(0xc0, 0), packet(0x30, 200), packet(0x82, 130)]);
  for (let i = 0; i < all.length; i += 7) await w.feed(all.subarray(i, i + 7));
  assert.equal(w.over, []);
  assert.ok(Buffer.concat(w.read).equals(all));
});

test('a header announcing more than the limit is caught before its body arrives, also split inside the length', async () => {
  const w = watched(1000);
  await w.feed(packet(0x30, 10));
  await w.feed(Buffer.from([0x30, 0xe9]));
  await w.feed(Buffer.from([0x07]));
  assert.equal(w.over, [1001]);
});

test('a remaining length of more than 4 bytes is malformed', async () => {
  const w = watched(1 << 30);
  await w.feed(Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f]));
  assert.equal(w.over, [null]);
});

test.run();
