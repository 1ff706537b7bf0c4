/**
 * The series registry is rewritten at open only when it holds more than its live series: a compact file is
 * read as it is (no 5 MB rewrite + fsync of flash at every start of a 100k-series gateway), one with deleted
 * series or a torn last line is compacted, and either way the ids survive.
 */
import { appendFile, readFile, stat } from 'node:fs/promises';
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

test.run();
