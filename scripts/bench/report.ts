/** One line per figure: measured / target, and whether the target is met. */
export interface Result {
  name: string;
  measured: number;
  target: number;
  unit: string;
  higherIsBetter: boolean;
  note?: string;
}

const fmt = (n: number): string =>
  Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en') : n.toFixed(n < 10 ? 2 : 1);

export function report(results: readonly Result[]): void {
  for (const r of results) {
    const ok = r.higherIsBetter ? r.measured >= r.target : r.measured <= r.target;
    const rel = r.higherIsBetter ? '≥' : '≤';
    console.log(`${ok ? 'MET ' : 'MISS'} ${r.name}: ${fmt(r.measured)} ${r.unit} / target ${rel} ${fmt(r.target)} ${r.unit}${r.note ? ` (${r.note})` : ''}`);
  }
}
