/**
 * uvu's `suite.run()` queues what the suite holds *at that moment* and resets it: a test registered after the
 * file's `.run()` is never run and never counted (not as passed, not as skipped), so a canary placed there
 * looks green forever. This scans every test file (test/**\/*.test.ts, test/**\/*.long.ts) for that shape.
 *
 * The rule, on top-level lines only (column 0: the repo's files are indented, so a statement starting in
 * column 0 is a statement of the module):
 * - every file has a top-level `NAME.run();`, or none of its tests run;
 * - from the first top-level `NAME.run();` on, the only top-level statements are more `NAME.run();` calls,
 *   declarations (function, class, const, let, type, interface, import, export) and comments. Anything else
 *   there — `test(…)`, `rigTest(…)`, `x.skip(…)`, `suite.before(…)`, a call of a helper that registers, a
 *   loop or an `if` that does — is named as file:line. Declarations stay allowed: a helper function after
 *   `.run()` is hoisted, and tests run only after the whole module is evaluated.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const TEST_DIR = path.resolve('test');
const RUN = /^[A-Za-z_$][\w$]*\.run\(\);?\s*(\/\/.*)?$/;
/** Top-level lines that cannot register a test: declarations, comments, closers of a statement begun above. */
const INERT = /^(?:$|\/\/|\/\*|\*|[})\]]|(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\b|class\b|const\b|let\b|var\b|type\b|interface\b|enum\b|declare\b|import\b)|export\s*\{)/;

function testFiles(dir = TEST_DIR): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(test|long)\.ts$/.test(f))
    .map((f) => path.join(dir, f))
    .sort();
}

/** The rule above for one file's text: one problem per line, as `LINE: what`. */
function lateRegistrations(text: string): string[] {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => RUN.test(l));
  if (first < 0) return ['1: no top-level NAME.run(): none of its tests run'];
  const out: string[] = [];
  for (let i = first + 1; i < lines.length; i++) {
    const line = lines[i]!.trimEnd();
    if (RUN.test(line) || INERT.test(line) || /^\s/.test(line)) continue;
    out.push(`${i + 1}: after ${lines[first]!.trim()} (line ${first + 1}), never run: ${line.slice(0, 80)}`);
  }
  return out;
}

test('the rule flags a registration after .run() and allows what cannot register', () => {
  const flagged = (src: string) => lateRegistrations(src).map((p) => Number(p.split(':')[0]));
  assert.equal(flagged("test('a', () => {});\ntest.run();\n"), []);
  assert.equal(flagged("test('a', () => {\n  x();\n});\n\ntest.run();\nrig.run();\n// end\n"), []);
  assert.equal(flagged("test.run();\n\nfunction helper() {\n  return 1;\n}\nconst x = 2;\n/**\n * doc\n */\nexport type T = number;\n"), []);
  assert.equal(flagged("test('a', () => {});\ntest.run();\ntest('late', () => {\n  x();\n});\n"), [3]);
  assert.equal(flagged("test.run();\nrigTest('late', fn);\ntest.skip('late', fn);\nsuite.before(fn);\nregisterCases(test);\n"), [2, 3, 4, 5]);
  assert.equal(flagged("test.run();\nfor (const c of cases) {\n  test(c, fn);\n}\nif (x) test('y', fn);\nawait import('./more.js');\n"), [2, 5, 6]);
  assert.equal(flagged("test('a', () => {});\n"), [1]);
});

test('no test file registers a test after its .run() (uvu would never run it)', () => {
  const files = testFiles();
  assert.ok(files.length > 100, `found only ${files.length} test files under ${TEST_DIR}`);
  const problems = files.flatMap((file) => {
    const rel = path.relative(process.cwd(), file);
    return lateRegistrations(readFileSync(file, 'utf8')).map((p) => `${rel}:${p}`);
  });
  assert.ok(problems.length === 0, `tests registered where they never run (move the .run() calls to the end):\n${problems.join('\n')}`);
});

test.run();
