/** Fakes for the gpio driver tests: a GpioPort whose lines the test moves, and timers it advances. */
import type { GpioLine, GpioLineRequest, GpioPort, Level } from '../../src/drivers/gpio/port.js';
import type { TimerHandle, Timers } from '../../src/drivers/gpio/timers.js';
import type { ChipMapping } from '../../src/drivers/gpio/chip.js';

export class FakeLine implements GpioLine {
  level: Level = 0;
  closed = false;
  writes: Level[] = [];
  private onEdge?: (level: Level) => void;

  constructor(readonly line: number, readonly request: GpioLineRequest, private readonly watchError?: Error) {
    if (request.initial !== undefined) this.level = request.initial;
  }

  read(): Level {
    if (this.closed) throw new Error(`line ${this.line} is closed`);
    return this.level;
  }
  write(level: Level): void {
    this.level = level;
    this.writes.push(level);
  }
  watch(onEdge: (level: Level) => void): void {
    if (this.watchError) throw this.watchError;
    this.onEdge = onEdge;
  }
  close(): void {
    this.closed = true;
    this.onEdge = undefined;
  }
  get watched(): boolean {
    return this.onEdge !== undefined;
  }
  /** The outside world moves the line; an interrupt fires when it changes and someone watches. */
  set(level: Level): void {
    if (level === this.level) return;
    this.level = level;
    this.onEdge?.(level);
  }
}

export class FakePort implements GpioPort {
  readonly name = 'fake';
  readonly lines = new Map<number, FakeLine>();
  /** Lines whose open() throws (EBUSY); lines whose watch() throws (EPERM). */
  constructor(private readonly opts: { busy?: number[]; noInterrupts?: boolean; initialLevels?: Record<number, Level> } = {}) {}

  open(request: GpioLineRequest): GpioLine {
    if (this.opts.busy?.includes(request.line)) throw new Error('EBUSY: resource busy');
    const error = this.opts.noInterrupts ? Object.assign(new Error('Operation not permitted'), { code: 'EPERM' }) : undefined;
    const line = new FakeLine(request.line, request, error);
    const initial = this.opts.initialLevels?.[request.line];
    if (initial !== undefined && request.direction === 'in') line.level = initial;
    this.lines.set(request.line, line);
    return line;
  }
  line(bcm: number): FakeLine {
    const line = this.lines.get(bcm);
    if (!line) throw new Error(`line ${bcm} not opened`);
    return line;
  }
}

export const fakeMapping: ChipMapping = {
  chip: { dir: 'gpiochip0', label: 'fake', base: 0, ngpio: 54 },
  toSysfs: (bcm) => bcm,
};

interface Pending {
  id: number;
  at: number;
  fn: () => void;
  every?: number;
}

/** Timers moved by advance(): nothing runs until the test says time has passed. */
export class FakeTimers implements Timers {
  now = 0;
  private nextId = 1;
  private pending: Pending[] = [];

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t = { id: this.nextId++, at: this.now + ms, fn };
    this.pending.push(t);
    return t.id;
  }
  clearTimeout(handle: TimerHandle): void {
    this.pending = this.pending.filter((t) => t.id !== handle);
  }
  setInterval(fn: () => void, ms: number): TimerHandle {
    const t = { id: this.nextId++, at: this.now + ms, fn, every: ms };
    this.pending.push(t);
    return t.id;
  }
  clearInterval(handle: TimerHandle): void {
    this.clearTimeout(handle);
  }
  get count(): number {
    return this.pending.length;
  }
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = this.pending.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.now = due.at;
      if (due.every !== undefined) due.at += due.every;
      else this.pending = this.pending.filter((t) => t !== due);
      due.fn();
    }
    this.now = until;
  }
}
