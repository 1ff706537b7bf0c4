/**
 * The long busy stretches of a V8 .cpuprofile (node --cpu-prof): runs of consecutive samples with no
 * `(idle)` between them, i.e. what the event loop did without coming back to poll — a request arriving
 * then waits. For each of the longest, its length and the gateway modules (modbus-bus/profile.ts's
 * bundle markers) on the stack in most of its samples.
 */
import { readFileSync } from 'node:fs';
import { bundleMarkers, moduleOf } from './modbus-bus/profile.js';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

export interface Turn {
  /** ms from the profile's start */
  atMs: number;
  ms: number;
  /** the gateway's own functions seen most in the stretch: `name (module) share%` */
  top: string[];
}

export function longTurns(file: string, bundle: string, fromMs: number, toMs: number, count = 10): { turns: Turn[]; busyMs: number; spanMs: number } {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const marks = bundleMarkers(bundle);
  const bundleUrl = `file://${bundle}`;
  /** The gateway's own frames on a sample's stack, innermost first, deduplicated. */
  const ownFrames = (id: number): string[] => {
    const out: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const cf = nodes.get(at)!.callFrame;
      if (cf.url !== bundleUrl) continue;
      const mod = moduleOf(marks, cf.lineNumber + 1);
      if (!mod.startsWith('dist/')) continue;
      const key = `${cf.functionName || '(anonymous)'} (${mod})`;
      if (!out.includes(key)) out.push(key);
    }
    return out;
  };
  const turns: { atMs: number; ms: number; ids: number[] }[] = [];
  let t = 0;
  let busyMs = 0;
  let open: { atMs: number; ms: number; ids: number[] } | null = null;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i]! / 1000;
    t += dt;
    if (t < fromMs || t >= toMs) continue;
    const id = prof.samples[i]!;
    const idle = nodes.get(id)!.callFrame.functionName === '(idle)';
    if (idle) {
      if (open) turns.push(open);
      open = null;
      continue;
    }
    busyMs += dt;
    open ??= { atMs: t, ms: 0, ids: [] };
    open.ms += dt;
    open.ids.push(id);
  }
  if (open) turns.push(open);
  turns.sort((a, b) => b.ms - a.ms);
  const described = turns.slice(0, count).map((turn) => {
    const seen = new Map<string, number>();
    for (const id of turn.ids) for (const f of ownFrames(id)) seen.set(f, (seen.get(f) ?? 0) + 1);
    const top = [...seen].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([f, n]) => `${f} ${Math.round((n / turn.ids.length) * 100)}%`);
    return { atMs: turn.atMs, ms: turn.ms, top };
  });
  return { turns: described, busyMs, spanMs: toMs - fromMs };
}
