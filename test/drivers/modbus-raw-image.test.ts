import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RawImage } from '../../src/drivers/modbus/raw-image.js';

test('a range inside or across reads of one cycle is served as read; older than asked or torn across cycles is not', () => {
  const img = new RawImage(1000);
  img.put(1, 'holding', 0, [0xffff, 0xc350, 1, 2], 7, 1000);
  img.put(1, 'holding', 4, [0x4366, 0x8000], 7, 1010);
  assert.equal(img.get(1, 'holding', 1, 2, 900), [0xc350, 1]);
  assert.equal(img.get(1, 'holding', 2, 4, 900), [1, 2, 0x4366, 0x8000], 'across two reads of one cycle');
  assert.is(img.get(1, 'holding', 2, 4, 1005), null, 'one part is older than asked');
  assert.is(img.get(1, 'holding', 5, 2, 0), null, 'register 6 was never read');
  assert.is(img.get(1, 'input', 0, 1, 0), null, 'another table');
  assert.is(img.get(2, 'holding', 0, 1, 0), null, 'another unit');
  img.put(1, 'holding', 4, [0x4367, 0], 8, 1100); // the second read, one cycle later
  assert.is(img.get(1, 'holding', 3, 2, 0), null, 'a value from cycle 7 next to one from cycle 8 would be torn');
  assert.equal(img.get(1, 'holding', 4, 2, 0), [0x4367, 0]);
});

test('bits come back as booleans; a write invalidates what it overlaps; the capacity caps what is kept', () => {
  const img = new RawImage(10);
  img.put(3, 'coil', 0, [true, false, true], 1, 50);
  assert.equal(img.get(3, 'coil', 0, 3, 0), [true, false, true]);
  img.put(3, 'holding', 10, [5, 6], 1, 50);
  img.invalidate(3, 'holding', 11, 1);
  assert.is(img.get(3, 'holding', 10, 1, 0), null);
  assert.is(img.get(3, 'coil', 0, 1, 0) !== null, true, 'other tables untouched');
  img.put(3, 'input', 0, new Array(6).fill(1), 1, 50);
  assert.is(img.dropped, 1, '3 + 2 + 6 registers exceed 10');
  assert.is(img.newest(3), 50);
  img.clear(3);
  assert.is(img.get(3, 'coil', 0, 1, 0), null);
});

test.run();
