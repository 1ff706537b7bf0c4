/** Guessing tokens over REST is slowed per source (src/util/auth-backoff.ts through src/api/auth.ts). */
import type { IncomingMessage } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createAuth } from '../../src/api/auth.js';
import { HttpError } from '../../src/api/envelope.js';
import { ownMs, stamp } from '../helpers/lateness.js';
import { call, get, withApi } from './helpers.js';

const WRITE = '/api/v1/device/writePoint?id=boiler&point=setpoint&value=21';
const bearer = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` });
/**
 * The result, the wall time and the time less what this machine kept this thread (the server's too) from a
 * CPU: a hold is a lower bound on the wall, an upper bound is on the own time (a busy job beside the tests).
 */
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number, number]> => {
  const from = stamp();
  const r = await fn();
  const to = stamp();
  return [r, to.t - from.t, ownMs(from, to)];
};

test('a wrong token: its 401 is held, doubling; while blocked every token gets 429 unjudged; after it the right one passes and clears', () =>
  withApi({ tokens: ['w-token'], readTokens: ['r-token'] }, async (api) => {
    const [first, t1] = await timed(() => get(api, WRITE, bearer('guess-1')));
    assert.equal([first.status, first.body.errorMsg], [401, 'invalid token']);
    const [, t2] = await timed(() => get(api, WRITE, bearer('guess-2')));
    // Lower bounds only: on a loaded machine the first request (cold paths) can take longer than the second.
    assert.ok(t1 >= 90 && t2 >= 190, `held ${t1.toFixed(0)} then ${t2.toFixed(0)} ms`);
    await get(api, WRITE, bearer('guess-3'));
    // Three failures: the fourth is judged and blocks for 800 ms; a fifth and the right token sent meanwhile are not judged.
    const guess = get(api, WRITE, bearer('guess-4'));
    await new Promise((r) => setTimeout(r, 200));
    const [blocked, right] = await Promise.all([get(api, WRITE, bearer('guess-5')), get(api, WRITE, bearer('w-token'))]);
    for (const b of [blocked, right]) {
      assert.equal([b.status, b.body.errorCode], [429, 429]);
      assert.match(b.body.errorMsg, /^too many failed attempts: retry in \d+ s$/);
      assert.ok(Number(b.headers.get('retry-after')) >= 1);
    }
    assert.is((await guess).status, 401);
    assert.equal(api.io.writes, [], 'nothing written meanwhile');
    // The held answer comes when the block ends.
    await new Promise((r) => setTimeout(r, 50));
    assert.is((await get(api, WRITE, bearer('w-token'))).status, 200);
    const [, , fresh] = await timed(() => get(api, WRITE, bearer('guess-6')));
    assert.ok(fresh < 1000, `after a success the next failure starts over: ${fresh.toFixed(0)} ms`);
  }));

test('a read token does not clear the count (its holder could otherwise guess write tokens at full speed)', () =>
  withApi({ tokens: ['w-token'], readTokens: ['r-token'] }, async (api) => {
    await get(api, WRITE, bearer('guess-1'));
    assert.is((await get(api, WRITE, bearer('r-token'))).body.errorMsg, 'this token may only read');
    const [, t2] = await timed(() => get(api, WRITE, bearer('guess-2')));
    assert.ok(t2 >= 190, `second failure held 200 ms, was ${t2.toFixed(0)}`);
  }));

test('GET /auth judges a token it is sent like any route: no oracle beside the backoff', () =>
  withApi({ tokens: ['w-token'], readTokens: ['r-token'] }, async (api) => {
    assert.equal((await get(api, '/api/v1/auth', bearer('w-token'))).body.data, { tokens: true, canWrite: true });
    assert.equal((await get(api, '/api/v1/auth', bearer('r-token'))).body.data, { tokens: true, canWrite: false });
    assert.equal((await get(api, '/api/v1/auth')).body.data, { tokens: true, canWrite: false });
    const wrong = await get(api, '/api/v1/auth', bearer('nope'));
    assert.equal([wrong.status, wrong.body.errorMsg], [401, 'invalid token']);
  }));

test('reads stay open without protect_reads: a token sent to a read is not judged, nothing is counted', () =>
  withApi({ tokens: ['w-token'] }, async (api) => {
    for (let i = 0; i < 5; i++) assert.is((await get(api, '/api/v1/shadow/all', bearer(`nope-${i}`))).status, 200);
    const [r, , t] = await timed(() => call(api, 'GET', WRITE, { headers: bearer('guess') }));
    assert.ok(r.status === 401 && t < 1000, `first counted failure: ${t.toFixed(0)} ms`);
  }));

test('checkers built from the same config share one table (the REST app and /metrics, the event stream)', () => {
  const cfg = { tokens: ['w'], read_tokens: [], protect_reads: true };
  const a = createAuth(cfg);
  const b = createAuth(cfg);
  const req = (token: string): IncomingMessage => ({ headers: { authorization: `Bearer ${token}` }, socket: { remoteAddress: '10.0.0.9' }, url: '/' }) as unknown as IncomingMessage;
  const err = (fn: () => void): HttpError => {
    try {
      fn();
    } catch (e) {
      return e as HttpError;
    }
    throw new Error('no error');
  };
  const first = err(() => a(req('x'), 'write'));
  assert.equal([first.status, first.delayMs], [401, 100]);
  assert.is(err(() => b(req('w'), 'read')).status, 429, 'the other checker sees the block');
  assert.is(createAuth({ tokens: ['w'], read_tokens: [], protect_reads: true }).backoff.size, 0, 'another config, another table');
});

test.run();
