/**
 * retained.json when its write fails (a full disk; here a file where its directory should be): the failure
 * is reported once, and the write is retried on its own until it succeeds, since the client that retained the
 * message may never publish again.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RetainedStore } from '../../src/export/retained-store.js';

test('a failed write is retried by itself and reported once', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-retained-'));
  const blocker = path.join(dir, 'mqtt');
  const errors: unknown[] = [];
  const store = new RetainedStore(path.join(blocker, 'retained.json'), (err) => errors.push(err), 10, 20_000, 30);
  try {
    await writeFile(blocker, 'not a directory');
    store.record('home/status', Buffer.from('online'), 1);
    // The first write fails (waited for: a loaded machine can take longer than the 10 ms debounce and the write
    // themselves), then a few retries 30 ms apart.
    for (const deadline = Date.now() + 5000; errors.length === 0 && Date.now() < deadline;) await sleep(10);
    await sleep(150);
    assert.is(errors.length, 1, 'reported once, not on every retry');
    assert.is(store.writes, 0);
    await rm(blocker);
    const deadline = Date.now() + 2000;
    while (store.writes === 0 && Date.now() < deadline) await sleep(10);
    assert.is(store.writes, 1, 'written without another publish');
    const saved = JSON.parse(await readFile(path.join(blocker, 'retained.json'), 'utf8')) as { topic: string; payload: string }[];
    assert.equal(saved.map((m) => [m.topic, m.payload]), [['home/status', 'online']]);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
