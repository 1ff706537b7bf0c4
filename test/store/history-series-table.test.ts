/**
 * The registry's typed table against a Map doing the same work: random adds, moves and deletions (backward-shift
 * deletion across the wrap-around of a small table) must leave both agreeing on every name, id and device.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SeriesTable } from '../../src/store/history/series-table.js';
import { rng } from './history-helpers.js';

test('random adds and deletions agree with a Map, the table nearly full', () => {
  for (const seed of [1, 2, 3, 42]) {
    const random = rng(seed);
    const cap = 40;
    const table = new SeriesTable(cap);
    const ref = new Map<number, { device: string; point: string }>();
    let nextId = 1;
    for (let step = 0; step < 5000; step++) {
      const device = `d${Math.floor(random() * 6)}`;
      const point = `p${Math.floor(random() * 12)}`;
      const r = random();
      if (r < 0.55 && ref.size < cap) {
        if (table.get(device, point) === undefined) {
          const id = nextId++;
          table.set(id, device, point);
          ref.set(id, { device, point });
        }
      } else if (r < 0.9 && ref.size) {
        const ids = [...ref.keys()];
        const id = ids[Math.floor(random() * ids.length)]!;
        assert.ok(table.delete(id), `seed ${seed} step ${step}: delete ${id}`);
        ref.delete(id);
      } else {
        const ids = table.idsOf(device);
        const want = [...ref].filter(([, n]) => n.device === device).map(([id]) => id).sort((a, b) => a - b);
        assert.equal(ids, want, `seed ${seed} step ${step}: ids of ${device}`);
      }
      assert.is(table.size, ref.size);
    }
    for (const [id, n] of ref) {
      assert.ok(table.has(id));
      assert.is(table.get(n.device, n.point), id, `seed ${seed}: ${n.device}/${n.point}`);
      assert.equal(table.entry(id), { id, ...n });
    }
    assert.equal([...table.liveIds()], [...ref.keys()].sort((a, b) => a - b));
    for (let id = 1; id < nextId; id++) if (!ref.has(id)) assert.not.ok(table.has(id), `seed ${seed}: ${id} deleted`);
  }
});

test('a (device, point) set again moves to the new id; a full table refuses; names are freed with their last series', () => {
  const t = new SeriesTable(2);
  t.set(1, 'a', 'x');
  t.set(5, 'a', 'x');
  assert.not.ok(t.has(1));
  assert.is(t.get('a', 'x'), 5);
  t.set(6, 'b', 'y');
  assert.throws(() => t.set(7, 'c', 'z'), /full/);
  assert.ok(t.delete(5));
  assert.not.ok(t.delete(5));
  assert.is(t.get('a', 'x'), undefined);
  assert.equal(t.idsOf('a'), []);
  t.set(7, 'c', 'z');
  assert.equal(t.entry(7), { id: 7, device: 'c', point: 'z' });
  assert.throws(() => t.set(0, 'd', 'w'), /out of range/);
});

test('memory is fixed by the capacity: 100,000 series in under 3 MB of typed arrays', () => {
  const t = new SeriesTable(100_000);
  assert.ok(t.allocatedBytes < 3 * 2 ** 20, `${t.allocatedBytes} bytes`);
});

test.run();
