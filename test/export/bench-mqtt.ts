// Bench (not a test: no .test.ts): change → subscriber latency at 1k/10k changes/s and burst throughput, subscriber = mosquitto_sub in its own process.
// Run: N=30000 node --import tsx test/export/bench-mqtt.ts   (the lead may move it under scripts/bench)
import { spawn } from 'node:child_process';
import { startExport } from '../../src/export/index.js';
import { makeFixture, removeDir } from './helpers.js';
const f = makeFixture();
const gw = await startExport(f.ctx);
const sub = spawn('mosquitto_sub', ['-p', String(gw.mqttPort), '-h', '127.0.0.1', '-t', 'sg/event/data', '-F', '%U %p'], { stdio: ['ignore', 'pipe', 'inherit'] });
let rest = '';
const lat: number[] = [];
let recv = 0;
let measure = true;
let lastRx = 0;
sub.stdout.on('data', (d: Buffer) => {
  const lines = (rest + d.toString()).split('\n');
  rest = lines.pop()!;
  recv += lines.length;
  lastRx = performance.now();
  if (!measure) return;
  for (const line of lines) {
    const sp = line.indexOf(' ');
    const rx = Number(line.slice(0, sp)) * 1000;
    const m = /"value":([\d.]+)/.exec(line);
    lat.push(rx - Number(m![1]));
  }
});
await new Promise((r) => setTimeout(r, 500));
async function run(rate: number, seconds: number) {
  lat.length = 0;
  const total = rate * seconds;
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    while (performance.now() < due - 1) await new Promise((r) => setImmediate(r));
    f.shadow.SetDevicePoints('dev1', { temp: Date.now() + (i % 2) / 10 });
  }
  await new Promise((r) => setTimeout(r, 1000));
  const s = [...lat].sort((a, b) => a - b);
  const q = (x: number) => s[Math.min(s.length - 1, Math.floor(x * s.length))]!.toFixed(2);
  console.log(`rate ${rate}/s: delivered ${s.length}/${total}, p50 ${q(0.5)} ms, p99 ${q(0.99)} ms`);
}
await run(1000, 3);
await run(10000, 3);
measure = false;
recv = 0;
const N = Number(process.env.N ?? 100000);
const t0 = performance.now();
for (let i = 0; i < N; i++) { f.shadow.SetDevicePoints('dev1', { temp: i }); if (i % 500 === 0) await new Promise((r) => setImmediate(r)); }
const tp = performance.now() - t0;
while (performance.now() - lastRx < 500 && performance.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 5));
const el = lastRx - t0;
console.log(`burst ${N} changes (produced in ${tp.toFixed(0)} ms): ${recv} event msgs delivered in ${el.toFixed(0)} ms = ${(recv / (el / 1000)).toFixed(0)} msg/s to one subscriber (+ as many state msgs)`, JSON.stringify(gw.stats().broker));
sub.kill('SIGTERM');
await gw.stop(); removeDir(f.dir);
