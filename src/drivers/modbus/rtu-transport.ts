/**
 * The RTU link: modbus-serial's buffered RTU client on a serial port, plus what a master on a shared line
 * needs beyond it — every byte heard is stamped and what another master says is listened to (the bus owner
 * listens before it talks), what came before a request is never taken for its answer, and an answer that
 * cannot be trusted fails at once as a corrupt frame instead of holding the line until the timeout.
 */
import { existsSync, readSync } from 'node:fs';
import type { EventEmitter } from 'node:events';
import { silenceMs } from '../../protocol/modbus/wire-cost.js';
import { LineListener } from './line-listener.js';
import { pollBinding } from './poll-binding.js';
import { ClientTransport, WireGarbled, type Client, type RtuOptions, type WireRequest } from './transport.js';

/** modbus-serial's buffered RTU port (its frame buffer; emits each frame it finds) and the serial port under it. */
type BufferedPort = EventEmitter & { _buffer?: Buffer; _client?: EventEmitter & { port?: { fd?: number | null } } };
const bufferedPortOf = (client: Client | null): BufferedPort | undefined => (client as unknown as { _port?: BufferedPort } | null)?._port;

/**
 * The round-trip check below only runs while the line has other traffic: on a line where nothing was heard
 * outside our own transactions for this long there is no other master whose answer could be taken, and a
 * round trip that is only short (a pty, a busy CPU making the usual one long) must not fail a good answer.
 */
export const FOREIGN_TRAFFIC_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class RtuTransport extends ClientTransport {
  readonly kind = 'rtu' as const;
  readonly label: string;

  private lastRx = 0;
  private inRequest = false;
  /** How long a slave may take to answer another master's request: the timeout of our own requests. */
  private answerWaitMs = 300;
  private readonly listener: LineListener;
  private readonly scratch = Buffer.alloc(512);
  private readonly t35: number;
  private readonly charMs: number;
  /** Recent round trips of accepted answers, per unit and request shape (ms). */
  private readonly rtts = new Map<string, number[]>();
  /**
   * Silence that ends an answer: t3.5 in the standard, but USB adapters hand bytes over in bursts (an FTDI
   * waits up to 16 ms), so never under 50 ms — still a sixth of the default timeout.
   */
  private readonly frameGapMs: number;

  constructor(private readonly options: RtuOptions) {
    super();
    this.label = options.path;
    this.t35 = silenceMs(options.baudRate);
    this.charMs = 11_000 / options.baudRate;
    this.frameGapMs = Math.max(50, Math.ceil(4 * this.t35));
    this.listener = new LineListener(this.t35);
  }

  protected async connect(client: Client): Promise<void> {
    const { path, ...serial } = this.options;
    // modbus-serial hands its options to serialport, binding included (its d.ts does not list it).
    await client.connectRTUBuffered(path, { ...serial, binding: pollBinding } as typeof serial);
    this.listener.reset();
    bufferedPortOf(client)?._client?.on('data', (chunk: Buffer) => {
      this.lastRx = performance.now();
      if (!this.inRequest) this.listener.heard(chunk, this.lastRx, this.answerWaitMs);
    });
  }

  override lastRxAt(): number {
    return this.lastRx;
  }

  override answerPendingUntil(): number {
    return this.listener.answerPendingUntil();
  }

  override present(): boolean {
    return existsSync(this.options.path);
  }

  /**
   * The port's own reads (poll-binding.ts) run when the loop polls for I/O: a gateway held up (a GC
   * pause, a busy CPU) would decide the line is quiet while another master's answer waits unread in the
   * kernel, then take it for the answer to its own request. A non-blocking read of the port's fd settles it.
   */
  override takePending(): number {
    const fd = bufferedPortOf(this.client)?._client?.port?.fd;
    if (typeof fd !== 'number' || this.inRequest) return 0;
    let total = 0;
    for (let n = this.readNow(fd); n > 0; n = this.readNow(fd)) {
      total += n;
      this.lastRx = performance.now();
      this.listener.heard(Buffer.from(this.scratch.subarray(0, n)), this.lastRx, this.answerWaitMs);
    }
    return total;
  }

  private readNow(fd: number): number {
    try {
      return readSync(fd, this.scratch, 0, this.scratch.length, null);
    } catch {
      return 0; // EAGAIN: nothing waiting
    }
  }

  /**
   * One request, answered or refused as soon as the line says so. Bytes heard before it cannot be its answer
   * (another master's traffic, the tail of a garbled frame: the port's frame search could take them for one).
   * Bytes after it that end in silence without an answer are a garbled frame. And an answer found after
   * other bytes that were a frame of their own (silence between them) may be someone else's: another
   * master's request went out with ours and this is its answer — same unit, function and length, so it
   * passes every other check. A glitch byte stuck to the front of an answer (some transceivers make one)
   * is not a frame of its own and is skipped, as modbus-serial does.
   */
  override async request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined> {
    const port = bufferedPortOf(this.client);
    if (port?._buffer) port._buffer = Buffer.alloc(0);
    this.inRequest = true;
    this.answerWaitMs = timeoutMs;
    this.listener.reset();
    const raw = port?._client;
    /** Bytes heard so far and when each chunk came (cumulative count → time). */
    const chunks: { end: number; at: number }[] = [];
    let bytes = 0;
    let gap: NodeJS.Timeout | undefined;
    let onData: (d: Buffer) => void = () => {};
    let suspect: string | null = null;
    const quiet = new Promise<never>((_, reject) => {
      onData = (d) => {
        bytes += d.length;
        chunks.push({ end: bytes, at: performance.now() });
        clearTimeout(gap);
        gap = setTimeout(() => reject(new WireGarbled(`${bytes} bytes, then ${this.frameGapMs} ms of silence: an incomplete answer or not an answer to this request`)), this.frameGapMs);
      };
    });
    // Where in what was heard the port found its frame (its buffer is whole while it emits; the chunk that
    // completes the frame is not counted yet: it came now).
    const timeOf = (i: number): number => chunks.find((c) => c.end > i)?.at ?? performance.now();
    const onFrame = (frame: Buffer): void => {
      const buffer = port?._buffer;
      const offset = buffer ? frame.byteOffset - buffer.byteOffset : 0;
      if (offset <= 0) return;
      const silence = timeOf(offset) - timeOf(offset - 1);
      if (silence >= this.t35) {
        suspect = `an answer that came after another frame (${offset} bytes, then ${silence.toFixed(0)} ms of silence): it may be the answer to someone else's request`;
      }
    };
    raw?.on('data', onData);
    port?.on('data', onFrame);
    const sent = performance.now();
    try {
      const answer = await Promise.race([super.request(unit, req, timeoutMs), quiet]);
      if (suspect) throw new WireGarbled(suspect);
      this.checkRoundTrip(unit, req, performance.now() - sent);
      return answer;
    } finally {
      clearTimeout(gap);
      raw?.off('data', onData);
      port?.off('data', onFrame);
      this.inRequest = false;
    }
  }

  /**
   * An answer faster than the request itself takes on the wire, and than a quarter of this unit's usual
   * round trip, was on its way before the request was: the gateway was held up (a GC pause, a busy CPU)
   * while another master's answer came in, then read it after writing its own request. (Both bounds: on a
   * real line the first holds, over a pty the second.) Only while another master was heard lately
   * (FOREIGN_TRAFFIC_MS): alone on the line, no answer can be someone else's.
   */
  private checkRoundTrip(unit: number, req: WireRequest, rtt: number): void {
    const key = `${unit}:${req.fc}:${'count' in req ? req.count : 0}`;
    const recent = this.rtts.get(key) ?? [];
    const shared = performance.now() - this.listener.lastHeardAt() < FOREIGN_TRAFFIC_MS;
    // The median is sorted out only on a shared line: alone on it (the usual case) no answer is checked.
    const usual = shared && recent.length >= 4 ? [...recent].sort((a, b) => a - b)[recent.length >> 1]! : null;
    const requestBytes = req.fc === 15 ? 9 + Math.ceil(req.values.length / 8) : req.fc === 16 ? 9 + 2 * req.values.length : 8;
    if (usual !== null && rtt < Math.min(requestBytes * this.charMs, usual / 4)) {
      throw new WireGarbled(`an answer ${rtt.toFixed(1)} ms after the request, where unit ${unit} takes ${usual.toFixed(0)} ms: it was on its way before the request (someone else's)`);
    }
    recent.push(rtt);
    if (recent.length > 8) recent.shift();
    this.rtts.set(key, recent);
  }

  /**
   * RTU has no transaction ids: a late answer to a timed-out request would be taken as the answer to
   * the next one and the link would stay one frame behind for good (notes §3). Wait until the line
   * has been quiet for `quietMs`, then empty the buffered port's half-frame buffer.
   */
  override async drain(quietMs: number, maxMs: number): Promise<void> {
    const port = bufferedPortOf(this.client);
    const raw = port?._client;
    let last = performance.now();
    const onData = (): void => { last = performance.now(); };
    raw?.on('data', onData);
    const start = performance.now();
    try {
      while (performance.now() - last < quietMs && performance.now() - start < maxMs) await sleep(Math.max(1, quietMs - (performance.now() - last)));
    } finally {
      raw?.off('data', onData);
    }
    if (port && port._buffer) port._buffer = Buffer.alloc(0);
  }
}
