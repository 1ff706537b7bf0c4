/** The last lines the logger wrote, kept in memory for the console's System page (journald keeps the rest). */
export class LogRing {
  private readonly lines: string[] = [];
  private next = 0;

  constructor(private readonly size = 500) {}

  /** pino's destination interface: one JSON line per call. */
  write(line: string): void {
    if (this.lines.length < this.size) this.lines.push(line);
    else this.lines[this.next] = line;
    this.next = (this.next + 1) % this.size;
  }

  /** The newest `n` lines, oldest first, parsed (a line that is not JSON is returned as `{ msg }`). */
  tail(n: number): unknown[] {
    const ordered = this.lines.length < this.size ? this.lines : [...this.lines.slice(this.next), ...this.lines.slice(0, this.next)];
    return ordered.slice(-n).map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return { msg: line.trimEnd() };
      }
    });
  }
}
