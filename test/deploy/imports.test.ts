/**
 * The architecture as a test (docs/architecture.md): the import graph of src/ has no cycle, and each
 * room imports only what it may — the core and the protocol nothing with I/O and no other room; drivers,
 * store, api, export and io not one another; runtime/ (the parts) and the composition root all of them;
 * nothing imports main.ts, gateway.ts or runtime/ but the root. Type-only imports count too: a cycle of
 * types is still two rooms that cannot be understood apart.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
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

/**
 * Every module a file names, relative or bare: `import … from`, `import type … from`, `export … from`, a bare
 * `import 'x'`, and dynamic `import('x')` / `await import("x")` / `typeof import('x')`, in either quote. Comments
 * are dropped first, so prose quoting an import does not count. A dynamic import of a computed name is `<computed>`.
 */
function specifiers(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\'"`])\/\/.*$/gm, '$1');
  const out: string[] = [];
  const statics = /(?:^|[\n;])\s*(?:import|export)\s(?:[^'"`;()=]*?\sfrom\s*)?(['"])([^'"\n]+)\1/g;
  for (const m of code.matchAll(statics)) out.push(m[2]!);
  for (const m of code.matchAll(/\bimport\s*\(\s*(?:(['"`])([^'"`\n]+)\1\s*[,)]|(?=[^'"`\s]))/g)) out.push(m[2] ?? '<computed>');
  return out;
}

/** src/-relative path of a relative specifier of `file` (a .js specifier names the .ts source). */
const resolveRel = (file: string, spec: string): string => rel(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));

function graph(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of files(SRC)) {
    const deps = specifiers(readFileSync(file, 'utf8')).filter((s) => s.startsWith('.')).map((s) => resolveRel(file, s));
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

/** Builtins that only compute (no file, socket, process, clock or thread): the rest of builtinModules is I/O. */
const PURE_BUILTINS = new Set(['assert', 'assert/strict', 'buffer', 'crypto', 'events', 'path', 'path/posix', 'path/win32',
  'punycode', 'querystring', 'string_decoder', 'url', 'util', 'util/types']);
const BUILTINS = new Set(builtinModules.map((m) => m.replace(/^node:/, '')));
/** Packages that do I/O (and their subpaths): serial, GPIO, MQTT, HTTP, WebSocket, logging, storage. */
const IO_PACKAGES = /^(?:serialport|@serialport\/[^/]+|modbus-serial|onoff|epoll|aedes|mqtt|polka|ws|pino|node-persist|tar-stream)(?:\/|$)/;

/** Why a bare specifier is I/O, or null. `node:` names a builtin even where builtinModules omits it (node:test). */
function ioReason(spec: string): string | null {
  if (spec === '<computed>') return 'a dynamic import of a computed name';
  const builtin = spec.replace(/^node:/, '');
  if (spec.startsWith('node:') || BUILTINS.has(builtin)) return PURE_BUILTINS.has(builtin) ? null : `the builtin ${builtin}`;
  return IO_PACKAGES.test(spec) ? `the package ${spec}` : null;
}

test('the I/O rule sees dynamic imports, bare builtins and I/O packages (and not pure builtins or prose)', () => {
  const io = (text: string) => specifiers(text).filter((s) => ioReason(s) !== null);
  assert.equal(io("import { readFile } from 'node:fs/promises';"), ['node:fs/promises']);
  assert.equal(io('import net from "net";\nimport * as fs from \'fs\';'), ['net', 'fs']);
  assert.equal(io("const { readFile } = await import('node:fs');\nconst m = await import( 'fs' );"), ['node:fs', 'fs']);
  assert.equal(io("const x = import(`child_process`);\nconst y = import(name);\nimport 'node:test';"), ['node:test', 'child_process', '<computed>']);
  assert.equal(io("import type { SerialPort } from 'serialport';\nexport { x } from '@serialport/bindings-cpp/dist/x.js';"), ['serialport', '@serialport/bindings-cpp/dist/x.js']);
  assert.equal(io("import { EventEmitter } from 'node:events';\nimport { createHash } from 'crypto';\n// await import('node:fs')\n/* import('net') */"), []);
  assert.equal(specifiers("import { a,\n  b } from './x.js';\nexport * from \"../y.js\";\nawait import('./z.js');"), ['./x.js', '../y.js', './z.js']);
});

test('the core and the protocol import no I/O module, directly or through what they import', () => {
  const g = graph();
  const wrong: string[] = [];
  const seen = new Set<string>();
  // Depth-first from each core/protocol file along its relative imports (util/ included): a helper in util/
  // that opens a file is I/O in the core all the same.
  const visit = (file: string, trail: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const full = path.join(SRC, file);
    const source = existsSync(full) ? full : full.replace(/\.ts$/, '.js');
    if (!existsSync(source)) return;
    for (const spec of specifiers(readFileSync(source, 'utf8'))) {
      if (spec.startsWith('.')) continue;
      const why = ioReason(spec);
      if (why) wrong.push(`${[...trail, file].join(' → ')} imports '${spec}' (${why})`);
    }
    for (const dep of g.get(file) ?? []) visit(dep, [...trail, file]);
  };
  const roots = [...g.keys()].filter((f) => ['core', 'protocol'].includes(roomOf(f)));
  assert.ok(roots.length > 10, `found ${roots.length} core/protocol files`);
  for (const f of roots) visit(f, []);
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
  'drivers/modbus/serial-bytes.ts': 'non-blocking reads and writes of the tty fd (what waits or EAGAIN at once; a frame fits the tty buffer), and whether a vanished serial device node (devtmpfs, memory) is back',
  'util/version.ts': 'package.json, read once at start',
};

test('no synchronous file call outside start-up and sysfs (and the one-off CLI commands)', () => {
  const wrong = [...graph().keys()]
    .filter((f) => roomOf(f) !== 'cli' && !Object.hasOwn(SYNC_ALLOWED, f))
    .filter((f) => /\b(readFileSync|writeFileSync|appendFileSync|readdirSync|statSync|existsSync|mkdirSync|unlinkSync|renameSync|openSync|fsyncSync|rmSync|accessSync)\(/.test(readFileSync(path.join(SRC, f), 'utf8')));
  assert.equal(wrong, []);
});

test.run();
