import { readdir, stat } from 'node:fs/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FakeClock, open, withDir, within } from './history-helpers.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
const DAY = 86_400_000;

test('round trip: values, text and times come back in order, before and after flush and restart', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 10_000);
    let store = await open(dir, clock);
    try {
      store.record('meter', 'power', T0 + 2, 2.5);
      store.record('meter', 'power', T0 + 1, -1.25);
      store.record('meter', 'state', T0 + 3, 'running ✓');
      store.record('meter', 'power', T0 + 1000, 1e300);
      store.record('other', 'power', T0 + 5, 99);
      const expected = [{ ts: T0 + 1, value: -1.25 }, { ts: T0 + 2, value: 2.5 }, { ts: T0 + 1000, value: 1e300 }];
      assert.equal(await store.readRaw('meter', 'power', T0, T0 + 2000, 100), expected, 'unflushed samples are visible');
      await within(store.flush());
      assert.equal(await store.readRaw('meter', 'power', T0, T0 + 2000, 100), expected);
      assert.equal(await store.readRaw('meter', 'state', T0, T0 + 2000, 100), [{ ts: T0 + 3, value: 'running ✓' }]);
      assert.equal(await store.readRaw('meter', 'power', T0 + 2, T0 + 1000, 100), [{ ts: T0 + 2, value: 2.5 }],
        'range is [start, endEx)');
      assert.equal(await store.readRaw('meter', 'power', T0, T0 + 2000, 2), expected.slice(0, 2), 'limit keeps the oldest');
      assert.equal(await store.readRaw('meter', 'nope', T0, T0 + 2000, 100), []);
      await within(store.close());
      store = await open(dir, clock);
      assert.equal(await store.readRaw('meter', 'power', T0, T0 + 2000, 100), expected, 'survives a restart');
      assert.equal(await store.readRaw('other', 'power', T0, T0 + 2000, 100), [{ ts: T0 + 5, value: 99 }]);
    } finally {
      await store.close();
    }
  }));

test('sealed segments answer the same as the log, and a sample costs at most 16 bytes on disk', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { segmentSpan: DAY });
    try {
      // 1 Hz for one day on 10 points, flushed every 30 s.
      const n = 10;
      for (let s = 0; s < DAY / 1000; s++) {
        for (let p = 0; p < n; p++) store.record('dev', `p${p}`, T0 + s * 1000, Math.sin(s / 100) * 100 + p);
        if (s % 30 === 29) {
          clock.t = T0 + s * 1000;
          await store.flush();
        }
      }
      clock.t = T0 + DAY + 5_000; // next day: the log is sealed
      await within(store.flush(), 30_000);
      const st = store.stats();
      assert.ok(st.compactions >= 1, 'sealed');
      const perSample = st.bytesOnDisk / (n * DAY / 1000);
      assert.ok(perSample <= 16, `bytes per sample ${perSample.toFixed(2)}`);
      const rows = await store.readRaw('dev', 'p3', T0, T0 + DAY, 100_000);
      assert.is(rows.length, DAY / 1000);
      assert.is(rows[0]!.ts, T0);
      assert.is(rows[4321]!.value, Math.sin(4321 / 100) * 100 + 3);
      const files = await readdir(dir);
      assert.ok(files.some((f) => f.endsWith('.seg')), files.join());
    } finally {
      await store.close();
    }
  }));

test('retention: old samples vanish from queries at once and their segments are deleted', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { retention: 2 * DAY, segmentSpan: DAY });
    try {
      for (let d = 0; d < 5; d++) {
        clock.t = T0 + d * DAY;
        for (let i = 0; i < 100; i++) store.record('dev', 'temp', clock.t + i * 1000, d);
        await store.flush();
      }
      clock.t = T0 + 4 * DAY + 200_000;
      await store.flush();
      const rows = await store.readRaw('dev', 'temp', 0, clock.t + 1, 100_000);
      assert.ok(rows.every((r) => r.ts >= clock.t - 2 * DAY), 'nothing older than retention is returned');
      assert.equal([...new Set(rows.map((r) => r.value))], [3, 4]);
      assert.ok(store.stats().oldestTs! >= T0 + 3 * DAY, 'expired segments were removed');
      const segFiles = (await readdir(dir)).filter((f) => /\.(seg|log)$/.test(f));
      assert.ok(segFiles.length <= 3, segFiles.join());
    } finally {
      await store.close();
    }
  }));

test('disk cap: oldest segments go first and the directory never exceeds max_disk', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const maxDisk = 256 * 1024;
    const store = await open(dir, clock, { maxDisk, segmentBytes: 32 * 1024 });
    try {
      let t = T0;
      for (let round = 0; round < 60; round++) {
        for (let i = 0; i < 500; i++, t += 1000) store.record('dev', `p${i % 5}`, t, i);
        clock.t = t;
        await store.flush();
        let onDisk = 0;
        for (const f of await readdir(dir)) onDisk += (await stat(`${dir}/${f}`)).size;
        assert.ok(onDisk <= maxDisk, `round ${round}: ${onDisk} bytes on disk`);
        assert.ok(store.stats().bytesOnDisk <= maxDisk);
      }
      const latest = await store.readRaw('dev', 'p0', t - 10_000, t, 100);
      assert.ok(latest.length > 0, 'recent data kept');
      const oldest = await store.readRaw('dev', 'p0', T0, T0 + 10_000, 100);
      assert.is(oldest.length, 0, 'oldest data evicted');
    } finally {
      await store.close();
    }
  }));

test('deleteDevice: its history is gone, also after restart; a new device with the same id starts empty', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 60_000);
    let store = await open(dir, clock);
    try {
      store.record('a', 'x', T0, 1);
      store.record('b', 'x', T0, 2);
      await store.flush();
      store.record('a', 'x', T0 + 1, 3); // still buffered when deleted
      await store.deleteDevice('a');
      assert.equal(await store.readRaw('a', 'x', T0, T0 + 10, 10), []);
      store.record('a', 'x', T0 + 5, 7);
      await store.close();
      store = await open(dir, clock);
      assert.equal(await store.readRaw('a', 'x', T0, T0 + 10, 10), [{ ts: T0 + 5, value: 7 }]);
      assert.equal(await store.readRaw('b', 'x', T0, T0 + 10, 10), [{ ts: T0, value: 2 }]);
    } finally {
      await store.close();
    }
  }));

test('memory is bounded: a full buffer drops and counts instead of growing; bad samples are refused', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { bufferSamples: 100, maxSeries: 2 });
    try {
      for (let i = 0; i < 1000; i++) store.record('d', 'p', T0 + i, i);
      store.record('d', 'q', T0, 1);
      store.record('d', 'r', T0, 1); // third series: over maxSeries
      store.record('d', 'p', NaN, 1);
      store.record('d', 'p', T0, Infinity);
      store.record('d', 'p', T0, { no: 1 } as unknown as number);
      const st = store.stats();
      assert.ok(st.bufferedSamples <= 200, `buffered ${st.bufferedSamples}`);
      assert.ok(st.droppedSamples >= 1000 - 200, `dropped ${st.droppedSamples}`);
      assert.is(st.series, 2);
      await store.flush();
      assert.is(store.stats().bufferedSamples, 0);
    } finally {
      await store.close();
    }
  }));

test('an early flush starts at three quarters of the buffer, not before: fewer flushes, fewer block headers', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock, { bufferSamples: 100 });
    try {
      for (let i = 0; i < 74; i++) store.record('d', 'p', T0 + i, i);
      await within(store.flush());
      assert.is(store.stats().flushes, 1);
      for (let i = 0; i < 74; i++) store.record('d', 'p', T0 + 100 + i, i);
      await new Promise((r) => setImmediate(r));
      assert.is(store.stats().flushes, 1, '74 of 100: no early flush yet');
      store.record('d', 'p', T0 + 200, 75);
      await within(new Promise<void>((resolve) => {
        const check = (): void => (store.stats().flushes === 2 ? resolve() : void setTimeout(check, 5));
        check();
      }));
      assert.is(store.stats().bufferedSamples, 0, 'the 75th sample started it');
    } finally {
      await store.close();
    }
  }));

test.run();
