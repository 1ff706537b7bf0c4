/**
 * The MQTT part's files in data_dir, checked before it starts: its stores start empty (retained messages) or
 * skip torn lines (the bridge queue) without a trace, so a damaged one is set aside here, where it is kept
 * and reported (store/damage.ts). Only what a start can judge cheaply is read: the retained file whole
 * (small), of each queue segment its first and last 64 KiB (a queue may hold tens of MB).
 */
import { open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DamageSink } from '../store/damage.js';

const EDGE = 64 * 1024;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

async function checkRetained(file: string, damage: DamageSink): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return;
  }
  try {
    const list = JSON.parse(text) as unknown;
    if (!Array.isArray(list) || !list.every((m) => isObj(m) && typeof m.topic === 'string')) throw new Error('not a list of retained messages');
  } catch (err) {
    await damage.setAside(file, `retained MQTT messages unreadable (${(err as Error).message}): clients' retained messages are lost; the gateway's own are published again`);
  }
}

/** A segment is appended in whole lines: garbage at its head is damage, a tail without its newline a torn append. */
async function checkSegment(file: string, damage: DamageSink): Promise<void> {
  const fh = await open(file, 'r').catch(() => undefined);
  if (!fh) return;
  let problem: 'garbage' | 'torn' | undefined;
  try {
    const size = (await fh.stat()).size;
    if (size === 0) return; // a new segment before its first append
    const head = Buffer.alloc(Math.min(EDGE, size));
    await fh.read(head, 0, head.length, 0);
    const nl = head.indexOf(0x0a);
    if (nl >= 0 || size <= EDGE) {
      try {
        if (!isObj(JSON.parse(head.subarray(0, nl >= 0 ? nl : head.length).toString('utf8')))) problem = 'garbage';
      } catch {
        // The start of a JSON line without its end: a torn first append; anything else is garbage.
        problem = nl < 0 && head[0] === 0x7b ? 'torn' : 'garbage';
      }
    }
    if (!problem) {
      const last = Buffer.alloc(1);
      await fh.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) problem = 'torn';
    }
  } finally {
    await fh.close();
  }
  if (problem === 'garbage') await damage.setAside(file, 'bridge queue segment unreadable: its queued messages are not sent upstream');
  else if (problem === 'torn') await damage.repaired(file, 'bridge queue segment ends with a line cut short; that message is not sent upstream');
}

export async function checkExportFiles(dataDir: string, damage: DamageSink): Promise<void> {
  await checkRetained(path.join(dataDir, 'mqtt', 'retained.json'), damage);
  const queueDir = path.join(dataDir, 'mqtt', 'bridge-queue');
  const names = await readdir(queueDir).catch(() => [] as string[]);
  for (const name of names.filter((n) => /^seg-\d+\.jsonl$/.test(n)).sort()) await checkSegment(path.join(queueDir, name), damage);
}
