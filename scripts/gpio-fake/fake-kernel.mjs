#!/usr/bin/env node
// A stand-in for the kernel's GPIO sysfs, for tests only. Run it inside a private mount namespace with
// a tmpfs over /sys/class (scripts/gpio-fake/run-in-namespace.ts does): it creates gpiochipN/ entries
// for a scenario and answers writes to export/unexport by creating/removing gpioN/, as the kernel does.
// It must be a separate process: onoff's constructor busy-waits synchronously for gpioN/ to appear.
//
// usage: node fake-kernel.mjs <root> <scenario>     scenario: pi4 | pi5
// Writes <root>/../.fake-kernel.log (JSON lines) and <root>/../.fake-kernel.ready when set up (beside
// root, not in it, so our own writes do not wake the watcher).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [root = '/sys/class/gpio', scenario = 'pi5'] = process.argv.slice(2);

// Decoys sit BELOW the header chip on purpose: a driver that takes the lowest base picks the wrong one.
const SCENARIOS = {
  pi4: [
    { base: 504, ngpio: 8, label: 'raspberrypi-exp-gpio' },
    { base: 512, ngpio: 58, label: 'pinctrl-bcm2711' },
  ],
  pi5: [
    { base: 512, ngpio: 32, label: 'gpio-brcmstb@107d508500' },
    { base: 544, ngpio: 15, label: 'gpio-brcmstb@107d517c00' },
    { base: 571, ngpio: 54, label: 'pinctrl-rp1' },
  ],
};
const chips = SCENARIOS[scenario];
if (!chips) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}

const logFile = path.join(root, '..', '.fake-kernel.log');
const log = (entry) => fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');

fs.mkdirSync(root, { recursive: true });
for (const chip of chips) {
  const dir = path.join(root, `gpiochip${chip.base}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'base'), `${chip.base}\n`);
  fs.writeFileSync(path.join(dir, 'ngpio'), `${chip.ngpio}\n`);
  fs.writeFileSync(path.join(dir, 'label'), `${chip.label}\n`);
}
const exportFile = path.join(root, 'export');
const unexportFile = path.join(root, 'unexport');
fs.writeFileSync(exportFile, '');
// unexport is a FIFO: stop() unexports line after line without waiting, and a plain file would keep
// only the last number. Opened read-write so writers never block on open and we never see EOF, and
// non-blocking through net.Socket: a blocking FIFO read in the thread pool makes process.exit hang.
execFileSync('mkfifo', [unexportFile]);
const unexportStream = new net.Socket({
  fd: fs.openSync(unexportFile, fs.constants.O_RDWR | fs.constants.O_NONBLOCK),
  readable: true,
  writable: false,
});

const valid = (n) => chips.some((c) => n >= c.base && n < c.base + c.ngpio);

// Take what a writer put in a sysfs control file. Emptied BEFORE acting: the writer busy-waits on the
// result, so it cannot write again between our read and the truncate.
function take(file) {
  const text = fs.readFileSync(file, 'utf8').trim();
  if (text === '') return undefined;
  fs.writeFileSync(file, '');
  return Number(text);
}

function onExport() {
  const n = take(exportFile);
  if (n === undefined) return;
  const dir = path.join(root, `gpio${n}`);
  if (!Number.isInteger(n) || !valid(n)) return log({ op: 'export', n, ok: false, error: 'EINVAL' });
  if (fs.existsSync(dir)) return log({ op: 'export', n, ok: false, error: 'EBUSY' });
  // Build aside and rename: the writer must never see a half-made directory.
  const tmp = path.join(root, `.tmp-gpio${n}`);
  fs.mkdirSync(tmp);
  for (const [name, value] of [['direction', 'in'], ['edge', 'none'], ['active_low', '0'], ['value', '0']]) {
    fs.writeFileSync(path.join(tmp, name), `${value}\n`);
  }
  fs.renameSync(tmp, dir);
  log({ op: 'export', n, ok: true });
}

// Writes of a few bytes are atomic but may arrive joined ("517518"): split them at the numbers that
// are exported (the longest that matches), as only those can be meant.
let pending = '';
function onUnexportData(chunk) {
  pending += chunk.toString();
  while (pending !== '') {
    let match = '';
    for (let len = 1; len <= pending.length; len++) {
      const candidate = pending.slice(0, len);
      if (fs.existsSync(path.join(root, `gpio${candidate}`))) match = candidate;
    }
    if (match === '') {
      log({ op: 'unexport', raw: pending, ok: false, error: 'EINVAL' });
      pending = '';
      return;
    }
    pending = pending.slice(match.length);
    fs.rmSync(path.join(root, `gpio${match}`), { recursive: true, force: true });
    log({ op: 'unexport', n: Number(match), ok: true });
  }
}
unexportStream.on('data', onUnexportData);

// The kernel turns "high"/"low" written to direction into an output at that level (same inode for
// value: onoff keeps an fd open on it).
function normalizeDirections() {
  for (const entry of fs.readdirSync(root)) {
    if (!/^gpio\d+$/.test(entry)) continue;
    const file = path.join(root, entry, 'direction');
    let text;
    try {
      text = fs.readFileSync(file, 'utf8').trim();
    } catch {
      continue;
    }
    if (text === 'high' || text === 'low') {
      fs.writeFileSync(path.join(root, entry, 'value'), text === 'high' ? '1\n' : '0\n');
      fs.writeFileSync(file, 'out\n');
    }
  }
}

function tick() {
  try {
    onExport();
    normalizeDirections();
  } catch (e) {
    log({ op: 'error', error: String(e) });
  }
}

// inotify for speed (onoff waits ~100 ms at most), a short interval in case an event is coalesced.
fs.watch(root, tick);
const interval = setInterval(tick, 5);

// Never outlive the test: exit when orphaned or after a hard limit.
const parent = process.ppid;
const guard = setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 200);
setTimeout(() => process.exit(0), Number(process.env.FAKE_KERNEL_MAX_MS ?? 30_000)).unref();
process.on('SIGTERM', () => {
  clearInterval(interval);
  clearInterval(guard);
  unexportStream.destroy();
  process.exit(0);
});
fs.writeFileSync(path.join(root, '..', '.fake-kernel.ready'), String(process.pid));
