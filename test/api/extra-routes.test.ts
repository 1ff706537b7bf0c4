/** Routes the gateway mounts through ctx.extraRoutes (history) get the same auth, envelope, 404/405 and error mapping. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { badRequest } from '../../src/core/errors.js';
import { call, get, withApi } from './helpers.js';

const history = { extraRoutes: (_app: unknown, kit: import('../../src/api/index.js').RouteKit) => {
  kit.route('GET', '/history', 'read', (req) => {
    if (!req.query['device']) throw badRequest('device is required');
    return [{ time: '2024-03-05 06:07:08.000', ts: 1, value: 2 }];
  });
  kit.route('GET', '/history/boom', 'read', () => { throw new TypeError('cannot read x of undefined at /srv/secret.js'); });
} };

test('extra route: data in the envelope, GatewayError text, unexpected error hidden', () =>
  withApi(history, async (api) => {
    const ok = await get(api, '/api/v1/history?device=boiler&point=temp');
    assert.equal(ok.body.data, [{ time: '2024-03-05 06:07:08.000', ts: 1, value: 2 }]);
    assert.is((await get(api, '/api/v1/history')).body.errorMsg, 'device is required');
    const boom = await get(api, '/api/v1/history/boom');
    assert.equal([boom.status, boom.body.errorMsg], [200, 'internal error']);
    assert.not.match(boom.text, 'secret');
    const wrong = await call(api, 'POST', '/api/v1/history');
    assert.equal([wrong.status, wrong.headers.get('allow')], [405, 'GET, HEAD']);
  }));

test('extra route: protect_reads applies', () =>
  withApi({ ...history, tokens: ['tk'], protectReads: true }, async (api) => {
    assert.is((await get(api, '/api/v1/history?device=boiler')).status, 401);
    assert.is((await get(api, '/api/v1/history?device=boiler', { authorization: 'Bearer tk' })).body.success, true);
  }));

test.run();
