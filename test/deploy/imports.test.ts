/**
 * The architecture as a test (docs/architecture.md): the import graph of src/ has no cycle, and each
 * room imports only what it may — the core and the protocol nothing with I/O and no other room; drivers,
 * store, api, export and io not one another; runtime/ (the parts) and the composition root all of them;
 * nothing imports main.ts, gateway.ts or runtime/ but the root. Type-only imports count too: a cycle of
 * types is still two rooms that cannot be understood apart.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const SRC = path.resolve('src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'console' ? [] : files(full);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

const rel = (file: string): string => path.relative(SRC, file).replace(/\\/g, '/');
/** The room of a path relative to src/: its first folder, or the file itself when it lies loose in src/. */
const roomOf = (relPath: string): string => (relPath.includes('/') ? relPath.split('/')[0]! : relPath);

function graph(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of files(SRC)) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/g)) {
      const spec = (m[1] ?? m[2])!;
      deps.push(rel(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'))));
    }
    out.set(rel(file), deps);
  }
  return out;
}

test('the import graph of src/ has no cycle', () => {
  const g = graph();
  const state = new Map<string, 1 | 2>();
  const cycles: string[] = [];
  const visit = (node: string, trail: string[]): void => {
    if (state.get(node) === 2) return;
    if (state.get(node) === 1) {
      cycles.push([...trail.slice(trail.indexOf(node)), node].join(' → '));
      return;
    }
    state.set(node, 1);
    for (const dep of g.get(node) ?? []) visit(dep, [...trail, node]);
    state.set(node, 2);
  };
  for (const node of g.keys()) visit(node, []);
  assert.equal(cycles, []);
  assert.ok(g.size > 50, `read ${g.size} files`);
});

/** Rooms each room may import (besides itself and util/). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  protocol: ['core'],
  config: ['core', 'protocol'],
  drivers: ['core', 'protocol', 'config'],
  io: ['core', 'config', 'drivers'],
  store: ['core', 'config'],
  api: ['core', 'config'],
  export: ['core', 'config'],
  cli: ['core', 'protocol', 'config', 'drivers', 'store', 'export'],
  runtime: ['core', 'protocol', 'config', 'drivers', 'io', 'store', 'api', 'export'],
  util: [],
  'gateway.ts': ['*'],
  'main.ts': ['*'],
};

test('each room imports only the rooms it may; nothing loose beside main.ts and gateway.ts', () => {
  const wrong: string[] = [];
  for (const [file, deps] of graph()) {
    const room = roomOf(file);
    const allowed = ALLOWED[room];
    if (!allowed) {
      wrong.push(`${file}: a file loose in src/ (rooms: ${Object.keys(ALLOWED).join(', ')})`);
      continue;
    }
    for (const dep of deps) {
      const target = roomOf(dep);
      if (target === room || target === 'util' || allowed.includes('*') || allowed.includes(target)) continue;
      wrong.push(`${file} imports ${dep}`);
    }
  }
  assert.equal(wrong, []);
});

test('the core and the protocol import no I/O module', () => {
  const io = /from '(node:(fs|net|http|https|dgram|child_process|fs\/promises)|serialport|modbus-serial|onoff|aedes|mqtt|polka|ws|pino|node-persist)'/;
  const wrong = [...graph().keys()]
    .filter((f) => ['core', 'protocol'].includes(roomOf(f)))
    .filter((f) => io.test(readFileSync(path.join(SRC, f), 'utf8')));
  assert.equal(wrong, []);
});

/**
 * Synchronous file calls block the event loop (polls, REST, MQTT) for as long as the SD card takes. They
 * are allowed only where they run once at start-up or touch memory-backed sysfs, each with its reason.
 */
const SYNC_ALLOWED: Record<string, string> = {
  'config/models.ts': 'the model library, read once at start (live changes validate against the cached copy)',
  'config/validator.ts': 'schema.json, read once when the module loads',
  'drivers/gpio/board.ts': 'board files, read once per directory and cached',
  'drivers/gpio/chip.ts': 'sysfs gpiochip labels (memory-backed, not flash), at bus start',
  'drivers/gpio/onoff-port.ts': "onoff's line reads/writes are sysfs files (memory-backed)",
  'drivers/modbus/rtu-reader.ts': 'non-blocking reads and writes of the tty fd (what waits or EAGAIN at once; a frame fits the tty buffer)',
  'drivers/modbus/rtu-transport.ts': 'the serial device node (devtmpfs, memory): is a vanished adapter back',
  'util/version.ts': 'package.json, read once at start',
};

test('no synchronous file call outside start-up and sysfs (and the one-off CLI commands)', () => {
  const wrong = [...graph().keys()]
    .filter((f) => roomOf(f) !== 'cli' && !Object.hasOwn(SYNC_ALLOWED, f))
    .filter((f) => /\b(readFileSync|writeFileSync|appendFileSync|readdirSync|statSync|existsSync|mkdirSync|unlinkSync|renameSync|openSync|fsyncSync|rmSync|accessSync)\(/.test(readFileSync(path.join(SRC, f), 'utf8')));
  assert.equal(wrong, []);
});

test.run();
