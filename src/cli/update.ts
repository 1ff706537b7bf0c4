/**
 * `shadowgate update FILE`: installs an A/B system update bundle from the box itself — the same hand-over
 * as POST /api/v1/system/update (store/update-handoff.ts) into the configured data_dir — then follows the
 * system's update service, a line for each step, until the install is over or the timeout passes.
 * Exit status 0 when installed (rebooting, or already marked good), 1 when refused, failed or timed out,
 * 2 for wrong usage.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { UpdateError, handOff } from '../store/update-handoff.js';
import { FINAL_STATES, currentStatus, notAvailableMessage, updateAvailable, type UpdateStatus } from '../store/update-status.js';

export const UPDATE_USAGE = 'usage: shadowgate update FILE.raucb [--config FILE] [--timeout SECONDS (default 1800)]';

export interface UpdateCliOptions {
  /** The data_dir of the configured gateway, or undefined when the config is invalid (already reported). */
  dataDir: (configFile: string | undefined) => Promise<string | undefined>;
  systemConf: string;
  out: (line: string) => void;
  err: (line: string) => void;
}

const DEFAULT_TIMEOUT_S = 1800;
/** status.json is another process's small file in the page cache: reading it each second costs no card write. */
const POLL_MS = 1000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mb = (n: number): string => `${(n / 1048576).toFixed(1)} MB`;

const describe = (s: UpdateStatus): string =>
  `${s.state}${s.progress !== null && s.state === 'installing' ? ` ${s.progress}%` : ''}${s.message ? `: ${s.message}` : ''}`;

/** Reads the status until a final state or the deadline (monotonic clock); the exit status. */
async function follow(dataDir: string, since: number, timeoutS: number, opts: UpdateCliOptions): Promise<number> {
  const deadline = performance.now() + timeoutS * 1000;
  let last = '';
  for (;;) {
    const status = await currentStatus(dataDir, since);
    const line = describe(status);
    if (line !== last) {
      opts.out(line);
      last = line;
    }
    if (FINAL_STATES.includes(status.state)) return status.state === 'rebooting' || status.state === 'good' ? 0 : 1;
    if (performance.now() > deadline) {
      opts.err(`shadowgate update: the install is not over after ${timeoutS} s (last: ${status.state}); it goes on: follow it in the console or with GET /api/v1/system/update`);
      return 1;
    }
    await sleep(POLL_MS);
  }
}

export async function runUpdate(args: string[], opts: UpdateCliOptions): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { config: { type: 'string', short: 'c' }, timeout: { type: 'string' } } });
  } catch (err) {
    opts.err(`${(err as Error).message}\n${UPDATE_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const timeoutS = values.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(values.timeout);
  if (positionals.length !== 1 || !(timeoutS > 0)) {
    opts.err(UPDATE_USAGE);
    return 2;
  }
  const file = positionals[0]!;
  if (!(await updateAvailable(opts.systemConf))) {
    opts.err(`shadowgate update: ${notAvailableMessage(opts.systemConf)}`);
    return 1;
  }
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new Error('not a regular file');
    size = st.size;
  } catch (err) {
    opts.err(`shadowgate update: ${file}: ${(err as Error).message}`);
    return 1;
  }
  const dataDir = await opts.dataDir(values.config);
  if (dataDir === undefined) return 1;
  const now = Date.now();
  opts.out(`handing ${file} (${mb(size)}) over to the system's update service`);
  try {
    // 1 MiB reads: fewer, larger writes to the card than the stream's default 64 kB.
    const request = await handOff(createReadStream(file, { highWaterMark: 1024 * 1024 }), { dataDir, systemConf: opts.systemConf, by: 'cli', now, expectedSize: size });
    opts.out(`handed over: ${mb(request.size)}, sha256 ${request.sha256}`);
  } catch (err) {
    if (!(err instanceof UpdateError)) throw err;
    opts.err(`shadowgate update: ${err.message}`);
    return 1;
  }
  return follow(dataDir, now, timeoutS, opts);
}
