/**
 * The bus option `rs485` around the RTU link's opens and closes (rtu-transport.ts): "kernel" sets RS-485 mode on
 * the tty before each open (rs485-kernel.ts); "gpio" claims the DE pin at open, drives it around each frame
 * (rs485-de.ts) and releases it, low, at close. A port that refuses kernel mode is told once; the bus runs on.
 */
import { resolveChipMapping } from '../gpio/chip.js';
import { createOnoffPort } from '../gpio/onoff-port.js';
import type { GpioLine } from '../gpio/port.js';
import { DePin } from './rs485-de.js';
import { rs485RefusedNote, setKernelRs485 } from './rs485-kernel.js';
import type { LineDirection } from './serial-bytes.js';
import type { Rs485Setting } from './transport.js';

/** What the control reaches the system through (a test hands in a pty's refusal or a fake GPIO line). */
export interface Rs485Deps {
  setKernel?: typeof setKernelRs485;
  /** Claims BCM `pin` as an output, low. */
  openDe?: (pin: number) => Promise<GpioLine>;
}

/** onoff on sysfs, the header chip found by its label (gpio/chip.ts), as the gpio buses claim their lines. */
async function openOnoffDe(pin: number): Promise<GpioLine> {
  const port = await createOnoffPort(await resolveChipMapping());
  return port.open({ line: pin, direction: 'out', edges: false, initial: 0 });
}

export class Rs485Control {
  /** The DE pin of the open link (gpio mode). */
  de: DePin | null = null;
  private deLine: GpioLine | null = null;
  private told = false;
  private noteHandler: (note: string) => void = () => {};

  constructor(private readonly path: string, private readonly setting: Rs485Setting, private readonly charMs: number, private readonly deps: Rs485Deps = {}) {}

  onNote(fn: (note: string) => void): void {
    this.noteHandler = fn;
  }

  /** Before the port opens: kernel mode set (a refusal told once, never thrown), or the DE pin claimed (a failure throws: the bus cannot talk). */
  async beforeOpen(): Promise<void> {
    const setting = this.setting;
    if (setting.mode === 'kernel') {
      const refused = await (this.deps.setKernel ?? setKernelRs485)(this.path, setting);
      if (refused !== null && !this.told) {
        this.told = true;
        this.noteHandler(rs485RefusedNote(this.path, refused));
      }
      return;
    }
    if (this.deLine) return;
    try {
      this.deLine = await (this.deps.openDe ?? openOnoffDe)(setting.dePin);
    } catch (err) {
      throw new Error(`${this.path}: cannot claim DE pin BCM ${setting.dePin} (rs485 "gpio"): ${(err as Error).message}`);
    }
    this.de = new DePin(this.deLine, this.charMs);
  }

  /** What the freshly opened line drives its direction with. */
  direction(): LineDirection | null {
    return this.de;
  }

  /** After the port closed: DE low and the pin released. */
  afterClose(): void {
    this.de?.release();
    this.deLine?.close();
    this.deLine = null;
    this.de = null;
  }
}
