/** The guessing backoff: doubling holds up to a cap, blocked sources, reset, forgetting, bounded memory, turns. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FailureBackoff, sourceKey } from '../../src/util/auth-backoff.js';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

test('each failure doubles the hold from 100 ms up to the cap; the source is blocked that long', () => {
  const c = clock();
  const b = new FailureBackoff({ now: c.now, capMs: 1000 });
  const holds: number[] = [];
  for (let i = 0; i < 6; i++) {
    holds.push(b.fail('1.2.3.4'));
    assert.is(b.wait('1.2.3.4'), holds[i], 'blocked for the whole hold');
    c.advance(holds[i]!);
    assert.is(b.wait('1.2.3.4'), 0, 'free once the hold is over');
  }
  assert.equal(holds, [100, 200, 400, 800, 1000, 1000]);
  assert.is(b.failures('1.2.3.4'), 6);
  assert.is(b.wait('5.6.7.8'), 0, 'another source is not touched');
});

test('a success clears the source; a long quiet forgets it', () => {
  const c = clock();
  const b = new FailureBackoff({ now: c.now, forgetMs: 60_000 });
  b.fail('a');
  b.fail('a');
  b.succeed('a');
  assert.is(b.failures('a'), 0);
  assert.is(b.fail('a'), 100, 'starts afresh after a success');
  b.fail('a');
  c.advance(60_001);
  assert.is(b.failures('a'), 0, 'forgotten');
  assert.is(b.fail('a'), 100);
});

test('memory is bounded: past maxSources the least recently failed source goes first', () => {
  const b = new FailureBackoff({ maxSources: 3 });
  for (const s of ['a', 'b', 'c']) b.fail(s);
  b.fail('a');
  b.fail('d');
  assert.is(b.size, 3);
  assert.is(b.failures('b'), 0, 'b was the oldest failure');
  assert.is(b.failures('a'), 2);
  for (let i = 0; i < 10_000; i++) b.fail(`x${i}`);
  assert.is(b.size, 3);
});

test('serial: attempts of one source run one at a time, in order; more than maxQueued are turned away', async () => {
  const b = new FailureBackoff({ maxQueued: 3 });
  const order: string[] = [];
  let running = 0;
  const attempt = (name: string) => async (): Promise<string> => {
    if (name !== 't') running++;
    assert.ok(running <= 1, 'one at a time per source');
    await new Promise((r) => setTimeout(r, 5));
    order.push(name);
    if (name !== 't') running--;
    return name;
  };
  const all = await Promise.all([b.serial('s', attempt('1')), b.serial('s', attempt('2')), b.serial('s', attempt('3')), b.serial('s', attempt('4')), b.serial('t', attempt('t'))]);
  assert.equal(all, ['1', '2', '3', undefined, 't']);
  assert.equal(order.filter((x) => x !== 't'), ['1', '2', '3']);
  assert.is(await b.serial('s', async () => 'later'), 'later', 'the queue empties');
});

test('serial: a throwing attempt does not stop the next', async () => {
  const b = new FailureBackoff();
  const first = b.serial('s', async () => { throw new Error('boom'); });
  const second = b.serial('s', async () => 'ok');
  assert.is(await first.then(() => 'resolved', (e: Error) => e.message), 'boom');
  assert.is(await second, 'ok');
});

test('sourceKey: IPv4 as is (also mapped), IPv6 by its /64', () => {
  assert.is(sourceKey('192.168.1.7'), '192.168.1.7');
  assert.is(sourceKey('::ffff:192.168.1.7'), '192.168.1.7');
  assert.is(sourceKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.is(sourceKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.is(sourceKey('fe80::1'), 'fe80:0:0:0::/64');
  assert.is(sourceKey('::1'), '0:0:0:0::/64');
  assert.is(sourceKey(undefined), 'unknown');
});

test.run();
