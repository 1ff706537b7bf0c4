/**
 * Routes found by exact path (src/api/exact-routes.ts) answer as polka's router does: the same bytes, the
 * same request fields, and other routes matching the path (a middleware, even one added later) still run.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ApiApp, RouteKit } from '../../src/api/index.js';
import { get, rawHttp, withApi, type TestApi } from './helpers.js';

/** The raw response without its Date line (the only part that may differ between two requests). */
async function raw(api: TestApi, path: string, headers = ''): Promise<string> {
  const r = await rawHttp(api.port, `GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`);
  assert.ok(r, `no answer to ${path}`);
  return r.raw.replace(/^Date: .*\r\n/im, '');
}

test('an exact path and the same route through polka (trailing slash) answer the same bytes', () =>
  withApi({ tokens: ['tk'], protectReads: true }, async (api) => {
    const auth = 'Authorization: Bearer tk\r\n';
    const cases: [string, string][] = [
      ['/shadow/devicePoint?id=boiler&point=temp', auth], // data
      ['/shadow/devicePoint?id=boiler&point=nope', auth], // a GatewayError: 200 with its text
      ['/shadow/devicePoint?id=boiler', auth], // a missing parameter
      ['/shadow/devicePoint?id=boiler&id=pusher&point=temp', auth], // a parameter given twice
      ['/shadow/devicePoint?id=boiler&point=temp', ''], // 401
      ['/ok', auth],
    ];
    for (const [route, headers] of cases) {
      const [path, query] = route.split('?') as [string, string | undefined];
      const exact = await raw(api, `/api/v1${route}`, headers);
      const routed = await raw(api, `/api/v1${path}/${query === undefined ? '' : `?${query}`}`, headers);
      assert.is(exact, routed, route);
      assert.match(exact, /^HTTP\/1\.1 (200|401) /);
    }
    assert.match(await raw(api, '/api/v1/shadow/devicePoint?id=boiler&point=temp', auth), /\r\n\r\n\{"success":true,"errorCode":200,"errorMsg":"","data":\{"name":"temp","value":21.5,/);
  }));

/** GET over a keep-alive agent: the status and the Connection header the server answered with. */
function keepAliveGet(agent: http.Agent, port: number, path: string, headers: Record<string, string> = {}): Promise<[number, string | undefined]> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent, headers, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve([res.statusCode!, res.headers.connection]));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${path}`)));
    req.on('error', reject);
  });
}

test('failures on an exact path keep the connection open, as through polka', () =>
  withApi({ tokens: ['tk'], protectReads: true }, async (api) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const auth = { authorization: 'Bearer tk' };
      for (const path of ['/api/v1/shadow/devicePoint', '/api/v1/shadow/devicePoint/']) {
        assert.equal(await keepAliveGet(agent, api.port, `${path}?id=boiler&point=temp`), [401, 'keep-alive'], path);
        assert.equal(await keepAliveGet(agent, api.port, `${path}?id=boiler&point=nope`, auth), [200, 'keep-alive'], path);
        assert.equal(await keepAliveGet(agent, api.port, `${path}?id=boiler&point=temp`, auth), [200, 'keep-alive'], path);
      }
    } finally {
      agent.destroy();
    }
  }));

test('the request fields polka sets reach the route', () => {
  const echo = (_app: ApiApp, kit: RouteKit): void => {
    kit.route('GET', '/echo', 'read', (req) => ({ path: req.path, url: req.url, originalUrl: req.originalUrl, search: req.search, query: req.query, params: req.params }));
  };
  return withApi({ extraRoutes: echo }, async (api) => {
    const r = await get(api, '/api/v1/echo?a=1&a=2&b=x%20y');
    assert.equal(r.body.data, {
      path: '/api/v1/echo', url: '/api/v1/echo?a=1&a=2&b=x%20y', originalUrl: '/api/v1/echo?a=1&a=2&b=x%20y', search: '?a=1&a=2&b=x%20y',
      query: { a: ['1', '2'], b: 'x y' }, params: {},
    });
    assert.equal((await get(api, '/api/v1/echo')).body.data, { path: '/api/v1/echo', url: '/api/v1/echo', originalUrl: '/api/v1/echo', search: '', query: {}, params: {} });
  });
});

test('a middleware added before a route runs for it; one added after does not (as in polka)', () => {
  let app: ApiApp | undefined;
  const mount = (a: ApiApp, kit: RouteKit): void => {
    app = a;
    a.use('/api/v1/mine', (_req, res, next) => {
      res.setHeader('X-Before', 'yes');
      void next();
    });
    kit.route('GET', '/mine', 'read', () => 'mine');
  };
  return withApi({ extraRoutes: mount }, async (api) => {
    const mine = await get(api, '/api/v1/mine');
    assert.equal([mine.body.data, mine.headers.get('x-before')], ['mine', 'yes']);
    app!.use((_req, res, next) => {
      res.setHeader('X-After', 'yes');
      void next();
    });
    const ok = await get(api, '/api/v1/ok');
    assert.equal([ok.body.data, ok.headers.get('x-after')], [true, null]);
    const routed = await get(api, '/api/v1/ok/');
    assert.equal([routed.body.data, routed.headers.get('x-after')], [true, null]);
    // The middleware itself works where no route answers first.
    assert.is((await get(api, '/api/v1/none')).headers.get('x-after'), 'yes');
  });
});

test.run();
