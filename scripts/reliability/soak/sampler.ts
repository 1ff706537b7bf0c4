/**
 * One soak sample: what /proc says of the gateway (RSS, open fds, CPU) and what it reports itself in
 * /api/v1/system (heap, the event loop's delay over its last 10 s window, history and MQTT counters).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { rssOf } from '../../bench/child.js';
import type { Sample } from './checks.js';

/** CPU seconds (user + system) of a process so far, from /proc/PID/stat (in clock ticks of 10 ms). */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** The main thread's (the event loop's) time on a CPU and waiting for one so far, ms (/proc/PID/task/PID/schedstat). */
export function schedOf(pid: number): Sample['sched'] {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { runMs: run! / 1e6, waitMs: wait! / 1e6 } : null;
  } catch {
    return null; // a kernel without schedstat: the verdict takes the machine as unloaded
  }
}

function ownCpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

interface SystemData {
  memory?: { heapUsed?: number; heapTotal?: number };
  eventLoop?: { windowP99Ms?: number; windowMaxMs?: number; p99Ms?: number; maxMs?: number };
  history?: { recordedSamples?: number; droppedSamples?: number; compactions?: number };
  mqtt?: { exporter?: { events?: number; states?: number } };
}

export async function takeSample(pid: number, httpPort: number, t: number): Promise<Sample> {
  const proc = { rss: rssOf(pid), fds: readdirSync(`/proc/${pid}/fd`).length, cpu: cpuOf(pid), loadCpu: ownCpu(), sched: schedOf(pid) };
  const res = await fetch(`http://127.0.0.1:${httpPort}/api/v1/system`, { signal: AbortSignal.timeout(10_000) });
  const d = ((await res.json()) as { data: SystemData }).data;
  return {
    t, ...proc,
    heapUsed: d.memory?.heapUsed ?? NaN, heapTotal: d.memory?.heapTotal ?? NaN,
    eld: d.eventLoop?.windowP99Ms !== undefined ? { p99: d.eventLoop.windowP99Ms, max: d.eventLoop.windowMaxMs ?? NaN } : null,
    eldRun: d.eventLoop?.p99Ms !== undefined ? { p99: d.eventLoop.p99Ms, max: d.eventLoop.maxMs ?? NaN } : null,
    historySamples: (d.history?.recordedSamples ?? 0) + (d.history?.droppedSamples ?? 0), historyDropped: d.history?.droppedSamples ?? 0,
    exported: (d.mqtt?.exporter?.events ?? 0) + (d.mqtt?.exporter?.states ?? 0),
    ...(d.history?.compactions !== undefined ? { seals: d.history.compactions } : {}),
  };
}
