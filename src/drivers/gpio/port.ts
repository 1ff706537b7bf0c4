/**
 * The GPIO hardware contract, types only. The driver logic (edges, debounce, active_low, polling) never
 * imports a backend; it is handed a GpioPort. Today the backend is onoff on sysfs (onoff-port.ts);
 * sysfs is deprecated and onoff unmaintained (notes/packages.md §1), so a character-device backend
 * (libgpiod) can replace it by implementing these two interfaces.
 *
 * Levels are PHYSICAL (0 = line low, 1 = line high): active_low is applied above the port so it
 * behaves the same on every backend and is testable with a fake port.
 */
export type Level = 0 | 1;

export interface GpioLineRequest {
  /** BCM line number (offset on the header's gpiochip), not a sysfs number. */
  line: number;
  direction: 'in' | 'out';
  /** Inputs only: ask the backend for edge notifications on both edges (filtering is done above). */
  edges: boolean;
  /** Outputs only: physical level driven from the moment the line becomes an output (no glitch). */
  initial?: Level;
}

export interface GpioLine {
  readonly line: number;
  /** Current physical level (fast: one pread on sysfs). */
  read(): Level;
  write(level: Level): void;
  /**
   * Starts edge notifications; `onEdge` gets the level read at the interrupt. Throws when the backend
   * cannot deliver interrupts (onoff on a filesystem without POLLPRI: EPERM) — the caller then polls.
   */
  watch(onEdge: (level: Level) => void): void;
  /** Stops notifications and releases the line (sysfs: unexport). Never throws. */
  close(): void;
}

export interface GpioPort {
  /** Backend name for logs and stats ("onoff-sysfs", "fake"). */
  readonly name: string;
  /**
   * Claims one line. May block the event loop (onoff busy-waits for the sysfs export), so the driver
   * calls it only from start(), never on a hot path. Throws when the line cannot be claimed.
   */
  open(request: GpioLineRequest): GpioLine;
}
