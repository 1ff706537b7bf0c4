/**
 * History on a disk that fills up and frees again (a real tmpfs: short writes, then ENOSPC). Samples that
 * cannot be written are dropped and counted, the reason is in stats until a flush succeeds; a log whose sealing
 * failed for want of space is sealed once space is back; the series registry never keeps half a line (it
 * would end the registry at the next open and orphan every series after it).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SeriesRegistry } from '../../src/store/history/registry.js';
import { silentLogger } from '../../src/util/logger.js';
import { needs } from '../helpers/peers.js';
import { fill, tmpfsUnavailable, unfill, withTmpfs } from '../helpers/tmpfs.js';
import { FakeClock, open } from './history-helpers.js';

const why = tmpfsUnavailable();
const rootTest = needs(why, 'history on a full disk');

rootTest('full disk: samples dropped and counted with the reason; sealing and writing resume when space returns', async () => {
  await withTmpfs('2m', async (mnt) => {
    const dir = path.join(mnt, 'history');
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const store = await open(dir, clock, { segmentBytes: 16 * 1024 });
    const round = (n: number): void => {
      for (let i = 0; i < n; i++) {
        clock.t += 10;
        for (let p = 0; p < 10; p++) store.record('dev', `p${p}`, clock.t, i + p);
      }
    };
    try {
      round(100); // 12 KB: the log stays open
      await store.flush();
      assert.is(store.stats().lastError, null);
      const sealedBefore = store.stats().compactions;

      await fill(path.join(mnt, 'filler'));
      clock.t += 86_400_000; // a new day: the log rolls, and its sealing cannot write
      round(200);
      await store.flush();
      const full = store.stats();
      assert.match(String(full.lastError), /ENOSPC/);
      assert.is(full.droppedSamples, 2000, 'every sample of the failed flush counted');
      assert.is(full.compactions, sealedBefore, 'nothing sealed while full');

      await unfill(path.join(mnt, 'filler'));
      const at = clock.t;
      round(50);
      await store.flush();
      const back = store.stats();
      assert.is(back.lastError, null);
      assert.is(back.droppedSamples, 2000);
      assert.ok(back.compactions > sealedBefore, `the log rolled while full is sealed once space is back (${JSON.stringify(back)})`);
      const rows = await store.readRaw('dev', 'p0', at + 1, clock.t + 1, 1000);
      assert.is(rows.length, 50, 'samples after the free are on disk and served');
    } finally {
      await store.close();
    }
  });
});

rootTest('a registry append cut short by a full disk leaves no half line; every series survives a reopen', async () => {
  await withTmpfs('1m', async (mnt) => {
    const dir = path.join(mnt, 'history');
    await mkdir(dir);
    const reg = await SeriesRegistry.open(dir, 65_536, silentLogger);
    for (let i = 0; i < 10; i++) reg.idFor('dev', `first-${i}`);
    await reg.persist();
    // ~40 KB of new lines against one free page: the append is short, then ENOSPC.
    for (let i = 0; i < 600; i++) reg.idFor(`device-with-a-long-name-${i}`, `point-${i}`);
    await fill(path.join(mnt, 'filler'), 4096);
    const err = await reg.persist().then(() => null, (e: unknown) => e as NodeJS.ErrnoException);
    assert.is(err?.code, 'ENOSPC');
    await unfill(path.join(mnt, 'filler'));
    await reg.persist();
    const again = await SeriesRegistry.open(dir, 65_536, silentLogger);
    assert.is(again.size, 610);
    assert.is(again.lookup('device-with-a-long-name-599', 'point-599'), reg.lookup('device-with-a-long-name-599', 'point-599'));
  });
});

test.run();
