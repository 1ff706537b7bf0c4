/**
 * The series registry is rewritten at open only when it holds more than its live series: a compact file is
 * read as it is (no 5 MB rewrite + fsync of flash at every start of a 100k-series gateway), one with deleted
 * series or a torn last line is compacted, and either way the ids survive.
 */
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REGISTRY_FILE, SeriesRegistry } from '../../src/store/history/registry.js';
import { silentLogger } from '../../src/util/logger.js';
import { withDir } from './history-helpers.js';

const inode = async (dir: string): Promise<number> => (await stat(join(dir, REGISTRY_FILE))).ino;

test('a compact registry is read as it is; new series append after it', () =>
  withDir(async (dir) => {
    const reg = await SeriesRegistry.open(dir, 100, silentLogger);
    const a = reg.idFor('d', 'a')!;
    const b = reg.idFor('d', 'b')!;
    await reg.persist();
    const before = await inode(dir);
    const again = await SeriesRegistry.open(dir, 100, silentLogger);
    assert.is(await inode(dir), before, 'not rewritten (a rewrite renames a new file over it)');
    assert.is(again.bytes, (await stat(join(dir, REGISTRY_FILE))).size);
    assert.is(again.lookup('d', 'a'), a);
    assert.is(again.lookup('d', 'b'), b);
    const c = again.idFor('d', 'c')!;
    await again.persist();
    const third = await SeriesRegistry.open(dir, 100, silentLogger);
    assert.equal([third.lookup('d', 'a'), third.lookup('d', 'b'), third.lookup('d', 'c')], [a, b, c]);
    assert.is(await inode(dir), before, 'still the same file');
  }));

test('deleted series or a torn last line: compacted at open, live ids kept, ids never reused', () =>
  withDir(async (dir) => {
    const reg = await SeriesRegistry.open(dir, 100, silentLogger);
    const a = reg.idFor('d', 'a')!;
    reg.idFor('gone', 'x');
    await reg.persist();
    reg.deleteDevice('gone');
    await reg.persist();
    const before = await inode(dir);
    const again = await SeriesRegistry.open(dir, 100, silentLogger);
    assert.is.not(await inode(dir), before, 'rewritten');
    assert.not.ok((await readFile(join(dir, REGISTRY_FILE), 'utf8')).includes('gone'));
    assert.is(again.lookup('d', 'a'), a);
    assert.ok(again.idFor('gone', 'x')! > a + 1, 'a new id for a series added again');
    await again.persist();
    await appendFile(join(dir, REGISTRY_FILE), '{"id":99,"dev');
    const torn = await inode(dir);
    const third = await SeriesRegistry.open(dir, 100, silentLogger);
    assert.is.not(await inode(dir), torn, 'the torn line is cut by a rewrite');
    assert.ok((await readFile(join(dir, REGISTRY_FILE), 'utf8')).endsWith('}\n'));
    assert.is(third.lookup('d', 'a'), a);
  }));

test('lines of any valid form read alike: escapes, non-ASCII names, other key orders, next and del', () =>
  withDir(async (dir) => {
    const lines = [
      '{"next":40}',
      '{"id":1,"device":"dev-1","point":"p0"}',
      String.raw`{"id":2,"device":"z\u00e4hler \"A\"","point":"p\\1"}`,
      '{"id":3,"device":"zähler-B","point":"leistung°"}',
      '{"point":"p2","id":4,"device":"dev-1"}',
      '{ "id": 5, "device": "dev-2", "point": "p0" }',
      '{"id":6,"device":"dev-2","point":"gone"}',
      '{"del":6}',
    ];
    await writeFile(join(dir, REGISTRY_FILE), `${lines.join('\n')}\n`);
    const reg = await SeriesRegistry.open(dir, 100, silentLogger);
    assert.equal(
      [reg.lookup('dev-1', 'p0'), reg.lookup('zähler "A"', 'p\\1'), reg.lookup('zähler-B', 'leistung°'), reg.lookup('dev-1', 'p2'), reg.lookup('dev-2', 'p0'), reg.lookup('dev-2', 'gone')],
      [1, 2, 3, 4, 5, undefined],
    );
    assert.is(reg.size, 5);
    assert.is(reg.idFor('dev-3', 'p0'), 40, 'next id from the next line');
  }));

test('a line that is no record ends the registry there, also one close to the common shape', () =>
  withDir(async (dir) => {
    for (const bad of ['{"id":07,"device":"d","point":"b"}', '{"id":0,"device":"d","point":"b"}', '{"id":2,"device":"d","point":"b"} x', '{"id":2,"device":"d\u0001","point":"b"}']) {
      await writeFile(join(dir, REGISTRY_FILE), `{"next":1}\n{"id":1,"device":"d","point":"a"}\n${bad}\n{"id":3,"device":"d","point":"c"}\n`);
      const reg = await SeriesRegistry.open(dir, 100, silentLogger);
      assert.equal([reg.lookup('d', 'a'), reg.lookup('d', 'b'), reg.lookup('d', 'c')], [1, undefined, undefined], bad);
    }
  }));

test.run();
