/**
 * Process-level figures of the built gateway (dist/): RSS for 1,000 devices × 100 points over an empty
 * gateway, start-to-ready with 100k points restored, and REST req/s against a bare node:http server
 * answering the same bytes, all measured in this run.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import type { Result } from './report.js';
import { report } from './report.js';
import { existsSync } from 'node:fs';
import { BUNDLE, entryOf, MAIN, rssOf, startChild, stopChild, writeFleetConfig } from './child.js';
import { startToReady, startupResults } from './startup.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function load(url: string, seconds: number): Promise<{ rps: number; p99: number; errors: number }> {
  const r = await autocannon({ url, connections: 50, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/** The baseline server: node:http answering a constant body of the same size. */
async function bareServer(body: string): Promise<{ port: number; stop(): Promise<void> }> {
  const src = `const http=require('http');const b=Buffer.from(${JSON.stringify(body)});` +
    `const s=http.createServer((q,r)=>{r.writeHead(200,{'content-type':'application/json','content-length':b.length});r.end(b)});` +
    `s.listen(0,'127.0.0.1',()=>console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', () => reject(new Error('baseline server died')));
  });
  return { port, stop: () => stopChild(child) };
}

export async function benchGateway(): Promise<Result[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-bench-'));
  const results: Result[] = [];
  try {
    // RSS: empty gateway vs 1,000 × 100 points, both settled after their first polls.
    const emptyCfg = path.join(dir, 'empty.json');
    await writeFleetConfig(emptyCfg, path.join(dir, 'empty-data'), 0, 0);
    const empty = await startChild(emptyCfg);
    await settle(1500);
    const rssEmpty = rssOf(empty.child.pid!);
    await empty.stop();

    const fleetCfg = path.join(dir, 'fleet.json');
    await writeFleetConfig(fleetCfg, path.join(dir, 'fleet-data'), 1000, 100);
    const fleet = await startChild(fleetCfg);
    await settle(2500);
    const rssFleet = rssOf(fleet.child.pid!);
    results.push({ name: 'RSS, 1,000 devices × 100 points', measured: rssFleet / 2 ** 20, target: 100, unit: 'MB', higherIsBetter: false,
      note: `empty gateway ${(rssEmpty / 2 ** 20).toFixed(1)} MB` });
    results.push({ name: 'RSS per point over an empty gateway', measured: (rssFleet - rssEmpty) / 100_000, target: 300, unit: 'B', higherIsBetter: false });

    // REST shadow/devicePoint against a bare server answering the same bytes.
    const pathQ = '/api/v1/shadow/devicePoint?id=dev-7&point=p42';
    const body = await (await fetch(`http://127.0.0.1:${fleet.port}${pathQ}`)).text();
    await load(`http://127.0.0.1:${fleet.port}${pathQ}`, 2); // warm-up
    const ours = await load(`http://127.0.0.1:${fleet.port}${pathQ}`, 8);
    await fleet.stop(); // final save: the snapshot the restore figure below starts from
    const bare = await bareServer(body);
    await load(`http://127.0.0.1:${bare.port}/`, 2);
    const base = await load(`http://127.0.0.1:${bare.port}/`, 8);
    await bare.stop();
    results.push({ name: 'REST shadow/devicePoint vs bare node:http', measured: ours.rps / base.rps, target: 0.8, unit: '×', higherIsBetter: true,
      note: `${Math.round(ours.rps)} vs ${Math.round(base.rps)} req/s, p99 ${ours.p99} ms vs ${base.p99} ms, errors ${ours.errors}` });

    // Start-to-ready with the 100k points restored from the snapshot saved on stop: the dev build
    // (dist/main.js, `make run`) and the release bundle the systemd unit runs.
    const entries = [entryOf(MAIN), ...(existsSync(BUNDLE) ? [entryOf(BUNDLE)] : [])];
    results.push(...startupResults(entries, await startToReady(fleetCfg, entries, 5)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) report(await benchGateway());
