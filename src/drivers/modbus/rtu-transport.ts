/**
 * The RTU link: modbus-serial's client on a line of our own (rtu-line.ts), plus what a master on a shared
 * line needs beyond it — every byte heard is stamped and what another master says is listened to (the bus
 * owner listens before it talks), what came before a request is never taken for its answer, and an answer
 * that cannot be trusted fails at once as a corrupt frame instead of holding the line until the timeout.
 */
import { existsSync } from 'node:fs';
import { RtuLine, SHARED_LINE_MS } from './rtu-line.js';
import { ClientTransport, ModbusRTU, WireGarbled, type Client, type RtuOptions, type WireRequest } from './transport.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class RtuTransport extends ClientTransport {
  readonly kind = 'rtu' as const;
  readonly label: string;

  /** The line of the client opened last (a fresh one per open, like the client). */
  private line: RtuLine | null = null;
  private readonly charMs: number;
  /** Recent round trips of accepted answers, per unit and request shape (ms). */
  private readonly rtts = new Map<number, number[]>();

  constructor(private readonly options: RtuOptions) {
    super();
    this.label = options.path;
    this.charMs = 11_000 / options.baudRate;
  }

  protected override newClient(): Client {
    const line = new RtuLine(this.options);
    // modbus-serial drops its own 'error' listener on close; a dying port can still emit one.
    line.on('error', () => {});
    this.line = line;
    return new ModbusRTU(line);
  }

  protected async connect(client: Client): Promise<void> {
    await new Promise<void>((resolve, reject) => client.open((err: Error | null) => (err ? reject(err) : resolve())));
  }

  override lastRxAt(): number {
    return this.line?.lastByteAt() ?? 0;
  }

  /**
   * Another master's request not answered yet, a frame heard that is not whole yet, or the other master's
   * turn after a frame on a shared line (rtu-line.ts heldUntil).
   */
  override answerPendingUntil(): number {
    return this.line?.heldUntil() ?? 0;
  }

  override present(): boolean {
    return existsSync(this.options.path);
  }

  /**
   * The line reads when the loop polls for I/O: a gateway held up (a GC pause, a busy CPU) would decide
   * the line is quiet while another master's answer waits unread in the kernel, then take it for the
   * answer to its own request. A non-blocking read of the port settles it.
   */
  override takePending(): number {
    return this.line?.readNow() ?? 0;
  }

  /**
   * One request, answered or refused as soon as the line says so (rtu-line.ts): bytes heard before it are
   * not its answer, bytes after it that end in silence without one are a garbled frame, an answer after
   * another frame may be someone else's. Then the round-trip check.
   */
  override async request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined> {
    const line = this.line;
    if (!line) return super.request(unit, req, timeoutMs);
    line.answerWaitMs = timeoutMs;
    const refused = new Promise<never>((_, reject) => {
      line.onRefused = (reason) => reject(new WireGarbled(reason));
    });
    const sent = performance.now();
    try {
      const answer = await Promise.race([super.request(unit, req, timeoutMs), refused]);
      this.checkRoundTrip(line, unit, req, performance.now() - sent);
      return answer;
    } finally {
      line.end();
    }
  }

  /**
   * An answer faster than the request itself takes on the wire, and than a quarter of this unit's usual
   * round trip, was on its way before the request was: the gateway was held up (a GC pause, a busy CPU)
   * while another master's answer came in, then read it after writing its own request. (Both bounds: on a
   * real line the first holds, over a pty the second.) Only while another master was heard lately
   * (SHARED_LINE_MS): alone on the line, no answer can be someone else's — and a round trip that is only
   * short (a pty, a busy CPU making the usual one long) must not fail a good answer.
   */
  private checkRoundTrip(line: RtuLine, unit: number, req: WireRequest, rtt: number): void {
    // A number, not a string: no allocation per request for the key.
    const key = (unit * 256 + req.fc) * 65_536 + ('count' in req ? req.count : 0);
    let recent = this.rtts.get(key);
    if (!recent) this.rtts.set(key, (recent = []));
    const shared = line.shared();
    // The median is sorted out only on a shared line: alone on it (the usual case) no answer is checked.
    const usual = shared && recent.length >= 4 ? [...recent].sort((a, b) => a - b)[recent.length >> 1]! : null;
    const requestBytes = req.fc === 15 ? 9 + Math.ceil(req.values.length / 8) : req.fc === 16 ? 9 + 2 * req.values.length : 8;
    if (usual !== null && rtt < Math.min(requestBytes * this.charMs, usual / 4)) {
      throw new WireGarbled(`an answer ${rtt.toFixed(1)} ms after the request, where unit ${unit} takes ${usual.toFixed(0)} ms: it was on its way before the request (someone else's)`);
    }
    if (recent.length === 8) recent.shift();
    recent.push(rtt);
  }

  /**
   * RTU has no transaction ids: a late answer to a timed-out request would be taken as the answer to
   * the next one and the link would stay one frame behind for good (notes §3). Wait until the line
   * has been quiet for `quietMs`, then forget what the line holds of the transaction.
   */
  override async drain(quietMs: number, maxMs: number): Promise<void> {
    const line = this.line;
    const start = performance.now();
    const last = (): number => Math.max(start, line?.lastByteAt() ?? 0);
    while (performance.now() - last() < quietMs && performance.now() - start < maxMs) await sleep(Math.max(1, quietMs - (performance.now() - last())));
    line?.clear();
  }
}
