/**
 * Reading a V8 .cpuprofile (node --cpu-prof): self time per function over a time window of the profile,
 * and per module. The release bundle is one file, so a bundle line is mapped back to the module it came
 * from through esbuild's `// path/to/module.js` markers (kept when the bundle is not minified).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export interface Entry {
  /** function name (or V8's `(garbage collector)`, `(program)`, …) */
  fn: string;
  /** module and 1-based line: `dist/core/shadow.js (bundle:1234)`, `node:internal/…:56` */
  where: string;
  module: string;
  samples: number;
  /** % of the non-idle samples of the window */
  pct: number;
}

export interface Profile {
  /** non-idle samples in the window, and all samples in it */
  busy: number;
  total: number;
  /** mean sampling interval, ms */
  intervalMs: number;
  top: Entry[];
  /** self time by module (a package for node_modules) */
  modules: { module: string; samples: number; pct: number }[];
  /** inclusive: % of busy samples with the module anywhere on the stack */
  onStack: { module: string; samples: number; pct: number }[];
  /** inclusive time of the gateway's own functions (dist/…): which of its paths the CPU goes through */
  ownPaths: Entry[];
}

/** Module markers of an esbuild bundle: [line (1-based), module path], ascending. */
export function bundleMarkers(file: string): [number, string][] {
  const out: [number, string][] = [];
  readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    const m = /^\/\/ (\S+\.(?:m?js|cjs|json))$/.exec(line);
    if (m) out.push([i + 1, m[1]!.replace(/^build\/\.dist-stage\.[^/]+\//, '')]);
  });
  return out;
}

export function moduleOf(markers: [number, string][], line: number): string {
  let lo = 0;
  let hi = markers.length - 1;
  let found = '';
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (markers[mid]![0] <= line) { found = markers[mid]![1]; lo = mid + 1; } else hi = mid - 1;
  }
  return found || 'bundle prelude';
}

/** Package-level grouping: `node_modules/aedes/lib/x.js` → `aedes`, `dist/core/x.js` stays. */
const packageOf = (module: string): string => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(module);
  return m ? m[1]! : module;
};

/**
 * Self time over [fromMs, toMs) measured from the profile's start (the process start, give or take the
 * few ms before V8 starts the profiler).
 */
export function readProfile(file: string, fromMs: number, toMs: number, bundle: string, topN = 15): Profile {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
  const bundleUrl = `file://${bundle}`;
  const markers = bundleMarkers(bundle);
  const counts = new Map<number, number>();
  let t = 0;
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i]! / 1000;
    if (t < fromMs || t >= toMs) continue;
    total++;
    counts.set(prof.samples[i]!, (counts.get(prof.samples[i]!) ?? 0) + 1);
  }
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byFn = new Map<string, Entry>();
  const stackModules = new Map<string, number>();
  const ownFns = new Map<string, Entry>();
  const byModule = new Map<string, number>();
  let busy = 0;
  const locate = (cf: CallFrame): { module: string; where: string } => {
    const line = cf.lineNumber + 1;
    if (cf.url === bundleUrl) {
      const module = moduleOf(markers, line);
      return { module, where: `${module} (bundle:${line})` };
    }
    if (cf.url) {
      const module = cf.url.startsWith('file://') ? fileURLToPath(cf.url) : cf.url;
      return { module, where: `${module}:${line}` };
    }
    return { module: cf.functionName.startsWith('(') ? cf.functionName : '(native)', where: '' };
  };
  for (const [id, n] of counts) {
    const cf = nodes.get(id)!.callFrame;
    if (cf.functionName === '(idle)') continue;
    busy += n;
    const { module, where } = locate(cf);
    const seen = new Set<string>();
    const own = new Map<string, Entry>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at)!.callFrame;
      const loc = locate(frame);
      seen.add(packageOf(loc.module));
      if (loc.module.startsWith('dist/')) {
        const fn = frame.functionName || '(anonymous)';
        own.set(`${fn}@${loc.where}`, { fn, where: loc.where, module: loc.module, samples: 0, pct: 0 });
      }
    }
    for (const m of seen) stackModules.set(m, (stackModules.get(m) ?? 0) + n);
    for (const [k, e] of own) {
      const acc = ownFns.get(k) ?? e;
      acc.samples += n;
      ownFns.set(k, acc);
    }
    const fn = cf.functionName || '(anonymous)';
    const key = `${fn}@${where}`;
    const e = byFn.get(key) ?? { fn, where, module, samples: 0, pct: 0 };
    e.samples += n;
    byFn.set(key, e);
    const pkg = packageOf(module);
    byModule.set(pkg, (byModule.get(pkg) ?? 0) + n);
  }
  const pct = (n: number): number => (busy ? (n / busy) * 100 : 0);
  const top = [...byFn.values()].sort((a, b) => b.samples - a.samples).slice(0, topN).map((e) => ({ ...e, pct: pct(e.samples) }));
  const modules = [...byModule].sort((a, b) => b[1] - a[1]).slice(0, topN).map(([module, samples]) => ({ module, samples, pct: pct(samples) }));
  const onStack = [...stackModules].filter(([m]) => !m.startsWith('(') && !m.startsWith('node:internal/')).sort((a, b) => b[1] - a[1]).slice(0, topN)
    .map(([module, samples]) => ({ module, samples, pct: pct(samples) }));
  const ownPaths = [...ownFns.values()].sort((a, b) => b.samples - a.samples).slice(0, topN).map((e) => ({ ...e, pct: pct(e.samples) }));
  const span = toMs - fromMs;
  return { busy, total, intervalMs: total ? span / total : 0, top, modules, onStack, ownPaths };
}
