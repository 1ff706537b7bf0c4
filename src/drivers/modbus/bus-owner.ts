/**
 * The single owner of one Modbus link. Every request on the bus goes through here, strictly one at
 * a time (RTU has no transaction ids: two requests in flight desynchronise the link for good), with
 * t3.5 of silence before each request, a timeout on every request, a drain after a timeout or a
 * corrupt frame, and a reopen loop with backoff when the port or socket goes away (USB unplug,
 * socat restart, PLC reboot). Jobs are queued by priority: writes, then on-demand reads, then polls;
 * polls go in their cycles' fair order (protocol/modbus/cycle-order.ts), so a saturated line stretches
 * every device's cycle evenly.
 */
import { GatewayError } from '../../core/errors.js';
import { CycleOrder, type CycleTag } from '../../protocol/modbus/cycle-order.js';
import type { Logger } from '../../util/logger.js';
import { loopLook } from '../../util/loop-look.js';
import type { Exchange } from '../../protocol/modbus/doctor-types.js';
import { LinkDownError, type BusIo, type UnitStats } from './bus-job.js';
import { classify, type ClassifiedError } from './errors.js';
import { Reopener } from './reopen.js';
import { WireGarbled, WireTimeout, type ModbusTransport, type WireRequest } from './transport.js';

/**
 * `background`: work that may take the line only when nothing else waits (the bus doctor on a running bus),
 * so polls keep their rate; after BACKGROUND_MAX_WAIT_MS of waiting a job goes as an on-demand read would.
 */
export const PRIORITY = { write: 0, read: 1, poll: 2, background: 3 } as const;

/** How long a background job waits for a free line before it goes ahead anyway (a line the polls fill). */
export const BACKGROUND_MAX_WAIT_MS = 1000;

/**
 * Writes and on-demand reads waiting at most on one bus. A client firing requests faster than a 9600-baud
 * line answers would otherwise grow the queue (and memory) without end; past this it gets `bus busy`.
 */
export const MAX_WAITING = 16;

/** On-demand jobs (writes, reads) that may run in a row while a poll waits: a short burst keeps its priority. */
export const ON_DEMAND_IN_A_ROW = 2;
export type Priority = (typeof PRIORITY)[keyof typeof PRIORITY];

export interface BusOwnerOptions {
  busId: string;
  timeoutMs: number;
  /** Silence before each request (t3.5 on RTU, 0 on TCP). */
  silenceMs: number;
  /** Longest possible late answer, ms: the drain waits at most this long. */
  drainMaxMs: number;
  reopenMinMs: number;
  reopenMaxMs: number;
  /** Consecutive timeouts bus-wide (no answer from anyone) after which the link is reopened. */
  reopenAfterTimeouts: number;
  log: Logger;
  /** Called after every successful (re)open, so degraded devices are probed at once. */
  onOpen?: () => void;
}

export { LinkDownError, type BusIo, type UnitStats };

interface QueuedJob {
  priority: Priority;
  /** Polls only: the cycle's place in the fair order. */
  tag: CycleTag | undefined;
  run: (io: BusIo) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** Background jobs only: when it was queued (performance.now()). */
  queuedAt: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class BusOwner {
  private readonly queues: QueuedJob[][] = [[], [], [], []];
  private readonly order = new CycleOrder();
  private busy = false;
  private stopped = true;
  private lastFrameEnd = 0;
  private consecutiveTimeouts = 0;
  /** When the first request of the current run of timeouts went out (performance.now()). */
  private timeoutRunFrom = 0;
  private readonly reopener: Reopener;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => {};
  readonly units = new Map<number, UnitStats>();
  readonly totals = {
    requests: 0, timeouts: 0, crcErrors: 0, exceptions: 0, errors: 0, opens: 0, lastRttMs: null as number | null, lastError: null as string | null,
    /** Requests sent by unit-id scans, and how many of them nobody answered (BusIo.probe). */
    scanProbes: 0, scanUnanswered: 0,
  };
  private readonly io: BusIo;

  constructor(private readonly transport: ModbusTransport, private readonly options: BusOwnerOptions) {
    this.reopener = new Reopener({
      minMs: options.reopenMinMs, maxMs: options.reopenMaxMs,
      present: () => transport.present?.(),
      open: async () => {
        await transport.open();
        if (this.totals.opens > 0 || this.totals.lastError) options.log.info({ bus: options.busId, link: transport.label }, 'modbus link open');
        this.totals.opens++;
        options.onOpen?.();
      },
      failed: (err, retryMs) => {
        this.totals.lastError = `open ${transport.label}: ${err.message}`;
        options.log.warn({ bus: options.busId, link: transport.label, err: err.message, retryMs }, 'cannot open modbus link');
      },
    });
    this.io = {
      request: (unit, req, retries = 0) => this.wire(unit, req, retries),
      // once() throws the classified failure; its caller gets the gateway's error, as from request() (a scan
      // took a unit answering its probe with an exception for a unit not there).
      probe: (unit, req) => this.once(unit, req, true).catch((c: ClassifiedError) => { throw c.error; }),
      ask: (unit, pdu, timeoutMs) => this.ask(unit, pdu, timeoutMs),
    };
    transport.onLost((reason) => {
      if (this.stopped) return;
      options.log.warn({ bus: options.busId, link: transport.label, reason }, 'modbus link lost; reopening');
      this.totals.lastError = `link lost: ${reason}`;
      this.reopener.schedule(0);
    });
  }

  get label(): string {
    return this.transport.label;
  }

  get open(): boolean {
    return this.transport.isOpen();
  }

  get waiting(): number {
    return this.queues[PRIORITY.write]!.length + this.queues[PRIORITY.read]!.length;
  }

  /** Answers the link dropped as no outstanding request's (undefined: a link that cannot tell). */
  get strayAnswers(): number | undefined {
    return this.transport.strayAnswers?.();
  }

  get queueDepth(): number {
    return this.queues.reduce((n, q) => n + q.length, 0) + (this.busy ? 1 : 0);
  }

  /** Opens the link (first attempt awaited; failures keep retrying in the background). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.reopener.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const reopening = this.reopener.stop();
    for (const q of this.queues) {
      for (const job of q.splice(0)) job.reject(new GatewayError('DRIVER_ERROR', `bus ${this.options.busId} stopped`));
    }
    await this.idle;
    await reopening;
    await this.transport.close();
  }

  /**
   * Queues a job; it runs alone on the bus. Resolves with what the job returns. Writes and on-demand reads
   * beyond MAX_WAITING are refused at once with BUS_BUSY (polls are bounded by the devices themselves:
   * one cycle per group in flight).
   */
  enqueue<T>(priority: Priority, run: (io: BusIo) => Promise<T>, tag?: CycleTag): Promise<T> {
    if (this.stopped) return Promise.reject(new GatewayError('DRIVER_ERROR', `bus ${this.options.busId} is stopped`));
    if (priority !== PRIORITY.poll && this.queues[PRIORITY.write]!.length + this.queues[PRIORITY.read]!.length >= MAX_WAITING) {
      return Promise.reject(new GatewayError('BUS_BUSY', `bus ${this.options.busId} busy: ${MAX_WAITING} requests are already waiting; try again shortly`));
    }
    return new Promise<T>((resolve, reject) => {
      const order = priority === PRIORITY.poll ? tag ?? this.order.now() : undefined;
      const queuedAt = priority === PRIORITY.background ? performance.now() : 0;
      this.queues[priority]!.push({ priority, tag: order, run, resolve: resolve as (v: unknown) => void, reject, queuedAt });
      void this.pump();
    });
  }

  /**
   * A poll cycle begins: its tag in the fair order, for each of its requests (`group`: any object that
   * stays the same for the group's cycles).
   */
  cycleTag(group: object, periodMs: number): CycleTag {
    return this.order.begin(group, periodMs);
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.idle = new Promise((resolve) => (this.markIdle = resolve));
    try {
      let sincePoll = 0;
      let afterPoll = false;
      for (;;) {
        // Writes, then on-demand reads, then polls — but after ON_DEMAND_IN_A_ROW on-demand jobs a waiting
        // poll goes next, so polls keep a third of the line however hard clients push (issue 11 item 2).
        const polls = this.queues[PRIORITY.poll]!;
        const onDemand = this.queues[PRIORITY.write]!.length > 0 ? this.queues[PRIORITY.write]! : this.queues[PRIORITY.read]!;
        const background = this.queues[PRIORITY.background]!;
        const overdue = background.length > 0 && performance.now() - background[0]!.queuedAt >= BACKGROUND_MAX_WAIT_MS;
        let job = onDemand.length > 0 && (sincePoll < ON_DEMAND_IN_A_ROW || polls.length === 0) ? onDemand.shift()
          : overdue && sincePoll < ON_DEMAND_IN_A_ROW ? background.shift() : this.nextPoll();
        if (!job && background.length > 0) {
          // Not between a cycle's requests: a turn lets the cycle just served queue its next one first.
          if (afterPoll) {
            afterPoll = false;
            await nextTurn();
            continue;
          }
          job = background.shift();
        }
        if (!job) break;
        afterPoll = job.priority === PRIORITY.poll;
        sincePoll = job.priority === PRIORITY.poll ? 0 : sincePoll + 1;
        try {
          job.resolve(await job.run(this.io));
        } catch (err) {
          job.reject(err);
        }
        // Other cycles wait: let the one just served queue its next request first (a turn of the loop, so
        // every promise reaction has run), or a cycle of several requests would queue behind them after each.
        if (job.priority === PRIORITY.poll && polls.length > 0) await nextTurn();
      }
    } finally {
      this.busy = false;
      this.markIdle();
    }
  }

  /** The poll whose cycle goes first in the fair order, taken off the queue. */
  private nextPoll(): QueuedJob | undefined {
    const polls = this.queues[PRIORITY.poll]!;
    const i = CycleOrder.first(polls as { tag: CycleTag }[]);
    if (i < 0) return undefined;
    const job = polls.splice(i, 1)[0]!;
    this.order.served(job.tag!);
    return job;
  }

  private stats(unit: number): UnitStats {
    let s = this.units.get(unit);
    if (!s) {
      s = { requests: 0, timeouts: 0, crcErrors: 0, exceptions: 0, errors: 0, lastRttMs: null };
      this.units.set(unit, s);
    }
    return s;
  }

  private async wire(unit: number, req: WireRequest, retries: number): Promise<number[] | boolean[] | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(unit, req);
      } catch (err) {
        const c = err as ClassifiedError;
        if (attempt < retries && (c.kind === 'timeout' || c.kind === 'crc') && !this.stopped) continue;
        throw c.error;
      }
    }
  }

  private async once(unit: number, req: WireRequest, probe = false): Promise<number[] | boolean[] | undefined> {
    const where = `${this.options.busId} (${this.transport.label})`;
    if (!this.transport.isOpen()) {
      throw classify(new LinkDownError(`${where}: link is not open (reopening in the background)`), unit, where);
    }
    // Each request is a turn or two of the loop: the event-loop monitor looks here instead of waking it.
    loopLook();
    // t3.5: a slave may ignore a request that follows the previous frame too closely.
    await this.silence();
    const stats = this.stats(unit);
    if (probe) {
      this.totals.scanProbes++;
    } else {
      stats.requests++;
      this.totals.requests++;
    }
    const t0 = performance.now();
    try {
      const result = await this.transport.request(unit, req, this.options.timeoutMs);
      const rtt = performance.now() - t0;
      if (!probe) stats.lastRttMs = this.totals.lastRttMs = Math.round(rtt * 10) / 10;
      this.consecutiveTimeouts = 0;
      return result;
    } catch (err) {
      const c = classify(err, unit, where);
      if (probe && (c.kind === 'timeout' || c.kind === 'exception')) {
        // No answer: an id nobody owns. An exception: a device owns the id. Neither is a fault of the bus.
        if (c.kind === 'timeout') {
          this.totals.scanUnanswered++;
          await this.transport.drain(Math.max(this.options.silenceMs * 2, 15), this.options.drainMaxMs);
        }
        throw c;
      }
      this.totals.lastError = c.error.message;
      if (c.kind === 'timeout') {
        stats.timeouts++;
        this.totals.timeouts++;
        if (this.consecutiveTimeouts++ === 0) this.timeoutRunFrom = t0;
      } else if (c.kind === 'crc') {
        stats.crcErrors++;
        this.totals.crcErrors++;
      } else if (c.kind === 'exception') {
        stats.exceptions++;
        this.totals.exceptions++;
        this.consecutiveTimeouts = 0;
      } else {
        stats.errors++;
        this.totals.errors++;
      }
      if (c.kind === 'timeout' || c.kind === 'crc') {
        await this.transport.drain(Math.max(this.options.silenceMs * 2, 15), this.options.drainMaxMs);
        if (this.consecutiveTimeouts >= this.options.reopenAfterTimeouts) {
          // Nobody has answered for a while: the adapter may be wedged or gone without a close event. Unless
          // bytes were heard meanwhile (another master and its answers, a slave answering late): then the
          // adapter receives, and a reopen would only cost the line its time. Done inside the job's slot so no
          // other request races the reopen.
          this.consecutiveTimeouts = 0;
          if ((this.transport.lastRxAt?.() ?? 0) <= this.timeoutRunFrom) await this.reopener.openNow();
        }
      }
      throw c;
    } finally {
      this.lastFrameEnd = performance.now();
    }
  }

  private async ask(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<Exchange> {
    const where = `${this.options.busId} (${this.transport.label})`;
    if (!this.transport.exchange) throw new GatewayError('DRIVER_ERROR', `${where}: this link cannot send raw requests`);
    if (!this.transport.isOpen()) throw new LinkDownError(`${where}: link is not open (reopening in the background)`);
    loopLook();
    await this.silence();
    this.totals.scanProbes++;
    try {
      const answer = await this.transport.exchange(unit, pdu, timeoutMs);
      this.consecutiveTimeouts = 0;
      return answer;
    } catch (err) {
      if (!(err instanceof WireTimeout || err instanceof WireGarbled)) throw classify(err, unit, where).error;
      if (err instanceof WireTimeout) this.totals.scanUnanswered++;
      // What may still come of it must not be taken for the next request's answer.
      await this.transport.drain(Math.max(this.options.silenceMs * 2, 15), this.options.drainMaxMs);
      return err instanceof WireTimeout ? { kind: 'silence' } : { kind: 'garbage', bytes: err.bytes ?? 1 };
    } finally {
      this.lastFrameEnd = performance.now();
    }
  }

  /**
   * Waits out t3.5 since the last frame on the line — ours, or one heard from another master or a slave
   * answering it (RTU has no arbitration: talking into a frame garbles both) — and, after a request heard
   * from another master, until its answer begins (or its timeout passed): a request sent meanwhile would
   * get that answer. A line that never falls free (a babbling device) holds the request back at most two
   * longest frames or a timeout, whichever is longer, then it goes anyway. One timer to the moment the line
   * is free (at least a millisecond), then an I/O phase and a read of what is still unread before deciding
   * (a held-up loop hears late), so a byte that came meanwhile moves the target. A timer that fired short
   * of it (libuv counts whole milliseconds from the start of its turn) just takes another round.
   * (Spinning on event-loop turns to hit t3.5 to the tenth of a millisecond made ~90% of the young garbage
   * of a polling gateway; sleeping to it in 1 ms steps cost three timer wake-ups per request: issue 16's
   * profiles.) The silence kept is t3.5 plus up to a millisecond or two, no CPU.
   */
  private async silence(): Promise<void> {
    if (this.options.silenceMs <= 0) return; // TCP: no shared line to listen to
    const giveUp = performance.now() + Math.max(this.options.drainMaxMs * 2, this.options.timeoutMs + this.options.silenceMs);
    for (;;) {
      const now = performance.now();
      if (now >= giveUp) return;
      await sleep(Math.max(1, Math.ceil(Math.min(this.lineFreeAt(), giveUp) - now)));
      // A timer resumes before I/O is polled, an immediate after: what came by now has been heard, but for
      // what came since the poll (the link reads it unless the poll was a moment ago).
      const woke = performance.now();
      await new Promise<void>((resolve) => setImmediate(resolve));
      const late = this.transport.takePending?.(woke) ?? 0;
      if (late === 0 && this.lineFreeAt() <= performance.now()) return;
    }
  }

  /** When the line is free: t3.5 after the last frame heard or sent, and no other master's answer pending. */
  private lineFreeAt(): number {
    const heard = Math.max(this.lastFrameEnd, this.transport.lastRxAt?.() ?? 0) + this.options.silenceMs;
    return Math.max(heard, this.transport.answerPendingUntil?.() ?? 0);
  }
}
