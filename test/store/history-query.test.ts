import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EventBus } from '../../src/core/events.js';
import { GatewayError } from '../../src/core/errors.js';
import {
  type HistoryParams, type KnownPoint, attachHistory, formatLocalMs, historyAggregate, historyQuery, parseTimeText,
} from '../../src/store/history.js';
import { FakeClock, open, withDir } from './history-helpers.js';

const T0 = new Date(2024, 4, 1, 10, 0, 0).getTime(); // local time, as users type it
const known: KnownPoint = (device, point) =>
  device !== 'meter' ? 'unknown device' : point === 'power' || point === 'state' ? 'ok' : 'unknown point';

async function rejects(p: Promise<unknown>, code: string, message: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, GatewayError);
    assert.is((err as GatewayError).code, code);
    assert.is((err as GatewayError).message, message);
    return;
  }
  assert.unreachable(`expected "${message}"`);
}

test('time text: local, ISO 8601 and epoch ms; invalid text is refused', () => {
  assert.is(parseTimeText('2024-05-01 10:00:00'), T0);
  assert.is(parseTimeText('2024-05-01 10:00:00.250'), T0 + 250);
  assert.is(parseTimeText('2024-05-01'), new Date(2024, 4, 1).getTime());
  assert.is(parseTimeText('2024-05-01T08:00:00Z'), Date.UTC(2024, 4, 1, 8));
  assert.is(parseTimeText('2024-05-01T10:00:00+02:00'), Date.UTC(2024, 4, 1, 8));
  assert.is(parseTimeText('2024-05-01T10:00:00 02:00'), Date.UTC(2024, 4, 1, 8), 'unencoded + in a query string');
  assert.is(parseTimeText(String(T0)), T0);
  for (const bad of ['xyz', '2024-02-31 00:00:00', '2024-05-01 25:00:00', '', '12.5', '-5', '2024-05-01T10']) {
    assert.is(parseTimeText(bad), null, bad);
  }
  assert.is(formatLocalMs(T0 + 7), '2024-05-01 10:00:00.007');
});

test('history and aggregate: rows {time, ts, value}, inclusive end, default last hour, limit', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 2 * 3_600_000);
    const store = await open(dir, clock);
    try {
      for (let i = 0; i <= 120; i++) store.record('meter', 'power', T0 + i * 60_000, i);
      store.record('meter', 'state', T0, 'on');
      const now = clock.now();
      const last = await historyQuery(store, known, { device: 'meter', point: 'power' }, now);
      assert.is(last.length, 61, 'default range is the last hour, both ends included');
      assert.equal(last[0], { time: '2024-05-01 11:00:00.000', ts: T0 + 3_600_000, value: 60 });
      const q = { device: 'meter', point: 'power', start: '2024-05-01 10:00:00', end: String(T0 + 120_000) };
      assert.equal((await historyQuery(store, known, q, now)).map((r) => r.value), [0, 1, 2]);
      assert.equal((await historyQuery(store, known, { ...q, limit: '2' }, now)).map((r) => r.value), [0, 1]);
      assert.equal(await historyQuery(store, known, { ...q, point: 'state' }, now),
        [{ time: '2024-05-01 10:00:00.000', ts: T0, value: 'on' }]);
      const agg = await historyAggregate(store, known,
        { device: 'meter', point: 'power', function: 'avg', interval: '1h', start: '2024-05-01T10:00:00', end: String(now) }, now);
      assert.equal(agg, [
        { time: '2024-05-01 10:00:00.000', ts: T0, value: 29.5 },
        { time: '2024-05-01 11:00:00.000', ts: T0 + 3_600_000, value: 89.5 },
        { time: '2024-05-01 12:00:00.000', ts: T0 + 7_200_000, value: 120 },
      ]);
      const none = await historyAggregate(store, known,
        { device: 'meter', point: 'power', function: 'max', interval: '30m', start: String(T0 + 10 * 3_600_000) },
        T0 + 11 * 3_600_000);
      assert.equal(none, []);
    } finally {
      await store.close();
    }
  }));

test('bad parameters give clear errors naming the culprit', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0);
    const store = await open(dir, clock);
    const raw = (q: HistoryParams): Promise<unknown> => historyQuery(store, known, q, T0);
    const agg = (q: HistoryParams): Promise<unknown> =>
      historyAggregate(store, known, { device: 'meter', point: 'power', function: 'avg', interval: '1m', ...q }, T0);
    try {
      await rejects(raw({ point: 'power' }), 'BAD_REQUEST', 'device is required');
      await rejects(raw({ device: 'meter' }), 'BAD_REQUEST', 'point is required');
      await rejects(raw({ device: 'x', point: 'power' }), 'UNKNOWN_DEVICE', 'unknown device');
      await rejects(raw({ device: 'meter', point: 'temp' }), 'UNKNOWN_POINT', 'unknown point: temp');
      await rejects(raw({ device: 'meter', point: 'power', start: 'xyz' }), 'BAD_REQUEST',
        'invalid start "xyz" (use YYYY-MM-DD HH:MM:SS, ISO 8601 or epoch ms)');
      await rejects(raw({ device: 'meter', point: 'power', end: 'soon' }), 'BAD_REQUEST',
        'invalid end "soon" (use YYYY-MM-DD HH:MM:SS, ISO 8601 or epoch ms)');
      await rejects(raw({ device: 'meter', point: 'power', start: String(T0), end: String(T0 - 1) }), 'BAD_REQUEST',
        'end is before start');
      for (const limit of ['0', '100001', 'ten', '-1', '1.5']) {
        await rejects(raw({ device: 'meter', point: 'power', limit }), 'BAD_REQUEST', 'limit must be 1..100000');
      }
      await rejects(agg({ function: 'median' }), 'BAD_REQUEST',
        'unknown function "median" (use avg, min, max, sum, count, first, last)');
      await rejects(agg({ function: undefined }), 'BAD_REQUEST',
        'function is required (use avg, min, max, sum, count, first, last)');
      await rejects(agg({ interval: '0s' }), 'BAD_REQUEST', 'interval must be > 0');
      await rejects(agg({ interval: 'soon' }), 'BAD_REQUEST', 'invalid interval "soon" (examples: 30s, 5m, 1h, 1d)');
      await rejects(agg({ interval: '' }), 'BAD_REQUEST', 'interval is required (a duration such as 1m, 1h, 1d)');
      await rejects(agg({ interval: '1ms', start: '0' }), 'BAD_REQUEST',
        `interval 1ms is too small for the range: ${T0 + 1} buckets (max 100000)`);
      await rejects(agg({ device: 'nope' }), 'UNKNOWN_DEVICE', 'unknown device');
    } finally {
      await store.close();
    }
  }));

test('attachHistory records dataChange values, deletes on deviceDeleted, and detaches', () =>
  withDir(async (dir) => {
    const clock = new FakeClock(T0 + 60_000);
    const store = await open(dir, clock);
    const bus = new EventBus();
    const detach = attachHistory(bus, store);
    try {
      bus.emit('dataChange', { id: 'm', values: [{ name: 'power', value: 5 }, { name: 'mode', value: 'eco' }], time: T0 });
      assert.equal(await store.readRaw('m', 'power', T0, T0 + 1, 10), [{ ts: T0, value: 5 }]);
      assert.equal(await store.readRaw('m', 'mode', T0, T0 + 1, 10), [{ ts: T0, value: 'eco' }]);
      bus.emit('deviceDeleted', { id: 'm' });
      await store.flush(); // the deletion is queued before this flush
      assert.equal(await store.readRaw('m', 'power', T0, T0 + 1, 10), []);
      detach();
      bus.emit('dataChange', { id: 'm', values: [{ name: 'power', value: 6 }], time: T0 + 5 });
      assert.equal(await store.readRaw('m', 'power', T0, T0 + 10, 10), []);
    } finally {
      detach();
      await store.close();
    }
  }));


test('a parameter given twice is the user\'s error, named', async () => {
  const { historyQuery } = await import('../../src/store/history/query.js');
  const store = {} as Parameters<typeof historyQuery>[0];
  try {
    await historyQuery(store, () => 'ok', { device: 'd', point: 'p', start: ['1', '2'] as unknown as string }, Date.now());
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /^start is given more than once$/);
  }
});

test.run();
