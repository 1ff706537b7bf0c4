/** GET shadow/all, shadow/device, shadow/devicePoint, shadow/stats, health/shadow, ok: REST shapes and time texts. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { get, withApi } from './helpers.js';

const prevTz = process.env.TZ;
/** Local time formatting depends on TZ: Node re-reads process.env.TZ when it is assigned. */
async function inTz<T>(tz: string, fn: () => Promise<T>): Promise<T> {
  process.env.TZ = tz;
  try {
    return await fn();
  } finally {
    if (prevTz === undefined) delete process.env.TZ;
    else process.env.TZ = prevTz;
  }
}

test('shadow/all: REST device shape, sorted by id, local times, zero write time, ttl text', () =>
  inTz('UTC', () => withApi({}, async (api) => {
    api.shadow.AddDevice('aaa', 'first-model', '90s');
    const r = await get(api, '/api/v1/shadow/all');
    assert.is(r.status, 200);
    assert.ok(r.headers.get('content-type')?.startsWith('application/json'));
    const data = r.body.data as any[];
    assert.equal(data.map((d) => d.id), ['aaa', 'boiler', 'broken', 'pusher']);
    const boiler = data[1];
    assert.equal(Object.keys(boiler).sort(),
      ['disconnect_times', 'id', 'model', 'online', 'points', 'state', 'ttl', 'updated_at', 'version']);
    assert.is(boiler.model, 'boiler-model');
    assert.is(boiler.online, true);
    assert.is(boiler.state, 'Online');
    assert.is(boiler.ttl, '5m0s');
    assert.is(boiler.disconnect_times, 0);
    assert.is(boiler.updated_at, '2024-03-05 06:07:08');
    assert.is(typeof boiler.version, 'number');
    assert.ok(Array.isArray(boiler.points));
    assert.equal(boiler.points[0], {
      name: 'temp', value: 21.5, write_value: null, updated_at: '2024-03-05 06:07:08', write_time: '0001-01-01 00:00:00',
    });
    // A point that never got data: null value, zero times.
    assert.equal(boiler.points[1], {
      name: 'setpoint', value: null, write_value: null, updated_at: '0001-01-01 00:00:00', write_time: '0001-01-01 00:00:00',
    });
    const aaa = data[0];
    assert.is(aaa.ttl, '1m30s');
    assert.is(aaa.online, false);
    assert.is(aaa.state, 'Offline');
    assert.is(aaa.updated_at, '0001-01-01 00:00:00');
    assert.equal(aaa.points, []);
  })));

test('times are local time, not UTC', () =>
  inTz('Asia/Shanghai', () => withApi({}, async (api) => {
    const r = await get(api, '/api/v1/shadow/devicePoint?id=boiler&point=temp');
    assert.is(r.body.data.updated_at, '2024-03-05 14:07:08');
  })));

test('shadow/all is [] when the shadow is empty', () =>
  withApi({ seed: false }, async (api) => {
    const r = await get(api, '/api/v1/shadow/all');
    assert.equal(r.body.data, []);
    assert.is(r.text, '{"success":true,"errorCode":200,"errorMsg":"","data":[]}');
  }));

test('shadow/device: one device; missing id and unknown device texts', () =>
  inTz('UTC', () => withApi({}, async (api) => {
    const r = await get(api, '/api/v1/shadow/device?id=boiler');
    assert.is(r.body.data.id, 'boiler');
    assert.is(r.body.data.points.length, 5);
    assert.is(r.body.data.updated_at, '2024-03-05 06:07:08');
    const missing = await get(api, '/api/v1/shadow/device');
    assert.equal([missing.status, missing.body.errorCode, missing.body.errorMsg], [200, 500, 'id is required']);
    const empty = await get(api, '/api/v1/shadow/device?id=');
    assert.is(empty.body.errorMsg, 'id is required');
    const unknown = await get(api, '/api/v1/shadow/device?id=nope');
    assert.equal([unknown.status, unknown.body.success, unknown.body.errorMsg, unknown.body.data], [200, false, 'unknown device', null]);
    const twice = await get(api, '/api/v1/shadow/device?id=boiler&id=pusher');
    assert.is(twice.body.errorMsg, 'id must be given once');
  })));

test('shadow/devicePoint: one DevicePoint with write value and write time after a write', () =>
  inTz('UTC', () => withApi({}, async (api) => {
    api.clock.t = T1;
    await get(api, '/api/v1/device/writePoint?id=boiler&point=setpoint&value=22.5');
    const r = await get(api, '/api/v1/shadow/devicePoint?id=boiler&point=setpoint');
    assert.equal(r.body.data, {
      name: 'setpoint', value: 22.5, write_value: 22.5, updated_at: '2024-03-05 06:08:09', write_time: '2024-03-05 06:08:09',
    });
    const unknownPoint = await get(api, '/api/v1/shadow/devicePoint?id=boiler&point=nope');
    assert.is(unknownPoint.body.errorMsg, 'unknown point: nope');
    const unknownDevice = await get(api, '/api/v1/shadow/devicePoint?id=nope&point=temp');
    assert.is(unknownDevice.body.errorMsg, 'unknown device');
    assert.is((await get(api, '/api/v1/shadow/devicePoint?id=boiler')).body.errorMsg, 'point is required');
    assert.is((await get(api, '/api/v1/shadow/devicePoint?point=temp')).body.errorMsg, 'id is required');
  })));
const T1 = Date.UTC(2024, 2, 5, 6, 8, 9);

test('shadow/stats: texts for memory and hit rate, counts', () =>
  withApi({}, async (api) => {
    const first = await get(api, '/api/v1/shadow/stats');
    const s = first.body.data;
    assert.equal(Object.keys(s).sort(), ['cacheHitRate', 'dataPoints', 'memoryUsage', 'onlineDevices', 'totalDevices']);
    assert.is(s.cacheHitRate, '0.00%');
    assert.match(s.memoryUsage, /^\d+(\.\d)? (B|KB|MB|GB)$/);
    assert.equal([s.totalDevices, s.onlineDevices, s.dataPoints], [3, 1, 7]);
    // 3 lookups with a value, 1 without (pusher is offline): 75.00%.
    api.shadow.GetDevicePoint('boiler', 'temp');
    api.shadow.GetDevicePoint('boiler', 'temp');
    api.shadow.GetDevicePoint('boiler', 'temp');
    api.shadow.GetDevicePoint('pusher', 'level');
    assert.is((await get(api, '/api/v1/shadow/stats')).body.data.cacheHitRate, '75.00%');
  }));

test('health/shadow returns the report the gateway builds', () =>
  withApi({}, async (api) => {
    let r = await get(api, '/api/v1/health/shadow');
    assert.equal(r.body.data, { status: 'healthy', checks: { shadow: { devices: 3 } } });
    api.health.report = { status: 'degraded', checks: { persistence: 'last save failed' } };
    r = await get(api, '/api/v1/health/shadow');
    assert.equal([r.status, r.body.success, r.body.data.status], [200, true, 'degraded']);
  }));

test('GET /api/v1/ok answers true (upstream liveness probe)', () =>
  withApi({}, async (api) => {
    assert.is((await get(api, '/api/v1/ok')).body.data, true);
  }));

test('HEAD on a GET route: 200, no body', () =>
  withApi({}, async (api) => {
    const res = await fetch(api.url('/api/v1/shadow/all'), { method: 'HEAD', signal: AbortSignal.timeout(5000) });
    assert.is(res.status, 200);
    assert.is(await res.text(), '');
  }));

test.run();
