// The parts `make test` runs side by side (scripts/test.mjs): each a child process in a process group of its
// own, its output kept (and streamed only when it runs alone), bounded in time: past its limit the whole group
// is killed and the part fails, so a hung emulator or test never holds CI to its 90 minutes.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Runs `cmd args` as part `name`; resolves with its output, exit status, wall seconds and whether its limit
 * killed it. `stream` writes the output through as it comes (one part at a time only: parts side by side
 * would interleave line by line). `onLine(line, seconds)` sees each whole line as it arrives.
 */
export function runPart(name, cmd, args, { env = {}, limitS = 1800, stream = false, onLine } = {}) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let partial = '';
    let timedOut = false;
    const keep = (chunk) => {
      out += chunk;
      if (stream) process.stdout.write(chunk);
      if (!onLine) return;
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      for (const line of lines) onLine(line, (performance.now() - t0) / 1000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const killGroup = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // the group is gone already
      }
    };
    const limit = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 10_000).unref();
    }, limitS * 1000);
    child.on('error', (err) => {
      clearTimeout(limit);
      resolve({ name, out: `${out}\n${err.message}`, status: 1, seconds: (performance.now() - t0) / 1000, timedOut });
    });
    child.on('close', (status, signal) => {
      clearTimeout(limit);
      // What the part left behind in its group (a test's stray child) goes with it.
      killGroup('SIGKILL');
      const note = timedOut ? `\n${name}: killed after its limit of ${limitS} s\n` : '';
      resolve({ name, out: out + note, status: status ?? (signal ? 1 : 0), seconds: (performance.now() - t0) / 1000, timedOut });
    });
  });
}

/** uvu's summary of a run: Total (skips excluded), Passed, Skipped; failed = Total - Passed, or the ✘ marks. */
export function uvuCounts(text) {
  const num = (k) => Number((text.match(new RegExp(`^\\s*${k}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed') || 0;
  const skipped = num('Skipped') || 0;
  const failed = Number.isNaN(total) ? Math.max(1, (text.match(/✘/g) ?? []).length) : total - passed;
  return { total, passed, failed, skipped };
}

/** The image test's own closing line, "image: N passed, N failed, N skipped" (a run without it failed). */
export function imageCounts(text) {
  const m = text.match(/^image: (\d+) passed, (\d+) failed, (\d+) skipped$/m);
  return m ? { total: Number(m[1]) + Number(m[2]), passed: Number(m[1]), failed: Number(m[2]), skipped: Number(m[3]) }
    : { total: 0, passed: 0, failed: 1, skipped: 0 };
}

/** Every `*.test.ts` below `dir`, as paths relative to it (what uvu matches its pattern against). */
export function testFiles(dir) {
  const out = [];
  const walk = (rel) => {
    for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(name);
      else if (name.endsWith('.test.ts')) out.push(name);
    }
  };
  walk('');
  return out.sort();
}

/**
 * Splits the files into `n` shards of about equal time: longest first, each to the shard with the least so far
 * (weights: seconds per file measured on a full run, scripts/test-weights.json; a file not in it counts as the
 * median). The order inside a shard stays alphabetical, as a single run's is.
 */
export function shard(files, n, weightsFile) {
  let weights = {};
  try {
    weights = JSON.parse(readFileSync(weightsFile, 'utf8'));
  } catch {
    // no table yet: every file counts the same
  }
  const known = Object.values(weights).sort((a, b) => a - b);
  const median = known.length ? known[Math.floor(known.length / 2)] : 1;
  const shards = Array.from({ length: n }, () => ({ files: [], seconds: 0 }));
  for (const file of [...files].sort((a, b) => (weights[b] ?? median) - (weights[a] ?? median))) {
    const lightest = shards.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    lightest.files.push(file);
    lightest.seconds += weights[file] ?? median;
  }
  for (const s of shards) s.files.sort();
  return shards;
}

/** A uvu pattern that matches exactly these relative paths. */
export function exactPattern(files) {
  return `^(${files.map((f) => f.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})$`;
}
