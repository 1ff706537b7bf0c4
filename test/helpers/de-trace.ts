/**
 * Reading an `strace -f -ttt -T -y -xx` log of a bus with rs485 "gpio" (scripts/gpio-fake/rs485-de-in-namespace.ts):
 * each request written to the tty against the writes of the DE pin's value file around it.
 *
 * Why the bounds hold whatever strace costs: strace stamps a call when it handles the stop at the call's entry or
 * exit, while the thread waits for it; so every stamp is at or after the moment it names, never before. The bus
 * reads its frame's start (serial-bytes.ts write: `startedAt`) after DE's write of 1 has returned, i.e. after strace
 * stamped that write's exit: that exit stamp is a lower bound of `startedAt`, and a correct bus enters the write of
 * 0 no earlier than `startedAt + bytes × charMs`, which strace stamps later still. Lateness is only ever added.
 */

/** One write(2)/pwrite64(2) of the DE value file, the tty or the unexport file, in the trace's order. */
export interface TracedWrite {
  tid: number;
  /** Wall time strace stamped at entry and at exit (entry + the -T length), in ms. */
  at: number;
  end: number;
  kind: 'de' | 'tty' | 'unexport';
  bytes: Buffer;
}

export interface FrameCheck {
  /** The tty write's entry (ms, wall) and the frame's computed end from it. */
  at: number;
  computedEnd: number;
  /** What was wrong (empty when the frame was driven right). */
  problems: string[];
  /** DE's fall after `computedEnd` (ms; negative: early). */
  lateMs: number | null;
  /** DE was still high when the next frame began (its release came after that frame's write of 1). */
  heldOver: boolean;
}

const LINE = /^(\d+)\s+(\d+\.\d+)\s+(?:(write|pwrite64)\((\d+)<([^>]*)>, "([^"]*)"(.*)|<\.\.\. (write|pwrite64) resumed>(.*))$/;

const unhex = (s: string): Buffer => Buffer.from(s.replace(/\\x/g, ''), 'hex');

/** The writes of `dePath`, `ttyPath` and the unexport file, joining calls strace split with `<unfinished ...>`. */
export function parseTrace(text: string, dePath: string, ttyPath: string): TracedWrite[] {
  const out: TracedWrite[] = [];
  const pending = new Map<number, TracedWrite>();
  const finish = (w: TracedWrite, tail: string): void => {
    const length = /= -?\d+.*<(\d+\.\d+)>\s*$/.exec(tail);
    if (length) w.end = w.at + Number(length[1]) * 1000;
  };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const tid = Number(m[1]);
    const at = Number(m[2]) * 1000;
    if (m[8]) {
      const w = pending.get(tid);
      pending.delete(tid);
      if (w) finish(w, m[9]!);
      continue;
    }
    const path = unhex(m[5]!).toString();
    const kind = path === dePath ? 'de' : path === ttyPath ? 'tty' : path.endsWith('/gpio/unexport') ? 'unexport' : null;
    if (!kind) continue;
    const w: TracedWrite = { tid, at, end: Number.NaN, kind, bytes: unhex(m[6]!) };
    out.push(w);
    if (m[7]!.includes('<unfinished ...>')) pending.set(tid, w);
    else finish(w, m[7]!);
  }
  return out;
}

/**
 * Each request of `requestBytes` written to the tty: DE's last write before it is 1, on the same thread, done
 * before the tty write began; DE's next write of 0 is entered no earlier than the 1's exit + the frame's wire time
 * − `toleranceMs` (strace's microsecond stamps). A 1 before that 0 (the next frame began with DE still high: its
 * release came too late to matter) is late, not early: told in `heldOver`, not a problem. A frame whose 0 is the
 * bus's stop (the unexport follows it, no release of its own came first) is left out: the stop cuts it short.
 */
export function checkFrames(writes: TracedWrite[], requestBytes: number, charMs: number, toleranceMs: number): FrameCheck[] {
  const wire = requestBytes * charMs;
  const checks: FrameCheck[] = [];
  writes.forEach((w, i) => {
    if (w.kind !== 'tty' || w.bytes.length !== requestBytes) return;
    const before = writes.slice(0, i).reverse().find((x) => x.kind === 'de');
    const fallIdx = writes.findIndex((x, j) => j > i && x.kind === 'de' && x.bytes.toString() === '0');
    const fall = fallIdx < 0 ? undefined : writes[fallIdx];
    if (fall && writes.slice(fallIdx + 1).find((x) => x.kind !== 'tty')?.kind === 'unexport') return;
    const heldOver = writes.slice(i + 1, fallIdx < 0 ? undefined : fallIdx).some((x) => x.kind === 'de');
    const problems: string[] = [];
    const computedEnd = w.at + wire;
    if (!before || before.bytes.toString() !== '1') problems.push(`DE was not 1 before the frame (last DE write: ${before ? JSON.stringify(before.bytes.toString()) : 'none'})`);
    else {
      if (before.tid !== w.tid) problems.push(`DE written on thread ${before.tid}, the frame on ${w.tid}`);
      if (!(before.end <= w.at)) problems.push(`DE's write of 1 ended at ${before.end.toFixed(3)}, after the frame began at ${w.at.toFixed(3)}`);
    }
    if (!fall) problems.push('DE was never written 0 after the frame');
    else if (before && fall.at < before.end + wire - toleranceMs) {
      problems.push(`DE fell ${(fall.at - before.end).toFixed(3)} ms after the 1 was written: before the ${wire.toFixed(3)} ms frame could leave the wire`);
    }
    checks.push({ at: w.at, computedEnd, problems, lateMs: fall ? fall.at - computedEnd : null, heldOver });
  });
  return checks;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
