/**
 * The socat hop's own times between the wire and the gateway's pty: socat started with `-x` writes a header
 * for every transfer it makes ("> 2026/12/08 01:06:31.000451 length=2 from=0 to=1", then the bytes in hex),
 * stamped right where it read the bytes and before it writes them on. '<' is a transfer onto the gateway's pty
 * (the moment its bytes can be read there), '>' one from it (the gateway has written them by then). This is
 * the measurement that tells a byte the hop held from a gateway that talked over a byte it had: the wire's own
 * clock sees only its side of the hop.
 */

export interface HopTransfer {
  /** '<' onto the gateway's pty, '>' from it. */
  dir: '<' | '>';
  /** performance.now() time of the transfer (socat's wall-clock stamp, mapped to this process's clock). */
  at: number;
  length: number;
}

const HEADER = /^([<>]) (\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)\s+length=(\d+)/;

/** Keeps the last LOG transfers. */
const LOG = 50_000;

export class HopLog {
  readonly transfers: HopTransfer[] = [];
  private rest = '';

  /** Takes a piece of socat's stderr as it was received (at `receivedAt`, this process's clock). */
  feed(text: string, receivedAt = performance.now()): void {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) {
      const m = HEADER.exec(line);
      if (!m) continue;
      // socat stamps in local time.
      const seconds = new Date(+m[2]!, +m[3]! - 1, +m[4]!, +m[5]!, +m[6]!, +m[7]!).getTime() - performance.timeOrigin;
      // socat 1.7.4 prints microseconds in nine digits (".000451391" is 0.451391 s), later versions nanoseconds:
      // of the two readings, the one at or just before the moment the line reached us is the time.
      const frac = Number(m[8]!);
      const readings = [seconds + frac / 1e3, seconds + frac / 1e6].filter((t) => t <= receivedAt + 5);
      const at = readings.length ? Math.max(...readings) : seconds + frac / 1e6;
      this.transfers.push({ dir: m[1] as '<' | '>', at, length: Number(m[9]!) });
    }
    if (this.transfers.length > LOG) this.transfers.splice(0, this.transfers.length - LOG / 2);
  }

  /** The last transfer in `dir` at or before `t` (ms), or null. */
  lastBefore(dir: '<' | '>', t: number): HopTransfer | null {
    for (let i = this.transfers.length - 1; i >= 0; i--) {
      const x = this.transfers[i]!;
      if (x.dir === dir && x.at <= t) return x;
    }
    return null;
  }

  /** The first transfer in `dir` at or after `t` (ms), or null. */
  firstAfter(dir: '<' | '>', t: number): HopTransfer | null {
    for (const x of this.transfers) if (x.dir === dir && x.at >= t) return x;
    return null;
  }
}
