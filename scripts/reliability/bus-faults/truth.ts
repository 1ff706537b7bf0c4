/**
 * The slave's truth (truth-slave.py): every poll answer of unit u carries u, a sequence number, a checksum
 * of both and five words derived from u, their address and the sequence. A value the gateway reports is
 * genuine when it checks itself AND the slave's log says it served that (unit, seq). Anything else — a
 * corrupted frame that passed CRC by chance, another unit's answer, another master's answer, a replay of an
 * older answer — is counted as a corrupted value that reached the shadow.
 */

/** The model the gateway polls: one 10-register read, every point reported on every cycle. */
export const TRUTH_MODEL = {
  points: [
    { name: 'id', type: 'int', access: 'R', report: 'always', modbus: { table: 'holding', address: 0, data_type: 'uint16' } },
    { name: 'seq', type: 'int', access: 'R', report: 'always', modbus: { table: 'holding', address: 1, data_type: 'uint32' } },
    { name: 'chk', type: 'int', access: 'R', report: 'always', modbus: { table: 'holding', address: 3, data_type: 'uint32' } },
    ...[5, 6, 7, 8, 9].map((a) => ({ name: `w${a}`, type: 'int', access: 'R', report: 'always', modbus: { table: 'holding', address: a, data_type: 'uint16' } })),
  ],
};

export const chk = (u: number, seq: number): number => ((Math.imul((seq ^ (u << 24)) >>> 0, 2654435761) >>> 0) + 0x9e37) >>> 0;

/** Why a reported cycle of unit `u` is not a genuine answer of u, or null when it is (served is checked later). */
export function selfCheck(u: number, values: Record<string, unknown>): string | null {
  const seq = values['seq'];
  if (values['id'] !== u) return `id ${String(values['id'])} (another unit's answer?)`;
  if (typeof seq !== 'number' || !Number.isInteger(seq)) return `seq ${String(seq)}`;
  if (values['chk'] !== chk(u, seq)) return `chk ${String(values['chk'])} != ${chk(u, seq)} for seq ${seq}`;
  for (let a = 5; a <= 9; a++) {
    const want = (u * 1000 + 7 * a + seq) & 0xffff;
    if (values[`w${a}`] !== want) return `w${a} ${String(values[`w${a}`])} != ${want} for seq ${seq}`;
  }
  return null;
}

/** What the slaves served, from their "S <unit> <seq>" lines. */
export class TruthLog {
  private readonly served = new Map<number, Set<number>>();

  line(text: string): void {
    const m = /^S (\d+) (\d+)$/.exec(text.trim());
    if (!m) return;
    const u = Number(m[1]);
    let set = this.served.get(u);
    if (!set) this.served.set(u, (set = new Set()));
    set.add(Number(m[2]));
  }

  has(u: number, seq: number): boolean {
    return this.served.get(u)?.has(seq) ?? false;
  }

  count(u: number): number {
    return this.served.get(u)?.size ?? 0;
  }
}

export interface Report {
  device: string;
  unit: number;
  at: number;
  values: Record<string, unknown>;
}

/**
 * Checks every reported cycle: self-consistent, served by the slave, and newer than the one before it
 * (a replayed or stale answer is as wrong as a garbled one). Returns the bad reports with the reason.
 */
export function verify(reports: readonly Report[], truth: TruthLog): { report: Report; why: string }[] {
  const bad: { report: Report; why: string }[] = [];
  const last = new Map<string, number>();
  for (const report of reports) {
    const seq = report.values['seq'] as number;
    const prev = last.get(report.device) ?? -1;
    const why = selfCheck(report.unit, report.values)
      ?? (!truth.has(report.unit, seq) ? `seq ${seq} was never served by unit ${report.unit}` : null)
      ?? (seq <= prev ? `seq ${seq} after ${prev} (a stale answer)` : null);
    if (why) bad.push({ report, why: `${report.device}: ${why}` });
    else last.set(report.device, seq);
  }
  return bad;
}
