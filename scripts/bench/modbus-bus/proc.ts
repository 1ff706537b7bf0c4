/**
 * CPU and memory of a process from /proc (Linux): utime+stime in clock ticks from /proc/<pid>/stat, RSS
 * from /proc/<pid>/status. A window's CPU share is its tick delta over its wall time; RSS is sampled
 * every second of the window (its last and its peak sample are reported).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { sleep } from './rig.js';

const TICKS_PER_S = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

interface Times { userMs: number; sysMs: number }

/** utime and stime of a process (or, with `tid`, of one of its threads) in ms. */
function times(pid: number, tid?: number): Times {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { userMs: (Number(rest[11]) * 1000) / TICKS_PER_S, sysMs: (Number(rest[12]) * 1000) / TICKS_PER_S };
}

export function cpuMs(pid: number, tid?: number): number {
  const t = times(pid, tid);
  return t.userMs + t.sysMs;
}

/** Times a thread went to sleep (voluntary context switches): for an event loop, its wake-ups. */
function sleeps(pid: number, tid: number): number {
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1]);
}

/** RSS, MB, and its anonymous part (heaps, buffers: what the program allocates) and file-backed part (node's own code pages). */
export function rssMb(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1]) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

export interface Window {
  /** performance.now() at the window's start and end. */
  from: number;
  to: number;
  cpuMs: number;
  /** CPU time over wall time, % of one core. */
  cpuPct: number;
  /** CPU of the main (JS, event loop) thread; the rest ran on V8's GC/compiler helpers and libuv's pool */
  mainThreadMs: number;
  /** of which in the kernel (system calls: epoll, reads, writes, timers) */
  mainSysMs: number;
  /** event-loop wake-ups of the main thread per second */
  wakeupsPerS: number;
  rssLastMb: number;
  rssPeakMb: number;
  /** the last sample's anonymous and file-backed parts */
  rssAnonMb: number;
  rssFileMb: number;
  /** the machine's 1-minute load average at the window's end: other work competing for the cores */
  load1: number;
}

/**
 * Measures `pid` over `seconds`. `alive` is checked each second: a process that dies in the window
 * fails the measurement instead of reporting a short one.
 */
export async function measureWindow(pid: number, seconds: number, alive: () => boolean): Promise<Window> {
  const from = performance.now();
  const cpu0 = cpuMs(pid);
  const main0 = times(pid, pid);
  const sleeps0 = sleeps(pid, pid);
  let last = rssMb(pid);
  let rssPeakMb = last.rss;
  for (let s = 0; s < seconds; s++) {
    await sleep(Math.max(0, from + (s + 1) * 1000 - performance.now()));
    if (!alive()) throw new Error(`process ${pid} exited during the measurement window`);
    last = rssMb(pid);
    rssPeakMb = Math.max(rssPeakMb, last.rss);
  }
  const cpu1 = cpuMs(pid);
  const main1 = times(pid, pid);
  const sleeps1 = sleeps(pid, pid);
  const to = performance.now();
  return {
    from, to, cpuMs: cpu1 - cpu0, cpuPct: ((cpu1 - cpu0) / (to - from)) * 100,
    mainThreadMs: main1.userMs + main1.sysMs - main0.userMs - main0.sysMs, mainSysMs: main1.sysMs - main0.sysMs,
    wakeupsPerS: ((sleeps1 - sleeps0) * 1000) / (to - from), rssLastMb: last.rss, rssPeakMb, rssAnonMb: last.anon, rssFileMb: last.file,
    load1: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
  };
}
