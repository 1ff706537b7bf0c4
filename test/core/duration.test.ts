import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatGoDuration, isDuration, isSize, parseDuration, parseSize } from '../../src/core/duration.js';

test('parses duration text to milliseconds', () => {
  assert.is(parseDuration('500ms'), 500);
  assert.is(parseDuration('30s'), 30_000);
  assert.is(parseDuration('5m'), 300_000);
  assert.is(parseDuration('1h30m'), 5_400_000);
  assert.is(parseDuration('14d'), 14 * 86_400_000);
  assert.is(parseDuration('1.5s'), 1500);
  assert.is(parseDuration('1m30s500ms'), 90_500);
  assert.is(parseDuration('0s'), 0);
});

test('refuses text that is not a duration', () => {
  for (const bad of ['5', 'abc', '-1s', '', '1 s', '1x', 's', '1.s', '1sm']) {
    assert.throws(() => parseDuration(bad), /invalid duration/, bad);
    assert.not.ok(isDuration(bad), bad);
  }
  assert.ok(isDuration('1h30m'));
});

test('formats milliseconds as Go prints a time.Duration', () => {
  const cases: Array<[number, string]> = [
    [0, '0s'], [500, '500ms'], [30_000, '30s'], [300_000, '5m0s'], [5_400_000, '1h30m0s'],
    [86_400_000, '24h0m0s'], [1500, '1.5s'], [90_500, '1m30.5s'], [1, '1ms'],
  ];
  for (const [ms, text] of cases) assert.is(formatGoDuration(ms), text, `${ms}`);
});

test('parses sizes with binary units, case-insensitive', () => {
  assert.is(parseSize('64MB'), 64 * 1024 * 1024);
  assert.is(parseSize('1GB'), 1024 ** 3);
  assert.is(parseSize('512KB'), 512 * 1024);
  assert.is(parseSize('1MiB'), 1024 * 1024);
  assert.is(parseSize('10 mb'), 10 * 1024 * 1024);
  assert.is(parseSize('100B'), 100);
  assert.is(parseSize('1.5KB'), 1536);
});

test('refuses text that is not a size', () => {
  for (const bad of ['64', 'MB', '-1MB', '1TB', 'lots']) {
    assert.throws(() => parseSize(bad), /invalid size/, bad);
    assert.not.ok(isSize(bad), bad);
  }
});

test.run();
