/**
 * Early answers to bodies still being sent (413 from Content-Length, 401 before reading): a client that
 * writes its whole body before reading must get the answer, never EPIPE/ECONNRESET, whether it keeps the
 * connection alive or asks to close it. The client runs in its own process, so its writes are not paced
 * by the server's event loop (in one process the race hardly ever shows).
 */
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withApi } from './helpers.js';

/** Node's http client in a child: `rounds` rounds of `concurrent` requests per client kind; prints a tally. */
const CLIENT = `
import { Agent, request } from 'node:http';
const [port, size, rounds, concurrent] = JSON.parse(process.argv[1]);
const body = Buffer.alloc(size, 0x20);
// A loaded client: it reads its socket late, so an answer and a reset that follows it arrive together.
setInterval(() => { const until = performance.now() + 20; while (performance.now() < until); }, 25).unref();
const one = (opts) => new Promise((resolve) => {
  const errors = [];
  let status = 0;
  let text = '';
  const req = request({ host: '127.0.0.1', port, path: '/api/v1/device/writePoints', method: 'POST', timeout: 10000, ...opts,
    headers: { 'content-type': 'application/json', 'content-length': body.length, ...(opts.headers ?? {}) } }, (res) => {
    status = res.statusCode;
    res.on('data', (c) => (text += c));
  });
  req.on('error', (e) => errors.push(e.code ?? e.message));
  req.on('timeout', () => req.destroy(new Error('timeout')));
  // Done when the request has closed, so a late EPIPE counts.
  req.on('close', () => {
    let code = 'none';
    try { code = JSON.parse(text).errorCode; } catch {}
    resolve(errors.length ? 'error ' + errors.join(',') : status + '/' + code);
  });
  if (!opts.paced) {
    req.end(body);
    return;
  }
  // As a client piping a file: 64 KiB writes a few ms apart, so the body is still in flight at the answer.
  let at = 0;
  const next = () => {
    if (req.destroyed) return;
    const chunk = body.subarray(at, at + 65536);
    at += chunk.length;
    if (at >= body.length) req.end(chunk);
    else req.write(chunk, () => setTimeout(next, 3));
  };
  next();
});
const kinds = {
  'no agent (Connection: close)': { agent: false },
  'Connection: close header, paced': { headers: { connection: 'close' }, paced: true },
  'keep-alive agent': { agent: new Agent({ keepAlive: true }) },
  'keep-alive agent, paced': { agent: new Agent({ keepAlive: true }), paced: true },
};
const tally = {};
for (const [kind, opts] of Object.entries(kinds)) {
  for (let r = 0; r < rounds; r++) {
    for (const got of await Promise.all(Array.from({ length: concurrent }, () => one(opts)))) {
      const key = kind + ': ' + got;
      tally[key] = (tally[key] ?? 0) + 1;
    }
  }
  opts.agent?.destroy?.();
}
console.log(JSON.stringify(tally));
`;

/**
 * Runs the client while this process (the server's) is kept busy 25 ms of every 30, as a gateway under
 * load: the server then reads late, and the answer meets a body still in flight.
 */
async function runClient(args: unknown[]): Promise<Record<string, number>> {
  const busy = setInterval(() => {
    const until = performance.now() + 25;
    while (performance.now() < until) { /* busy */ }
  }, 30);
  try {
    return await spawnClient(args);
  } finally {
    clearInterval(busy);
  }
}

function spawnClient(args: unknown[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    // Not spawnSync: the server under test runs on this very event loop.
    const child = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, JSON.stringify(args)], { timeout: 60_000 });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`client exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as Record<string, number>);
    });
  });
}

const ROUNDS = 4;
const CONCURRENT = 3;
const expected = (answer: string): Record<string, number> => ({
  [`no agent (Connection: close): ${answer}`]: ROUNDS * CONCURRENT,
  [`Connection: close header, paced: ${answer}`]: ROUNDS * CONCURRENT,
  [`keep-alive agent: ${answer}`]: ROUNDS * CONCURRENT,
  [`keep-alive agent, paced: ${answer}`]: ROUNDS * CONCURRENT,
});

test('2 MiB with Content-Length sent whole by Node\'s http client: every one of 48 gets its 413 envelope, none EPIPE', () =>
  withApi({}, async (api) => {
    const tally = await runClient([api.port, 2 * 1024 * 1024, ROUNDS, CONCURRENT]);
    assert.equal(tally, expected('413/413'));
  }));

test('the same for a 401 answered before reading a 512 KiB body (no token), and the server keeps answering', () =>
  withApi({ tokens: ['s3cret-token'] }, async (api) => {
    const tally = await runClient([api.port, 512 * 1024, ROUNDS, CONCURRENT]);
    assert.equal(tally, expected('401/401'));
    const ok = await fetch(api.url('/api/v1/shadow/all'), { signal: AbortSignal.timeout(5000) });
    assert.is(ok.status, 200);
  }));

test.run();
