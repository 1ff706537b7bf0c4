/** A Modbus TCP client's transaction ids: 16 bits, round again, never one whose late answer may still come. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TransactionIds } from '../../../src/protocol/modbus/transaction-ids.js';

test('ids go 1..65535 and round again, never 0', () => {
  const ids = new TransactionIds(0xfffe);
  assert.equal([ids.next(), ids.next(), ids.next()], [0xffff, 1, 2]);
  assert.is(new TransactionIds().next(), 1);
});

test('a timed-out id is skipped until its late answer came; a new connection frees every one', () => {
  const ids = new TransactionIds(0xfffd);
  const lost = ids.next(); // 0xfffe
  ids.timedOut(lost);
  assert.is(ids.pending, 1);
  assert.equal([ids.next(), ids.next()], [0xffff, 1]);
  const round = new TransactionIds(0xfffd);
  round.timedOut(0xfffe);
  assert.equal([round.next(), round.next()], [0xffff, 1], '0xfffe skipped');
  assert.is(round.lateAnswer(0xfffe), true, 'its late answer came');
  assert.is(round.lateAnswer(4242), false, 'an id that never timed out');
  const again = new TransactionIds(0xfffd);
  again.timedOut(0xfffe);
  again.lateAnswer(0xfffe);
  assert.is(again.next(), 0xfffe, 'free again');
  const renewed = new TransactionIds(0xfffd);
  renewed.timedOut(0xfffe);
  renewed.renew();
  assert.is(renewed.pending, 0);
  assert.is(renewed.next(), 0xfffe);
});

test('with every id waiting it says so instead of looping', () => {
  const ids = new TransactionIds();
  for (let t = 1; t <= 0xffff; t++) ids.timedOut(t);
  assert.throws(() => ids.next(), /every transaction id/);
});

test.run();
