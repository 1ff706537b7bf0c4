/**
 * Sums up a .heapsnapshot (scripts/bench/heap-profile.ts writes one): self size by (type, constructor) with what
 * retains each group on a shortest path from the root (HEAP_DEPTH retainers up), then bytes by the nearest owning
 * instance of a named class and its field (e.g. `HaPublisher.sent`), then, with HEAP_OWNER=text, the groups under
 * the owners matching it. Array buffers' backing stores count at their byte length.
 * Run: `node --max-old-space-size=4096 scripts/bench/heap-top.mjs FILE [ROWS]`.
 */
import { readFileSync } from 'node:fs';
const snap = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 25);
/** How many retainers up a group's bytes are attributed (HEAP_DEPTH). */
const depth = Number(process.env.HEAP_DEPTH ?? 1);
const m = snap.snapshot.meta;
const NF = m.node_fields.length, EF = m.edge_fields.length;
const nTypes = m.node_fields.indexOf('type'), nName = m.node_fields.indexOf('name'), nSelf = m.node_fields.indexOf('self_size'), nEdges = m.node_fields.indexOf('edge_count');
const eType = m.edge_fields.indexOf('type'), eName = m.edge_fields.indexOf('name_or_index'), eTo = m.edge_fields.indexOf('to_node');
const typeNames = m.node_types[0], edgeTypes = m.edge_types[0];
const nodes = snap.nodes, edges = snap.edges, strings = snap.strings;
const N = nodes.length / NF;
const group = new Array(N);
const groupOf = (i) => {
  const t = typeNames[nodes[i * NF + nTypes]];
  const name = strings[nodes[i * NF + nName]];
  if (t === 'object' || t === 'closure' || t === 'native') return `${t}:${name}`;
  if (t === 'array' || t === 'hidden' || t === 'code') return `${t}:${name.slice(0, 40)}`;
  return `(${t})`;
};
const agg = new Map();
let total = 0;
for (let i = 0; i < N; i++) {
  const g = groupOf(i); group[i] = g;
  const s = nodes[i * NF + nSelf]; total += s;
  const a = agg.get(g) ?? { n: 0, bytes: 0 }; a.n++; a.bytes += s; agg.set(g, a);
}
// Each node's retainer on a shortest path from the root (breadth first over strong edges): a tree, so the bytes
// attributed below add up, as DevTools' "distance" does.
const firstEdge = new Int32Array(N + 1);
for (let i = 0, acc = 0; i < N; i++) { firstEdge[i] = acc; acc += nodes[i * NF + nEdges] * EF; firstEdge[i + 1] = acc; }
const retainer = new Int32Array(N).fill(-1), retEdge = new Array(N);
const seen = new Uint8Array(N);
const queue = new Int32Array(N);
let qh = 0, qt = 0;
queue[qt++] = 0; seen[0] = 1;
while (qh < qt) {
  const i = queue[qh++];
  for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += EF) {
    const et = edgeTypes[edges[e + eType]];
    if (et === 'weak' || et === 'shortcut') continue;
    const to = edges[e + eTo] / NF;
    if (seen[to]) continue;
    seen[to] = 1; queue[qt++] = to;
    retainer[to] = i;
    retEdge[to] = et === 'element' || et === 'hidden' ? `[${et}]` : String(strings[edges[e + eName]]).slice(0, 30);
  }
}
const sorted = [...agg].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top);
console.log(`total self size ${(total / 2 ** 20).toFixed(1)} MB, ${N} nodes`);
for (const [g, a] of sorted) {
  const by = new Map();
  for (let i = 0; i < N; i++) {
    if (group[i] !== g) continue;
    let k = '';
    for (let j = i, d = 0; d < depth; d++) {
      const r = retainer[j];
      if (r < 0) { k += ' ← (root)'; break; }
      k += ` ← ${group[r]}.${retEdge[j]}`;
      j = r;
    }
    by.set(k, (by.get(k) ?? 0) + nodes[i * NF + nSelf]);
  }
  const rs = [...by].sort((x, y) => y[1] - x[1]).slice(0, 4).map(([k, b]) => `${(b / 2 ** 20).toFixed(2)}${k}`).join('\n           ');
  console.log(`${(a.bytes / 2 ** 20).toFixed(2).padStart(8)} MB ${String(a.n).padStart(8)}  ${g}\n           ${rs}`);
}

// Bytes by owner: each node's self size goes to the first object up its first-retainer chain that is an instance
// of a named class (not a plain Object/Array/Map/closure context), keyed by that owner and the edge taken from it.
const PLAIN = /^(object:(Object|Array|Map|Set|ArrayBuffer|SharedArrayBuffer|Buffer|\w*Array|system \/ .*|WeakMap)|array:.*|hidden:.*|closure:.*|code:.*|native:.*|\(.*\))$/;
const owners = new Map();
const ownerOf = new Int32Array(N).fill(-2);
const ownerKey = new Array(N);
function resolve(i) {
  const stack = [];
  let j = i;
  while (ownerOf[j] === -2) {
    stack.push(j);
    const r = retainer[j];
    if (r < 0) { ownerOf[j] = -1; ownerKey[j] = '(root)'; break; }
    if (!PLAIN.test(group[r])) { ownerOf[j] = r; ownerKey[j] = `${group[r]}.${retEdge[j]}`; break; }
    ownerOf[j] = -3; // in progress (cycles in first-retainer links cannot happen, but guard anyway)
    j = r;
  }
  const key = ownerKey[j] ?? '(cycle)';
  for (const s of stack) { ownerKey[s] = key; if (ownerOf[s] === -3) ownerOf[s] = -4; }
  return key;
}
for (let i = 0; i < N; i++) {
  const k = resolve(i);
  owners.set(k, (owners.get(k) ?? 0) + nodes[i * NF + nSelf]);
}
console.log('\nbytes by owning class instance and field:');
for (const [k, b] of [...owners].sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${(b / 2 ** 20).toFixed(2).padStart(8)} MB  ${k}`);

// HEAP_OWNER=<text>: what the bytes of the owners matching it are, by group.
if (process.env.HEAP_OWNER) {
  const by = new Map();
  for (let i = 0; i < N; i++) {
    if (!ownerKey[i]?.includes(process.env.HEAP_OWNER)) continue;
    const a = by.get(group[i]) ?? { n: 0, bytes: 0 };
    a.n++; a.bytes += nodes[i * NF + nSelf];
    by.set(group[i], a);
  }
  console.log(`\nowners matching ${process.env.HEAP_OWNER}:`);
  for (const [g, a] of [...by].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, 12)) console.log(`${(a.bytes / 2 ** 20).toFixed(2).padStart(8)} MB ${String(a.n).padStart(8)}  ${g}`);
}
