/**
 * README.md and docs/ speak to users: no pointer to texts they cannot see (an issue of this project by its
 * number, a "closing note"); the figure and the reason belong where they are used. A public third-party
 * issue is cited by its project and `#number`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const UNSEEN = /\bissues? \d+|closing notes?/i;

test('README.md and docs/*.md name no issue by number and no closing note', async () => {
  const files = ['README.md', ...(await readdir('docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  assert.ok(files.length >= 10, files.join(' '));
  const found: string[] = [];
  for (const file of files) {
    (await readFile(file, 'utf8')).split('\n').forEach((line, i) => {
      const m = UNSEEN.exec(line);
      if (m) found.push(`${file}:${i + 1}: "${m[0]}" in ${line.trim().slice(0, 100)}`);
    });
  }
  assert.equal(found, []);
});

test('the pattern catches the forms the docs used', () => {
  for (const text of ['the closing note of issue 16', 'the closing notes of issues 15 and 16', "issue 16's measurement", '(Issue 12)']) {
    assert.ok(UNSEEN.test(text), text);
  }
  assert.not.ok(UNSEEN.test('ioBroker.modbus GitHub issue #286'), 'a public issue cited by its number sign');
});

test.run();
