/**
 * A disk that fills up in the middle of a journal record (a real tmpfs: the write is short, and only the next
 * write says ENOSPC). Half a record must not stay in the journal: a load stops at the first bad record, so
 * every delta appended after it once space is back would be silently ignored at the next restore.
 */
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { takeSnapshot } from '../../src/core/snapshot.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { needs } from '../helpers/peers.js';
import { fill, tmpfsUnavailable, unfill, withTmpfs } from '../helpers/tmpfs.js';

const why = tmpfsUnavailable();
const rootTest = needs(why, 'shadow journal on a full disk');

const TTL = 600_000;

rootTest('a record cut short by a full disk is cut back; deltas after the space returns are restored', async () => {
  await withTmpfs('1m', async (mnt) => {
    const dir = path.join(mnt, 'shadow');
    const now = { t: Date.UTC(2026, 0, 1) };
    const shadow = new Shadow({ maxDevices: 40, maxPoints: 2000, defaultTtl: TTL, clock: { now: () => now.t, mono: () => now.t } });
    for (let d = 0; d < 40; d++) shadow.AddDevice(`dev-${d}`, 'm', TTL, { points: Array.from({ length: 50 }, (_, i) => ({ name: `p${i}` })) });
    // Every value moves each round: a delta is ~2,000 points, far more than the page left free below.
    const round = (r: number): void => {
      now.t += 1000;
      for (let d = 0; d < 40; d++) shadow.SetDevicePoints(`dev-${d}`, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, r * 1000 + d + i / 8])));
    };
    const store = await openShadowStore({ dir, log: silentLogger });
    await store.load();
    round(0);
    await store.saveShadow(shadow, now.t);
    round(1);
    await store.saveShadow(shadow, now.t);
    assert.is(store.deltaSaves, 1);

    await fill(path.join(mnt, 'filler'), 4096);
    round(2);
    const failed = await store.saveShadow(shadow, now.t).then(() => null, (err: unknown) => err as NodeJS.ErrnoException);
    assert.is(failed?.code, 'ENOSPC', 'the save that did not fit says so');
    await unfill(path.join(mnt, 'filler'));

    for (let r = 3; r <= 5; r++) {
      round(r);
      await store.saveShadow(shadow, now.t);
    }
    const loaded = await (await openShadowStore({ dir, log: silentLogger })).load();
    assert.equal(loaded.problems, []);
    const expected = takeSnapshot(shadow, now.t);
    assert.equal([...loaded.snapshot!.pts.num], [...expected.pts.num], 'the values of the last save, not of the one before the full disk');
    assert.is(loaded.snapshot!.savedAt, now.t);
  });
});

test.run();
