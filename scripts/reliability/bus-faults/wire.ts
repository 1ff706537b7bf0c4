/**
 * A half-duplex RS-485 line between ptys, with faults (bus-faults campaign). Extends the baud relay's
 * approach (scripts/modbus-rig/baud-relay.ts): ptys deliver bytes at once whatever the baud rate, so
 * this process plays the wire. Every frame occupies the line for 11 bits per character; the gateway hears
 * other frames byte by byte as they would arrive (it can only avoid a frame it has heard); slaves get a
 * request t3.5 after its last byte (a real RTU slave frames by silence, pymodbus by length). Frames that
 * overlap on the line garble each other from the moment they overlap.
 *
 * Collision accounting, on this process's clock, judged by what the gateway can have heard: a gateway frame
 * that starts less than t3.5 after the last byte handed to its pty (the write's call: the earliest it can
 * have heard it) of a frame that had been on the line for t3.5 already is a collision caused by the gateway
 * — talking into a frame is the extreme case. Bytes handed over less than a character time before the last
 * read of the gateway's side that found nothing are left out (its frame may have begun before they could
 * be heard), and so are frames begun less than t3.5 before the gateway's: the gateway decides after t3.5
 * of silence and its bytes then take a millisecond or two through the OS to reach the line, so such a frame
 * began as the gateway did — a simultaneous start, which no master can avoid (counted apart). A start on a
 * heard byte while the gateway's event loop waited for a CPU for a character time or more since that byte was
 * handed over is counted apart too (`heldOff`): on a machine loaded by others the loop may run its send timer
 * before it reads what arrived meanwhile (its serial reads also pass through libuv's pool threads, so the wait
 * of all its threads counts), which says how busy the machine was, not how the gateway keeps the line; on a
 * machine at rest the wait is ~0 and every such start counts.
 *
 * The socat between this process and the gateway's pty is a hop this clock cannot see across: a byte "handed
 * over" here reaches the gateway only when socat has moved it. Where socat logs its transfers (hop-log.ts), a
 * start within t3.5 of a handed byte is judged by socat's own times (confirm()): the byte put on the pty after
 * socat read the gateway's frame was not there to hear (`hopHeld`), less than a character time before it is a
 * start together, and t3.5 or more is no collision. Without the log, the hop's CPU wait counts as the gateway's.
 */
import { closeSync, constants, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs';
import { SerialPort } from 'serialport';
import type { Direction, FrameFault } from './faults.js';
import type { HopLog } from './hop-log.js';
import { answerGapMs } from '../../../src/protocol/modbus/wire-cost.js';

export type Sender = 'gateway' | 'slave' | 'master2';

/** A frame on the line as the wire played it. */
export interface Tx {
  from: Sender;
  bytes: Buffer;
  start: number;
  end: number;
  /** Line time from which its bytes are garbled (another frame overlapped), or null. */
  garbledFrom: number | null;
  /** When its first byte was handed to the gateway's pty, and how many so far. */
  handedAt?: number;
  handed?: number;
  /** Pending hand-over to the slaves (requests). */
  delivery?: NodeJS.Timeout;
  /** Who began the frame that garbled this one (the later of the two to start), or null. */
  hitBy: Sender | null;
  /** A gateway frame begun together with another's (the judge's verdict below): nobody's to avoid. */
  together?: boolean;
  /** When its last byte so far was handed to the gateway's pty. */
  lastHandedAt?: number;
  /**
   * This process handed its bytes to the gateway with a silence inside that ends an answer there (it waited for
   * a CPU): the rig split the frame, not the line.
   */
  splitByRelay?: boolean;
}

export interface Violation {
  /** ms from the last byte the gateway can have heard to its frame. */
  gapMs: number;
  /** The same by the socat hop's own times: from its write of that byte onto the gateway's pty to its read of the frame. */
  relayGapMs?: number;
  /** ms since the first byte of that frame was handed over, and how many bytes of it had been. */
  sinceFirstMs: number;
  bytes: number;
  /** Whose byte that was. */
  other: Sender;
}

export interface WireStats {
  gatewayFrames: number;
  /** Gateway frames that started on a frame it had heard (begun t3.5 before), or within t3.5 after it. */
  gatewayViolations: Violation[];
  /** Simultaneous starts and overlaps another sender started. */
  otherCollisions: number;
  faulted: number;
  /** Frames hit, by the unit their transaction was for (the address byte as sent). */
  hitsOf: Map<number, number>;
  /** Silence the gateway left before its frames (ms since the last byte it can have heard), for the log. */
  gaps: number[];
  /** Starts on a heard frame while the gateway's loop had been kept from a CPU (see the top): not its doing. */
  heldOff: number;
  /** Starts the wire saw after a byte that, by the hop's own times, reached the gateway's pty only after its frame. */
  hopHeld: number;
  /** The hop's gap (ms) of each start the wire saw within t3.5 of a byte, for the log. */
  relayGaps: number[];
}

/** How far socat's stamps and this process's clock may disagree (the wall clock mapped onto performance.now()). */
const HOP_CLOCK_MS = 0.3;

const openPort = (path: string): Promise<SerialPort> =>
  new Promise((resolve, reject) => {
    const port = new SerialPort({ path, baudRate: 9600, autoOpen: false });
    port.open((err) => (err ? reject(err) : resolve(port)));
  });

/** Frames kept in `frames`: a full campaign's trial (40 s at ~25 frames/s) several times over. */
const FRAME_LOG = 20_000;

const garble = (b: number): number => b ^ (1 + Math.floor(Math.random() * 255));

export class Wire {
  readonly charMs: number;
  readonly t35: number;
  /** The silence that ends an answer at the gateway (answerGapMs): handed over with one inside, a frame is cut. */
  readonly splitMs: number;
  /** The fault applied to every `every`-th gateway or slave frame, or null. */
  fault: FrameFault | null = null;
  every = 20;
  /** Which frames count toward `every`: all (requests and replies) or the gateway's requests only. */
  faultOn: 'all' | 'request' = 'all';
  stats: WireStats = { gatewayFrames: 0, gatewayViolations: [], otherCollisions: 0, faulted: 0, hitsOf: new Map(), gaps: [], heldOff: 0, hopHeld: 0, relayGaps: [] };
  /** The gateway's process: its threads' wait for a CPU judges a start on a heard frame (0: not known). */
  gatewayPid = 0;
  /**
   * The socat that carries bytes between this process and the gateway's pty: without its log (`hop`), its wait
   * counts as the gateway's (0: none).
   */
  hopPid = 0;
  /** That socat's own transfer times (hop-log.ts), when it logs them: the judge of starts on a heard byte. */
  hop: HopLog | null = null;
  /** Starts within t3.5 of a byte handed over, waiting for the hop's times (confirm()). */
  private pending: { tx: Tx; handedAt: number; held: boolean; violation: Violation }[] = [];
  /** The gateway's side, read without blocking every millisecond and before anyone else talks. */
  private gw: number | null = null;
  /**
   * Debugging: every frame and hand-over, with times, while set (the last ones only); with BUS_FAULTS_TRACE=1
   * set from the start, and what led to each collision by the gateway printed to stderr.
   */
  trace: string[] | null = process.env.BUS_FAULTS_TRACE === '1' ? [] : null;
  /** When a read of the gateway's side last found nothing: a frame found later began after it. */
  private emptyAt = 0;
  private poller: NodeJS.Timeout | undefined;
  private readonly rx = Buffer.alloc(512);
  private readonly slaves: SerialPort[] = [];
  private txs: Tx[] = [];
  /** Every frame on the line, in order (the last FRAME_LOG): what the line-time judge reads (line-time.ts). */
  readonly frames: Tx[] = [];
  /** Hand-overs of other senders' bytes to the gateway's pty: when, and whose last byte it was. */
  private delivered: { at: number; from: Sender; firstAt: number; bytes: number; gatewayWaitMs: number }[] = [];
  private readonly current = new Map<string, Tx>();
  private frameNo = 0;
  private queue: { at: number; tx: Tx; index: number }[] = [];
  private pumpTimer: NodeJS.Timeout | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly gatewayEnd: string, private readonly slaveEnds: readonly string[], baud: number) {
    this.charMs = 11_000 / baud;
    this.t35 = baud > 19_200 ? 1.75 : 3.5 * this.charMs;
    this.splitMs = answerGapMs(baud);
  }

  async start(): Promise<void> {
    for (const [i, path] of this.slaveEnds.entries()) {
      const port = await openPort(path);
      port.on('data', (chunk: Buffer) => this.fromSender(`slave${i}`, 'slave', chunk));
      port.on('error', () => {});
      this.slaves.push(port);
    }
    await this.attachGateway();
  }

  /**
   * (Re)opens the gateway's side, e.g. after the pty was re-plugged. A plain non-blocking fd, not a
   * SerialPort: the gateway's first byte must be seen within a millisecond (a serial port's reads go through
   * the thread pool), or the second master would be let talk into a frame the gateway had already begun.
   */
  async attachGateway(): Promise<void> {
    this.gw = openSync(this.gatewayEnd, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
    clearInterval(this.poller);
    this.poller = setInterval(() => this.pollGateway(), 1);
  }

  /** Takes in what the gateway has written so far. */
  pollGateway(): void {
    while (this.gw !== null) {
      let n = 0;
      try {
        n = readSync(this.gw, this.rx);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.emptyAt = performance.now();
          return;
        }
        this.detachGateway(); // EIO: the pty is gone (unplugged)
        return;
      }
      if (n === 0) return;
      this.fromSender('gateway', 'gateway', Buffer.from(this.rx.subarray(0, n)));
    }
  }

  private detachGateway(): void {
    clearInterval(this.poller);
    if (this.gw !== null) {
      try { closeSync(this.gw); } catch { /* gone */ }
    }
    this.gw = null;
  }

  private writeGateway(bytes: Buffer): void {
    if (this.gw === null) return;
    try {
      writeSync(this.gw, bytes);
    } catch {
      this.detachGateway();
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.pumpTimer);
    for (const t of this.timers) clearTimeout(t);
    this.detachGateway();
    await Promise.all(this.slaves.map((p) => new Promise<void>((r) => (p.isOpen ? p.close(() => r()) : r()))));
  }

  /** When the line went quiet (the end of the last frame; Infinity while a frame is on it) and who sent that frame. */
  lastFrame(now = performance.now()): { quietSince: number; from: Sender | null } {
    this.pollGateway();
    let last: Tx | null = null;
    for (const tx of this.txs) {
      if (tx.end > now) return { quietSince: Infinity, from: tx.from };
      if (!last || tx.end > last.end) last = tx;
    }
    return { quietSince: last?.end ?? 0, from: last?.from ?? null };
  }

  /** A frame from a sender that is not behind a pty (the second master). */
  transmit(bytes: Buffer): void {
    this.fromSender('master2', 'master2', bytes);
  }

  private fromSender(key: string, from: Sender, chunk: Buffer): void {
    const now = performance.now();
    const cur = this.current.get(key);
    if (cur && now <= cur.end + this.charMs) {
      // The rest of a frame the pty handed over in pieces.
      const first = cur.bytes.length;
      cur.bytes = Buffer.concat([cur.bytes, chunk]);
      cur.end += chunk.length * this.charMs;
      if (from === 'gateway') this.deliverToSlaves(cur);
      else this.hear(cur, first);
      return;
    }
    let bytes = chunk;
    const counted = from === 'gateway' || (from === 'slave' && this.faultOn === 'all');
    if (counted && this.fault && ++this.frameNo % this.every === 0) {
      const changed = this.fault(chunk, (from === 'gateway' ? 'request' : 'reply') satisfies Direction);
      if (changed) {
        bytes = changed;
        this.stats.faulted++;
        this.stats.hitsOf.set(chunk[0]!, (this.stats.hitsOf.get(chunk[0]!) ?? 0) + 1);
      }
    }
    const tx: Tx = { from, bytes, start: now, end: now + bytes.length * this.charMs, garbledFrom: null, hitBy: null };
    if (from === 'gateway') this.judgeGateway(tx);
    for (const other of this.txs) {
      if (other.end <= now) continue;
      other.garbledFrom = Math.min(other.garbledFrom ?? Infinity, now);
      tx.garbledFrom = now;
      other.hitBy ??= from;
      tx.hitBy ??= from;
      if (from !== 'gateway') this.stats.otherCollisions++;
    }
    this.trace?.push(`${now.toFixed(2)} ${from} ${bytes.toString('hex')}${tx.garbledFrom !== null ? ' COLLIDED' : ''}`);
    if (this.trace && this.trace.length > 2000) this.trace.splice(0, 1000);
    this.txs = this.txs.filter((t) => t.end > now - 2000);
    this.txs.push(tx);
    this.frames.push(tx);
    if (this.frames.length > FRAME_LOG) this.frames.splice(0, this.frames.length - FRAME_LOG / 2);
    this.current.set(key, tx);
    if (from === 'gateway') {
      this.stats.gatewayFrames++;
      this.deliverToSlaves(tx);
    } else {
      this.hear(tx, 0);
      if (from === 'master2') this.deliverToSlaves(tx);
    }
  }

  /**
   * Did the gateway start less than t3.5 after a byte it had heard, of a frame begun t3.5 before? Its frame
   * began somewhere between the last empty read of its side and now (this process may itself have been held
   * up by the scheduler), so only bytes handed over at least a character time before that empty read are
   * sure to have been heard, and the gap is counted up to now (the latest it can have started).
   */
  private judgeGateway(tx: Tx): void {
    const g = tx.start;
    const heardBy = Math.min(this.emptyAt, g) - this.charMs;
    let fresh = false;
    for (let i = this.delivered.length - 1; i >= 0; i--) {
      const d = this.delivered[i]!;
      if (d.at > heardBy) {
        fresh = true;
        continue;
      }
      const gap = g - d.at;
      if (this.stats.gaps.length < 20_000) this.stats.gaps.push(gap);
      const held = this.gatewayWaitMs() - d.gatewayWaitMs >= this.charMs;
      const violation: Violation = { gapMs: gap, other: d.from, sinceFirstMs: g - d.firstAt, bytes: d.bytes };
      // With the hop's own times, judged once they have come (confirm()): the wire only sees its side of the hop.
      if (gap < this.t35 && g - d.firstAt >= this.t35 && this.hop) this.pending.push({ tx, handedAt: d.at, held, violation });
      else if (gap < this.t35 && g - d.firstAt >= this.t35 && held) this.stats.heldOff++;
      else if (gap < this.t35 && g - d.firstAt >= this.t35) this.violation(violation);
      else if (fresh || gap < this.t35) this.together(tx);
      return;
    }
  }

  private violation(v: Violation): void {
    this.stats.gatewayViolations.push(v);
    if (this.trace) console.error(`collision by the gateway at ${performance.now().toFixed(2)} (last empty read ${this.emptyAt.toFixed(2)}):\n${this.trace.slice(-40).join('\n')}`);
  }

  /** A gateway frame begun together with another's: nobody can avoid that. */
  private together(tx: Tx): void {
    this.stats.otherCollisions++;
    tx.together = true;
  }

  /**
   * Judges the starts the wire saw within t3.5 of a byte it had handed over, by the hop's own times (hop-log.ts):
   * the byte reached the gateway's pty when socat wrote it there ('<'), and the gateway had written its frame by
   * the time socat read it ('>'). A byte the hop put on the pty after that read was not there to hear (`hopHeld`);
   * one put there less than a character time before it was met by a frame already on its way (a start
   * together); one put there earlier than that and less than t3.5 before is the gateway's collision — counted
   * apart (`heldOff`) when the gateway's own threads waited a character time for a CPU meanwhile. A start whose
   * hop transfers have not come is judged by the wire's clock alone. Call once the hop's log has come in (a few
   * ms after the frames; the trials call it after their settling pause).
   */
  confirm(): void {
    const hop = this.hop;
    for (const p of this.pending.splice(0)) {
      const out = hop?.lastBefore('>', p.tx.start + HOP_CLOCK_MS);
      const into = hop?.firstAfter('<', p.handedAt - HOP_CLOCK_MS);
      const relayGap = out && into ? out.at - into.at : null;
      if (relayGap !== null) this.stats.relayGaps.push(relayGap);
      if (relayGap !== null && relayGap < 0) {
        this.stats.hopHeld++;
        p.tx.together = true; // begun before it could hear the byte: for the line's time, as a start together
      }
      else if (relayGap !== null && relayGap < this.charMs) this.together(p.tx);
      else if (relayGap !== null && relayGap >= this.t35) continue;
      else if (p.held) this.stats.heldOff++;
      else this.violation({ ...p.violation, ...(relayGap !== null ? { relayGapMs: relayGap } : {}) });
    }
  }

  /**
   * ms the gateway's threads have waited for a CPU so far, summed (0 where a pid or the kernel's count is
   * unknown): its loop, the pool threads its serial reads go through, and — where the hop logs nothing of its own
   * (`hop`) — the socat between the wire and its pty: a byte socat holds has not reached the gateway (a spare pair's
   * hop read a p99 of 25 ms beside a busy suite, while the gateway started 2.9 ms after a byte "handed over" and
   * counted a collision of its own). With the log, the hop's times say it exactly (confirm()).
   */
  private gatewayWaitMs(): number {
    let ns = 0;
    for (const pid of [this.gatewayPid, this.hop ? 0 : this.hopPid]) {
      if (!pid) continue;
      try {
        for (const task of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        // gone (an unplug): its wait no longer grows
      }
    }
    return ns / 1e6;
  }

  /** Slaves get a whole request t3.5 after its last byte (garbled where it overlapped another frame). */
  private deliverToSlaves(tx: Tx): void {
    if (tx.delivery) {
      clearTimeout(tx.delivery);
      this.timers.delete(tx.delivery);
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const out = Buffer.from(tx.bytes);
      if (tx.garbledFrom !== null) for (let i = 0; i < out.length; i++) if (tx.start + (i + 1) * this.charMs > tx.garbledFrom) out[i] = garble(out[i]!);
      for (const s of this.slaves) if (s.isOpen) s.write(out);
      this.trace?.push(`  ${performance.now().toFixed(2)} -> slaves ${out.toString('hex')}`);
    }, Math.max(0, tx.end + this.t35 - performance.now()));
    tx.delivery = timer;
    this.timers.add(timer);
  }

  /** The gateway hears bytes from `index` on as they would arrive on the line. */
  private hear(tx: Tx, index: number): void {
    for (let i = index; i < tx.bytes.length; i++) this.queue.push({ at: tx.start + (i + 1) * this.charMs, tx, index: i });
    this.queue.sort((a, b) => a.at - b.at);
    this.pump();
  }

  private pump(): void {
    clearTimeout(this.pumpTimer);
    this.pollGateway(); // a frame the gateway has begun collides with the bytes handed over now
    const now = performance.now();
    const due: number[] = [];
    let last: Tx | null = null;
    while (this.queue.length > 0 && this.queue[0]!.at <= now) {
      const { tx, index } = this.queue.shift()!;
      const byte = tx.bytes[index]!;
      due.push(tx.garbledFrom !== null && tx.start + (index + 1) * this.charMs > tx.garbledFrom ? garble(byte) : byte);
      tx.handedAt ??= now;
      if (tx.lastHandedAt !== undefined && now - tx.lastHandedAt >= this.splitMs) tx.splitByRelay = true;
      tx.lastHandedAt = now;
      tx.handed = (tx.handed ?? 0) + 1;
      last = tx;
    }
    if (last && this.gw !== null) {
      this.writeGateway(Buffer.from(due));
      this.delivered.push({ at: now, from: last.from, firstAt: last.handedAt!, bytes: last.handed!, gatewayWaitMs: this.gatewayWaitMs() });
      this.trace?.push(`  ${now.toFixed(2)} -> gateway ${Buffer.from(due).toString('hex')}`);
      if (this.delivered.length > 256) this.delivered = this.delivered.slice(-64);
    }
    if (this.queue.length > 0) this.pumpTimer = setTimeout(() => this.pump(), Math.max(0, this.queue[0]!.at - performance.now()));
  }
}
