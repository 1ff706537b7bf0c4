/**
 * Retained messages on flat files. Aedes keeps retained messages in memory only (no persistence package is
 * installed), so the gateway mirrors retained publishes here and replays the file at start.
 *
 * Flash is a budget: the gateway's own retained topics (state, availability, Home Assistant discovery) are
 * republished from the shadow at every start, so only their NAMES are kept (to clear the topics of devices
 * that are gone); payloads are kept for what clients retain. The file — one JSON document replaced
 * atomically, at most once per `debounceMs` — is so rewritten when a client retains something or the set
 * of the gateway's topics changes (a device added or removed), not on every value change (that rewrote
 * 1.4–2.8 MB about once a second for 1,000 × 100 points).
 */
import { readFile } from 'node:fs/promises';
import { atomicWriteFile } from '../util/atomic-file.js';

interface StoredMessage {
  topic: string;
  /** utf8 text, or base64 when `b64` is set (binary payloads from clients); absent for the gateway's own topics. */
  payload?: string;
  b64?: true;
  qos: 0 | 1 | 2;
  /** A topic the gateway publishes itself (rebuilt from the shadow at start): its payload is not kept. */
  own?: true;
}

export interface RetainedMessage {
  topic: string;
  payload: Buffer;
  qos: 0 | 1 | 2;
}

export class RetainedStore {
  private readonly messages = new Map<string, StoredMessage>();
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> | null = null;
  private dirty = false;
  private dropped = 0;
  private written = 0;
  private failing = false;
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly onError: (err: unknown) => void,
    private readonly debounceMs = 1000,
    private readonly maxTopics = 20_000,
    /** After a failed write (disk full), the next try comes this much later. */
    private readonly retryMs = 5000,
  ) {}

  /** Loads the file; a missing or unreadable file starts empty (reported through onError when corrupt). */
  async load(): Promise<RetainedMessage[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch {
      return [];
    }
    try {
      const list = JSON.parse(text) as StoredMessage[];
      for (const m of list) if (typeof m.topic === 'string' && (m.own || typeof m.payload === 'string')) this.messages.set(m.topic, m);
    } catch (err) {
      this.onError(new Error(`retained messages file ${this.path} is corrupt, starting empty: ${(err as Error).message}`));
    }
    return [...this.messages.values()].filter((m) => m.payload !== undefined).map((m) => ({
      topic: m.topic,
      payload: Buffer.from(m.payload!, m.b64 ? 'base64' : 'utf8'),
      qos: m.qos,
    }));
  }

  /** Every retained topic known from the last run, the gateway's own included (to clear the stale ones). */
  topics(): string[] {
    return [...this.messages.keys()];
  }

  /**
   * Mirrors one retained publish; an empty payload clears the topic (MQTT semantics). `own`: published by the
   * gateway itself, whose payload is rebuilt at start: only a new topic makes the file dirty.
   */
  record(topic: string, payload: Buffer, qos: 0 | 1 | 2, own = false): void {
    if (payload.length === 0) {
      if (!this.messages.delete(topic)) return;
    } else if (own) {
      const known = this.messages.get(topic);
      if (known?.own) return;
      if (!known && this.messages.size >= this.maxTopics) {
        this.dropped++;
        return;
      }
      this.messages.set(topic, { topic, qos, own: true });
    } else {
      if (!this.messages.has(topic) && this.messages.size >= this.maxTopics) {
        this.dropped++;
        return;
      }
      const text = payload.toString('utf8');
      const stored: StoredMessage = Buffer.from(text, 'utf8').equals(payload)
        ? { topic, payload: text, qos }
        : { topic, payload: payload.toString('base64'), b64: true, qos };
      this.messages.set(topic, stored);
    }
    this.dirty = true;
    this.schedule(this.debounceMs);
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.save();
    }, ms);
  }

  topicsUnder(prefix: string): string[] {
    return [...this.messages.keys()].filter((t) => t.startsWith(prefix));
  }

  get size(): number {
    return this.messages.size;
  }

  get droppedCount(): number {
    return this.dropped;
  }

  /** Times the file was written (flash writes: the bench and the wear figures in docs read it). */
  get writes(): number {
    return this.written;
  }

  /** Writes now if anything changed (serialised: one write in flight). */
  async save(): Promise<void> {
    if (this.saving) {
      await this.saving;
      if (!this.dirty) return;
    }
    if (!this.dirty) return;
    this.dirty = false;
    const data = JSON.stringify([...this.messages.values()]);
    this.saving = atomicWriteFile(this.path, data).then(() => {
      this.written++;
      this.failing = false;
    }, (err: unknown) => {
      this.dirty = true;
      // Once per failing spell (a full disk fails every try); retried on its own, since the client that
      // retained the message may never publish again.
      if (!this.failing) this.onError(err);
      this.failing = true;
      this.schedule(this.retryMs);
    });
    try {
      await this.saving;
    } finally {
      this.saving = null;
    }
  }

  /** Stops the debounce timer and writes what is pending. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.save();
  }
}
