/** A long upload's own pace limit: a body that stops arriving is cut off after the stall time, one that flows is read whole. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { longUpload } from '../../src/api/long-upload.js';

/** A server whose handler reads the body through longUpload(stallMs) and answers what happened. */
async function withServer(stallMs: number, fn: (port: number, seen: string[]) => Promise<void>): Promise<void> {
  const seen: string[] = [];
  const server = http.createServer(async (req, res) => {
    let size = 0;
    try {
      for await (const chunk of longUpload(req, stallMs)) size += chunk.length;
      seen.push(`read ${size}`);
    } catch (err) {
      seen.push(`cut after ${size}: ${(err as Error).message}`);
    }
    res.end(seen.at(-1));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn((server.address() as AddressInfo).port, seen);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

/** Sends `pieces` of 1 kB `gapMs` apart (declaring `declared` bytes); resolves with how the request ended. */
function send(port: number, pieces: number, gapMs: number, declared: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-length': declared } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve(text));
    });
    req.on('error', (err) => resolve(`client: ${err.message}`));
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    void (async () => {
      for (let i = 0; i < pieces; i++) {
        req.write(Buffer.alloc(1024));
        await new Promise((r) => setTimeout(r, gapMs));
      }
      if (pieces * 1024 === declared) req.end();
    })();
  });
}

test('a body that flows with gaps shorter than the stall time is read whole', async () => {
  // 800 ms in all, over the 600 ms stall time: only a stall timer restarted by each piece reads it whole. Each
  // gap leaves 500 ms to spare: a machine that runs this thread that late (a busy job beside the tests)
  // would cut it off; 150 ms gaps under a 400 ms stall time left 250.
  await withServer(600, async (port) => {
    assert.is(await send(port, 8, 100, 8 * 1024), 'read 8192');
  });
});

test('a body that stops arriving is cut off after the stall time: the reader fails, it does not wait forever', async () => {
  await withServer(300, async (port, seen) => {
    const t0 = performance.now();
    const outcome = await send(port, 2, 10, 10 * 1024);
    const ms = performance.now() - t0;
    assert.equal(seen, ['cut after 2048: no data for 0.3 s']);
    // The socket is destroyed with the request: the client sees its connection go.
    assert.match(outcome, /^client: (socket hang up|.*(reset|aborted))/);
    assert.ok(ms >= 300, `${ms} ms`);
  });
});

test.run();
