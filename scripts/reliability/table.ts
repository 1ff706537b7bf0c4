/**
 * The reliability campaign's one table (issue 15): every campaign returns rows, `make reliability` prints them
 * and writes build/reliability.md; a row that misses its goal makes the run exit non-zero.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface Row {
  /** What was done, e.g. "SIGKILL during ingest". */
  test: string;
  /** How many times it was done. */
  trials: number;
  /** How many of them the gateway came through with every check passing. */
  survived: number;
  /** What was lost, in words with a number ("0 values", "≤ 1 persist_interval", "3 samples"). */
  lost: string;
  /** The measured figure the goal is about, with its unit ("p99 4.1 ms", "RSS +2.3%"). */
  figure: string;
  /** The goal in words ("200/200 restored, loss ≤ 10 s"). */
  goal: string;
  /** Whether the goal was met. */
  ok: boolean;
  /** Why it missed, or what else a maintainer should know (printed under the table). */
  note?: string;
}

/** A campaign: `reduced` is the short version `make test` runs (under 3 minutes for all campaigns together). */
/** `trials`: only the trials whose name it matches (a campaign with named trials; the rest ignore it). */
export type Campaign = (opts: { reduced: boolean; log: (line: string) => void; trials?: RegExp }) => Promise<Row[]>;

const cell = (s: string | number): string => String(s).replace(/\|/g, '\\|');

export function formatTable(rows: readonly Row[]): string {
  const head = ['test', 'trials', 'survived', 'lost', 'figure', 'goal', 'result'];
  const body = rows.map((r) => [r.test, r.trials, r.survived, r.lost, r.figure, r.goal, r.ok ? 'ok' : 'MISS'].map(cell));
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...body.map((c) => `| ${c.join(' | ')} |`)];
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.test}: ${r.note}`);
  return [...lines, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

export async function writeReport(rows: readonly Row[], header: string, file = path.resolve('build/reliability.md')): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `# Reliability campaign\n\n${header}\n\n${formatTable(rows)}\n`);
}
