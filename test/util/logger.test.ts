/** The logger keeps URL passwords out of every line, whichever field or message they come in. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LogRing } from '../../src/util/log-ring.js';
import { createLogger, scrubLine } from '../../src/util/logger.js';

test('scrubLine: the password of user:password@ goes, the rest of the URL and of the line stays', () => {
  assert.is(scrubLine('{"url":"http://exp:s3cret@10.0.0.1:9/in"}'), '{"url":"http://exp:***@10.0.0.1:9/in"}');
  assert.is(scrubLine('connect mqtts://gw:p%40ss@up:8883 failed; again mqtt://a:b@c'), 'connect mqtts://gw:***@up:8883 failed; again mqtt://a:***@c');
  for (const keep of ['mail me@example.com', 'http://host/a@b', 'http://user@host/', 'ratio 1:2@3', '{"msg":"ok"}']) assert.is(scrubLine(keep), keep);
});

/** One line logged by a logger with a ring: the ring, and what reached stdout. */
function logOne(write: (log: ReturnType<typeof createLogger>) => void): { ring: LogRing; stdout: string } {
  const ring = new LogRing(10);
  const log = createLogger('info', ring);
  const out = process.stdout.write;
  const stdout: string[] = [];
  process.stdout.write = ((c: string) => (stdout.push(String(c)), true)) as typeof process.stdout.write;
  try {
    write(log);
  } finally {
    process.stdout.write = out;
  }
  return { ring, stdout: stdout.join('') };
}

test('createLogger scrubs what it writes, in the console\'s log ring as on stdout (the hook sits before both)', () => {
  const { ring, stdout } = logOne((log) =>
    log.warn({ url: 'http://u:pw@h/x', err: new Error('Request cannot be constructed from a URL that includes credentials: http://u:pw@h/x') }, 'export failed'));
  const [line] = ring.tail(1) as { url: string; err: { message: string } }[];
  assert.is(line!.url, 'http://u:***@h/x');
  assert.match(line!.err.message, /http:\/\/u:\*\*\*@h\/x$/);
  assert.ok(stdout.includes('u:***@h') && !stdout.includes(':pw@'), stdout);
});

test('a field named level never shadows the line\'s own level (a warning stays 40 in the ring and on stdout)', () => {
  const { ring, stdout } = logOne((log) => log.warn({ device: 'd', level: 1 }, 'device refused a bridged read'));
  const [line] = ring.tail(1) as { level: number; field_level: number }[];
  assert.is(line!.level, 40);
  assert.is(line!.field_level, 1);
  assert.is((JSON.parse(stdout) as { level: number }).level, 40);
  assert.is(stdout.match(/"level"/g)?.length, 1, 'one level key in the JSON');
});

test.run();
