/**
 * The one lifecycle contract (types only) that every running part implements: drivers, persistence,
 * history, the MQTT export and the HTTP server. The composition root (src/gateway.ts, through
 * src/runtime/) starts them in order and stops them in reverse; parts that can take a changed config while
 * running implement `apply`, and touch only what changed.
 */
export interface Lifecycle {
  /** Opens what the part needs; throws when it cannot run (the root then stops what did start). */
  start(): Promise<void>;
  /** Releases everything; resolves when nothing of the part is left running. Must not throw. */
  stop(): Promise<void>;
}

export interface Part<C = unknown> extends Lifecycle {
  /** Shown in logs and in "restart required" texts. */
  readonly name: string;
  /**
   * Takes a changed config while running and returns what it changed, in words. Absent: the part's
   * config is fixed until the next start, and a change to it is reported as needing a restart.
   */
  apply?(next: C, prev: C): Promise<string[]>;
  /**
   * Called once every part has started and the gateway serves: background work that must not hold the
   * start back (Home Assistant discovery of a large fleet is ~0.5 s of CPU on this machine) begins here.
   */
  ready?(): void;
  /** Figures for /health/shadow and /metrics. */
  stats?(): Record<string, unknown>;
}
