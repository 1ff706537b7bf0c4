/**
 * A stop sent the moment the gateway says "ready" (a supervisor, a script, a test waiting for that line)
 * is a clean stop: exit 0 with the final save, never the kernel's default kill because the signal handlers
 * were not in place yet.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';

let dir = '';
test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-ready-stop-'));
});
test.after(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

test('SIGTERM on the "ready" line: exit 0, every time of 6', async () => {
  const codes: (number | null)[] = [];
  for (let i = 0; i < 6; i++) {
    const child = cli(['run', '--config', 'board/demo.json'], {
      SHADOWGATE_DATA_DIR: path.join(dir, `d${i}`), SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0',
    });
    await waitReady(child);
    child.kill('SIGTERM');
    codes.push(await exited(child));
  }
  assert.equal(codes, [0, 0, 0, 0, 0, 0]);
});

test.run();
