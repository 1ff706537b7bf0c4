/** The RTU port's reads and writes on the event loop: what the stream gets, and when a read waits for the poller. */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pollRead, pollWrite } from '../../src/drivers/modbus/poll-binding.js';

/** A FIFO stands in for the tty: a non-blocking read of it gives what waits or EAGAIN, as a tty's does. */
function line(): {
  port: Parameters<typeof pollRead>[0]; send: (b: number[]) => void; fire: (err?: Error) => void; waiting: () => number; close: () => void;
  /** a second non-blocking reader and writer of the same FIFO, for the write side */
  sink: { fd: number; writerFd: number };
} {
  const dir = mkdtempSync(join(tmpdir(), 'sg-pollread-'));
  const path = join(dir, 'fifo');
  assert.is(spawnSync('mkfifo', [path]).status, 0, 'mkfifo');
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(path, constants.O_WRONLY);
  const listeners: ((err: Error | null) => void)[] = [];
  const port = {
    fd: fd as number | null,
    get isOpen() { return this.fd !== null; },
    poller: { once: (_: 'readable', fn: (err: Error | null) => void) => listeners.push(fn) },
    read: async () => ({ bytesRead: 0, buffer: Buffer.alloc(0) }),
    write: async () => {},
    writeOperation: null as Promise<void> | null,
  };
  return {
    port,
    send: (b) => void writeSync(writer, Buffer.from(b)),
    fire: (err) => { for (const fn of listeners.splice(0)) fn(err ?? null); },
    waiting: () => listeners.length,
    sink: { fd, writerFd: writer },
    close: () => { closeSync(writer); closeSync(fd); port.fd = null; rmSync(dir, { recursive: true, force: true }); },
  };
}

const within = <T>(p: Promise<T>, ms = 1000): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms))]);
const settledYet = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

test('bytes already waiting are read at once, without the poller', async () => {
  const l = line();
  try {
    l.send([1, 3, 4, 0, 7, 0, 8]);
    const buffer = Buffer.alloc(64);
    const { bytesRead } = await within(pollRead(l.port)(buffer, 0, 64));
    assert.equal([...buffer.subarray(0, bytesRead)], [1, 3, 4, 0, 7, 0, 8]);
    assert.is(l.waiting(), 0);
  } finally {
    l.close();
  }
});

test('after a read that emptied the line, the next one goes through the poller first, then reads what came', async () => {
  const l = line();
  try {
    const read = pollRead(l.port);
    const buffer = Buffer.alloc(64);
    l.send([1, 2]);
    assert.is((await within(read(buffer, 0, 64))).bytesRead, 2);
    // Bytes that came after the short read wake the (level-triggered) poller at once: the read waits for it
    // rather than trying a read that would mostly hear EAGAIN.
    l.send([9, 8, 7]);
    const next = read(buffer, 0, 64);
    assert.not.ok(await settledYet(next), 'the read waits for the poller');
    assert.is(l.waiting(), 1);
    l.fire();
    const { bytesRead } = await within(next);
    assert.equal([...buffer.subarray(0, bytesRead)], [9, 8, 7]);
  } finally {
    l.close();
  }
});

test('nothing waiting: EAGAIN is not an error, the read waits for the poller', async () => {
  const l = line();
  try {
    const buffer = Buffer.alloc(8);
    const next = pollRead(l.port)(buffer, 0, 8);
    assert.not.ok(await settledYet(next));
    assert.is(l.waiting(), 1);
    l.send([5]);
    l.fire();
    assert.is((await within(next)).bytesRead, 1);
  } finally {
    l.close();
  }
});

test('a port closed while a read waits: the read is canceled (the stream does not take it for a disconnect)', async () => {
  const l = line();
  const next = pollRead(l.port)(Buffer.alloc(8), 0, 8);
  assert.not.ok(await settledYet(next));
  l.close();
  l.fire(Object.assign(new Error('Canceled'), { canceled: true }));
  const err = await within(next).then(() => null, (e: unknown) => e as { canceled?: boolean });
  assert.ok(err?.canceled, 'rejected as canceled');
});

test('a write puts the whole frame on the line at once, and is the port\'s write in progress until done', async () => {
  const l = line();
  try {
    // The write side of the FIFO plays the tty fd here.
    const port = { ...l.port, fd: l.sink.writerFd, get isOpen() { return true; } };
    const frame = Buffer.from([1, 4, 0, 0, 0, 32, 0xf1, 0xd2]);
    const op = pollWrite(port)(frame);
    assert.ok(port.writeOperation, 'in progress');
    await within(op);
    assert.is(port.writeOperation, null);
    const got = Buffer.alloc(16);
    assert.equal([...got.subarray(0, readSync(l.sink.fd, got, 0, 16, null))], [...frame]);
  } finally {
    l.close();
  }
});

test.run();
