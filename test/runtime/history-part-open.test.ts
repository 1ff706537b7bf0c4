/**
 * The history part opens its store once the gateway is ready, not during the start: what the shadow records
 * before that (samples, a device deleted) reaches the store in order, a query waits for the open, and a start
 * cut short before ready still writes what was recorded.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { Shadow } from '../../src/core/shadow.js';
import { createHistoryPart } from '../../src/runtime/history.js';
import { silentLogger } from '../../src/util/logger.js';
import { FakeClock, open, withDir } from '../store/history-helpers.js';

const T0 = Date.UTC(2026, 0, 5, 12);

function setup(dir: string): { shadow: Shadow; clock: FakeClock; part: ReturnType<typeof createHistoryPart> } {
  const config = validateConfig({
    gateway: { id: 'h', data_dir: dir, log_level: 'silent' }, http: { port: 0 }, mqtt: { enable: false },
    buses: [], devices: [],
  }, { env: {} });
  const clock = new FakeClock(T0);
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: 60_000, clock: { now: clock.now, mono: clock.mono } });
  for (const id of ['a', 'b']) shadow.AddDevice(id, 'm', 60_000, { points: [{ name: 'v' }] });
  return { shadow, clock, part: createHistoryPart(config, dir, shadow, clock, silentLogger) };
}

const values = async (dir: string, clock: FakeClock, device: string): Promise<unknown[]> => {
  const store = await open(join(dir, 'history'), clock);
  try {
    return (await store.readRaw(device, 'v', 0, T0 + 3_600_000, 100)).map((r) => r.value);
  } finally {
    await store.close();
  }
};

test('samples and a deletion recorded before ready reach the store in order once it opens', async () => {
  await withDir(async (dir) => {
    const { shadow, clock, part } = setup(dir);
    await part.start();
    shadow.SetDevicePoints('a', { v: 1 });
    shadow.SetDevicePoints('b', { v: 10 });
    clock.t += 1000;
    shadow.SetDevicePoints('a', { v: 2 });
    shadow.DeleteDevice('b');
    // Not opened yet: nothing of the store is on disk, and the figures say it is opening.
    assert.equal(await readdir(dir), []);
    assert.equal(part.stats(), { enabled: true, opening: true, bufferedSamples: 3, droppedSamples: 0 });
    part.ready?.();
    await part.opened();
    assert.is(part.stats()['recordedSamples'], 3, 'counted as an open store counts them');
    assert.is(part.stats()['series'], 1, "b's series went with b");
    clock.t += 1000;
    shadow.SetDevicePoints('a', { v: 3 });
    await part.stop();
    assert.equal(await values(dir, clock, 'a'), [1, 2, 3]);
    assert.equal(await values(dir, clock, 'b'), []);
  });
});

test('a flush asked for before ready opens the store and writes what waits', async () => {
  await withDir(async (dir) => {
    const { shadow, clock, part } = setup(dir);
    await part.start();
    shadow.SetDevicePoints('a', { v: 5 });
    await part.flush();
    assert.is(part.stats()['enabled'], undefined, 'the store\'s own figures');
    assert.is(part.stats()['recordedSamples'], 1);
    await part.stop();
    assert.equal(await values(dir, clock, 'a'), [5]);
  });
});

test('a start stopped before ready still writes the samples recorded', async () => {
  await withDir(async (dir) => {
    const { shadow, clock, part } = setup(dir);
    await part.start();
    shadow.SetDevicePoints('a', { v: 7 });
    await part.stop();
    assert.equal(await values(dir, clock, 'a'), [7]);
  });
});

test('a store that cannot open: the gateway runs without history, says why, and keeps nothing waiting', async () => {
  await withDir(async (dir) => {
    const { shadow, part } = setup(dir);
    await writeFile(join(dir, 'history'), 'a file where the directory goes');
    await part.start();
    shadow.SetDevicePoints('a', { v: 1 });
    part.ready?.();
    await part.opened();
    const stats = part.stats();
    assert.is(stats['enabled'], false);
    assert.match(String(stats['error']), /EEXIST|ENOTDIR/);
    shadow.SetDevicePoints('a', { v: 2 });
    assert.equal(part.stats(), stats, 'nothing recorded or buffered after the failure');
    await part.stop();
  });
});

test.run();
