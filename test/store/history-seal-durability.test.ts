/**
 * The order of a seal's disk operations, which a power cut can otherwise expose: the tail appended to the log
 * must be fsynced before the log is renamed to its segment name, and the directory fsynced after the rename
 * (else the rename may not survive, or the renamed file may lack its tail). fs/promises and FileHandle are
 * wrapped to record each operation with the file it touched; removing any of those syncs fails this test.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FakeClock, open, withDir, within } from './history-helpers.js';

const require = createRequire(import.meta.url);
const fsp = require('node:fs/promises') as typeof import('node:fs/promises');

type Op = { op: string; file: string; to?: string };

/** Runs `fn` with every open/rename and handle write/sync/datasync/truncate recorded; restores them after. */
async function recording(fn: (ops: Op[]) => Promise<void>): Promise<void> {
  const ops: Op[] = [];
  const files = new WeakMap<object, string>();
  const origOpen = fsp.open;
  const origRename = fsp.rename;
  const probe = await origOpen(__filenameOf(), 'r');
  const proto = Object.getPrototypeOf(probe) as Record<string, (...a: unknown[]) => Promise<unknown>>;
  await probe.close();
  const saved = Object.fromEntries(['write', 'sync', 'datasync', 'truncate'].map((m) => [m, proto[m]!]));
  fsp.open = (async (path: string, ...rest: unknown[]) => {
    const fh = await (origOpen as (...a: unknown[]) => Promise<object>)(path, ...rest);
    files.set(fh, String(path));
    return fh;
  }) as typeof fsp.open;
  fsp.rename = (async (from: string, to: string) => {
    await origRename(from, to);
    ops.push({ op: 'rename', file: String(from), to: String(to) });
  }) as typeof fsp.rename;
  for (const m of Object.keys(saved)) {
    proto[m] = async function (this: object, ...a: unknown[]) {
      const r = await saved[m]!.apply(this, a);
      ops.push({ op: m, file: files.get(this) ?? '?' });
      return r;
    };
  }
  syncBuiltinESMExports();
  try {
    await fn(ops);
  } finally {
    fsp.open = origOpen;
    fsp.rename = origRename;
    Object.assign(proto, saved);
    syncBuiltinESMExports();
  }
}

function __filenameOf(): string {
  return new URL(import.meta.url).pathname;
}

test('a seal: tail written, fsynced, then renamed, then the directory fsynced', () => withDir(async (dir) => {
  const T0 = Date.UTC(2024, 4, 1);
  const clock = new FakeClock(T0);
  const store = await open(dir, clock, { segmentSpan: 86_400_000 });
  try {
    for (let i = 0; i < 200; i++) store.record('d', `p${i % 4}`, T0 + i * 10, i);
    await within(store.flush());
    await recording(async (ops) => {
      clock.t = T0 + 86_400_000;
      await within(store.flush()); // the day's log rolls and is sealed
      const r = ops.findIndex((o) => o.op === 'rename' && o.file.endsWith('.log') && o.to!.endsWith('.seg'));
      assert.ok(r >= 0, `the log renamed to its segment: ${JSON.stringify(ops)}`);
      const log = ops[r]!.file;
      const before = ops.slice(0, r).filter((o) => o.file === log);
      const lastWrite = before.map((o) => o.op).lastIndexOf('write');
      assert.ok(lastWrite >= 0, 'the seal wrote its tail to the log');
      assert.ok(before.slice(lastWrite + 1).some((o) => o.op === 'sync'), `fsync after the tail, before the rename: ${JSON.stringify(before)}`);
      const after = ops.slice(r + 1);
      assert.ok(after.some((o) => o.op === 'sync' && basename(o.file) === basename(dir)), `directory fsynced after the rename: ${JSON.stringify(after)}`);
    });
    assert.is(store.stats().compactions, 1);
  } finally {
    await store.close();
  }
}));

test.run();
