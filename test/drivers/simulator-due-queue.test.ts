import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DueQueue } from '../../src/drivers/simulator/due-queue.js';

interface Item {
  due: number;
  name: string;
}

test('pops earliest first, equal due times in push order, whatever the push order', () => {
  const q = new DueQueue<Item>();
  // A fixed pseudo-random order of 500 items over 50 due times (10 per time).
  const items = Array.from({ length: 500 }, (_, i) => ({ due: (i * 37) % 50, name: `n${i}` }));
  for (const item of items) q.push(item);
  assert.is(q.size, 500);
  const out: Item[] = [];
  for (let item = q.pop(); item; item = q.pop()) out.push(item);
  const expected = items.map((item, i) => ({ item, i })).sort((a, b) => a.item.due - b.item.due || a.i - b.i).map(({ item }) => item);
  assert.equal(out.map((i) => i.name), expected.map((i) => i.name));
  assert.is(q.size, 0);
  assert.is(q.pop(), undefined);
});

test('an item popped, moved later and pushed again comes after those now earlier; clear empties', () => {
  const q = new DueQueue<Item>();
  const a = { due: 1, name: 'a' };
  q.push(a);
  q.push({ due: 2, name: 'b' });
  q.push({ due: 3, name: 'c' });
  assert.is(q.pop(), a);
  a.due = 2.5;
  q.push(a);
  assert.equal([q.pop(), q.pop(), q.peek()].map((i) => i?.name), ['b', 'a', 'c']);
  q.clear();
  assert.is(q.peek(), undefined);
  assert.is(q.size, 0);
});

test.run();
