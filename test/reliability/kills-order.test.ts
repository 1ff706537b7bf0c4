/**
 * The kills campaign's ordering check against the real shadow and store: an update stamped in the save's own
 * millisecond may come after the snapshot (a poll timer due in that ms), so a restore without it is right;
 * an update stamped before the save's millisecond must be in it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { openShadowStore } from '../../src/store/shadow-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { snapshotOrder } from '../../scripts/reliability/kills/checks.js';
import { COUNTER, DEVICE, SETPOINT } from '../../scripts/reliability/kills/config.js';
import { readShadow } from '../../scripts/reliability/kills/disk-oracle.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** A store in a temp data dir with m1's counter saved at 7736; then 7737 arrives in the save's own ms. */
async function savedThenSameMs(): Promise<{ dir: string; seen: Map<number, number>; savedAt: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-kills-order-'));
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: 30_000, clock });
  shadow.AddDevice(DEVICE, 'rig');
  const seen = new Map<number, number>();
  clock.advance(100);
  shadow.SetDevicePoints(DEVICE, { [COUNTER]: 7736, [SETPOINT]: 20 });
  seen.set(7736, clock.now());
  clock.advance(100);
  const store = await openShadowStore({ dir: path.join(dir, 'shadow'), log: silentLogger });
  await store.load();
  const savedAt = clock.now();
  const saving = store.saveShadow(shadow, savedAt);
  // The poll after the save, in the same millisecond (what kill 147 of a full run saw).
  shadow.SetDevicePoints(DEVICE, { [COUNTER]: 7737 });
  seen.set(7737, clock.now());
  await saving;
  await store.close();
  return { dir, seen, savedAt };
}

test('an update in the save\'s own millisecond may be missing from it; one from before may not', async () => {
  const { dir, seen, savedAt } = await savedThenSameMs();
  try {
    const disk = await readShadow(dir);
    assert.equal(disk.counter, { value: 7736, updatedAt: savedAt - 100 });
    assert.is(disk.savedAt, savedAt);
    assert.is(seen.get(7737), savedAt, 'stamped in the save\'s millisecond');
    assert.equal(snapshotOrder(seen, disk.counter!, disk.savedAt), []);
    // The same update one millisecond earlier was applied before the snapshot: a restore without it is a loss.
    const earlier = new Map(seen).set(7737, savedAt - 1);
    assert.equal(snapshotOrder(earlier, disk.counter!, disk.savedAt), [
      `restored counter 7736, but 7737 was seen at ${savedAt - 1}, before the save at ${savedAt}`,
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a restored value newer than its save, or with another update time than a client saw, is wrong', () => {
  const seen = new Map([[5, 1000], [6, 1010]]);
  assert.equal(snapshotOrder(seen, { value: 6, updatedAt: 1010 }, 1010), []);
  assert.equal(snapshotOrder(seen, { value: 6, updatedAt: 1011 }, 1010), [
    'restored counter 6 updated at 1011, after the save at 1010',
    'restored counter 6 at 1011, a client saw it at 1010',
  ]);
  assert.equal(snapshotOrder(seen, { value: 4, updatedAt: 990 }, 1005), ['restored counter 4, but 5 was seen at 1000, before the save at 1005']);
});

test.run();
