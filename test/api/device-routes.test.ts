/** device/readPoint, device/writePoint (GET, POST query/JSON/form, batch) and device/writePoints: data and seed error texts. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call, get, postJson, withApi } from './helpers.js';

const SEED_READ = 'the protocol does not support getting connector';
const SEED_READONLY = 'point is readonly, can not write';
const SEED_UNKNOWN = 'unknown device';

test('readPoint: real read through the IO, data is the value', () =>
  withApi({}, async (api) => {
    const r = await get(api, '/api/v1/device/readPoint?id=boiler&point=mode');
    assert.equal([r.status, r.body.success, r.body.data], [200, true, 'auto']);
    assert.equal(api.io.reads, [{ id: 'boiler', point: 'mode' }]);
    assert.is((await get(api, '/api/v1/device/readPoint?id=boiler&point=temp')).body.data, 21.5);
  }));

test('readPoint: seed and clear error texts', () =>
  withApi({}, async (api) => {
    const cases: [string, string][] = [
      ['/api/v1/device/readPoint?id=pusher&point=level', SEED_READ],
      ['/api/v1/device/readPoint?id=ghost&point=level', SEED_UNKNOWN],
      ['/api/v1/device/readPoint?id=boiler&point=ghost', 'unknown point: ghost'],
      ['/api/v1/device/readPoint?id=boiler&point=reset', 'point is writeonly, can not read: reset'],
      ['/api/v1/device/readPoint?point=temp', 'id is required'],
      ['/api/v1/device/readPoint?id=boiler', 'point is required'],
      ['/api/v1/device/readPoint', 'id is required'],
    ];
    for (const [path, msg] of cases) {
      const r = await get(api, path);
      assert.equal([r.status, r.body.success, r.body.errorCode, r.body.errorMsg, r.body.data], [200, false, 500, msg, null], path);
    }
  }));

test('an unexpected error is "internal error" and its text never reaches the client', () =>
  withApi({}, async (api) => {
    for (const r of [
      await get(api, '/api/v1/device/readPoint?id=broken&point=x'),
      await postJson(api, '/api/v1/device/writePoints', { id: 'broken', values: [{ name: 'x', value: 1 }] }),
    ]) {
      assert.equal([r.status, r.body.errorCode, r.body.errorMsg], [200, 500, 'internal error']);
      assert.not.match(r.text, 'SECRET');
    }
  }));

test('writePoint GET with query: value passed through as text, shadow holds the read-back value', () =>
  withApi({}, async (api) => {
    const r = await get(api, '/api/v1/device/writePoint?id=boiler&point=setpoint&value=23.5');
    assert.equal([r.body.success, r.body.data], [true, null]);
    assert.equal(api.io.writes, [{ id: 'boiler', values: [{ name: 'setpoint', value: '23.5' }] }]);
    assert.is(api.shadow.GetDevicePoint('boiler', 'setpoint'), 23.5);
    assert.is(api.shadow.GetWritePointValue('boiler', 'setpoint'), 23.5);
  }));

test('writePoint POST: query, JSON body, form body, and curl -d JSON labelled as a form', () =>
  withApi({}, async (api) => {
    let r = await call(api, 'POST', '/api/v1/device/writePoint?id=boiler&point=mode&value=eco');
    assert.is(r.body.success, true);
    r = await postJson(api, '/api/v1/device/writePoint', { id: 'boiler', point: 'setpoint', value: 19 });
    assert.is(r.body.success, true);
    r = await call(api, 'POST', '/api/v1/device/writePoint', {
      body: 'id=boiler&point=relay&value=1', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.is(r.body.success, true);
    r = await call(api, 'POST', '/api/v1/device/writePoint', {
      body: '{"id":"boiler","point":"mode","value":"manual"}', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.is(r.body.success, true);
    assert.equal(api.io.writes.map((w) => w.values[0]), [
      { name: 'mode', value: 'eco' }, { name: 'setpoint', value: 19 }, { name: 'relay', value: '1' }, { name: 'mode', value: 'manual' },
    ]);
    assert.equal([api.shadow.GetDevicePoint('boiler', 'mode'), api.shadow.GetDevicePoint('boiler', 'relay')], ['manual', 1]);
    // The body wins over the query for the same field.
    await postJson(api, '/api/v1/device/writePoint?id=boiler&point=setpoint&value=1', { value: 2 });
    assert.equal(api.io.writes.at(-1), { id: 'boiler', values: [{ name: 'setpoint', value: 2 }] });
  }));

test('writePoint: seed error texts and missing parameters, nothing written', () =>
  withApi({}, async (api) => {
    const cases: [string, string][] = [
      ['/api/v1/device/writePoint?id=boiler&point=temp&value=1', SEED_READONLY],
      ['/api/v1/device/writePoint?id=ghost&point=temp&value=1', SEED_UNKNOWN],
      ['/api/v1/device/writePoint?id=boiler&point=ghost&value=1', 'unknown point: ghost'],
      ['/api/v1/device/writePoint?id=boiler&point=setpoint&value=abc', 'value "abc" is not a float for point setpoint'],
      ['/api/v1/device/writePoint?point=setpoint&value=1', 'id is required'],
      ['/api/v1/device/writePoint?id=boiler&value=1', 'point is required'],
      ['/api/v1/device/writePoint?id=boiler&point=setpoint', 'value is required'],
      ['/api/v1/device/writePoint?id=boiler&point=setpoint&value=', 'value is required'],
      ['/api/v1/device/writePoint?id=boiler&point=setpoint&value=1&value=2', 'value must be given once'],
    ];
    for (const [path, msg] of cases) {
      for (const method of ['GET', 'POST']) {
        const r = await call(api, method, path);
        assert.equal([r.status, r.body.errorCode, r.body.errorMsg], [200, 500, msg], `${method} ${path}`);
      }
    }
    const json = await postJson(api, '/api/v1/device/writePoint', { id: 'boiler', point: 'temp', value: 3 });
    assert.is(json.body.errorMsg, SEED_READONLY);
    const wrongType = await postJson(api, '/api/v1/device/writePoint', { id: 7, point: 'setpoint', value: 3 });
    assert.is(wrongType.body.errorMsg, 'id must be a string');
    const objValue = await postJson(api, '/api/v1/device/writePoint', { id: 'boiler', point: 'setpoint', value: { a: 1 } });
    assert.is(objValue.body.errorMsg, 'value must be a number, string or boolean');
    assert.equal(api.io.writes, []);
    assert.is(api.shadow.GetWritePointValue('boiler', 'setpoint'), null);
  }));

for (const path of ['/api/v1/device/writePoint', '/api/v1/device/writePoints']) {
  test(`batch on POST ${path}: {id, values:[{name, value}]}`, () =>
    withApi({}, async (api) => {
      const r = await postJson(api, path, { id: 'boiler', values: [{ name: 'setpoint', value: 18.5 }, { name: 'mode', value: 'off' }, { name: 'relay', value: 1 }] });
      assert.equal([r.status, r.body.success, r.body.data], [200, true, null]);
      assert.equal(api.io.writes, [{ id: 'boiler', values: [{ name: 'setpoint', value: 18.5 }, { name: 'mode', value: 'off' }, { name: 'relay', value: 1 }] }]);
      assert.equal([api.shadow.GetDevicePoint('boiler', 'setpoint'), api.shadow.GetDevicePoint('boiler', 'mode'), api.shadow.GetDevicePoint('boiler', 'relay')], [18.5, 'off', 1]);
    }));

  test(`batch on POST ${path}: errors, validated whole so nothing is written`, () =>
    withApi({}, async (api) => {
      const cases: [unknown, string][] = [
        [{ id: 'boiler', values: [{ name: 'setpoint', value: 1 }, { name: 'temp', value: 2 }] }, SEED_READONLY],
        [{ id: 'ghost', values: [{ name: 'setpoint', value: 1 }] }, SEED_UNKNOWN],
        [{ id: 'boiler', values: [{ name: 'setpoint', value: 1 }, { name: 'nope', value: 2 }] }, 'unknown point: nope'],
        [{ id: 'boiler', values: [{ name: 'setpoint', value: 1 }, { name: 'relay', value: 1.5 }] }, 'value 1.5 is not an int for point relay'],
        [{ values: [{ name: 'setpoint', value: 1 }] }, 'id is required'],
        [{ id: 'boiler', values: [] }, 'values must be a non-empty array'],
        [{ id: 'boiler', values: 'setpoint=1' }, 'values must be a non-empty array'],
        [{ id: 'boiler', values: null }, 'values must be a non-empty array'],
        [{ id: 'boiler', values: [{ name: 'setpoint', value: 1 }, { name: 'mode', value: 'a' }, { value: 3 }] }, 'values[2].name is required'],
        [{ id: 'boiler', values: [{ name: 5, value: 1 }] }, 'values[0].name must be a string'],
        [{ id: 'boiler', values: [{ name: 'setpoint' }] }, 'values[0].value is required'],
        [{ id: 'boiler', values: [{ name: 'setpoint', value: [1] }] }, 'values[0].value must be a number, string or boolean'],
        [{ id: 'boiler', values: [7] }, 'values[0] must be an object'],
      ];
      for (const [body, msg] of cases) {
        const r = await postJson(api, path, body);
        assert.equal([r.status, r.body.errorCode, r.body.errorMsg], [200, 500, msg], JSON.stringify(body));
      }
      assert.equal(api.io.writes, []);
      assert.is(api.shadow.GetWritePointValue('boiler', 'setpoint'), null);
    }));
}

test('writePoints needs a values array even with query parameters', () =>
  withApi({}, async (api) => {
    const r = await call(api, 'POST', '/api/v1/device/writePoints?id=boiler&point=setpoint&value=1');
    assert.is(r.body.errorMsg, 'values must be a non-empty array');
    assert.equal(api.io.writes, []);
  }));

test.run();
