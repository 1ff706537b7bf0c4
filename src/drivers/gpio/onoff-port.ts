/**
 * The sysfs backend on onoff. onoff always talks to /sys/class/gpio (not configurable), speaks sysfs
 * numbers (chip base + BCM line, see chip.ts), and its constructor busy-waits for the export — so
 * lines are opened once, from the driver's start().
 */
import type { ChipMapping } from './chip.js';
import type { GpioLine, GpioLineRequest, GpioPort, Level } from './port.js';

type OnoffModule = typeof import('onoff');
type OnoffGpio = InstanceType<OnoffModule['Gpio']>;

/**
 * Loaded on demand: onoff needs the native epoll build, and a gateway without gpio buses must start
 * even where that build is missing.
 */
export async function createOnoffPort(mapping: ChipMapping): Promise<GpioPort> {
  const { Gpio } = (await import('onoff')) as OnoffModule;
  return {
    name: 'onoff-sysfs',
    open(request: GpioLineRequest): GpioLine {
      const sysfs = mapping.toSysfs(request.line);
      // "high"/"low" set direction and level in one sysfs write (raw, ignoring active_low), so an
      // active-low relay never clicks on while the line turns into an output.
      const direction = request.direction === 'out' ? (request.initial === 1 ? 'high' : 'low') : 'in';
      const construct = (): OnoffGpio => request.direction === 'in' && request.edges
        ? new Gpio(sysfs, 'in', 'both', { activeLow: false })
        : new Gpio(sysfs, direction, undefined, { activeLow: false });
      return onoffLine(withRetry(construct), request.line);
    },
  };
}

/**
 * onoff gives up after a fixed number of open() tries (~100 ms) while the kernel creates gpioN/ and
 * udev grants the gpio group access; on a loaded Zero 2 W that can take longer. The export was
 * written, so a second try finds the line exported and only waits for access.
 */
function withRetry(construct: () => OnoffGpio, attempts = 3): OnoffGpio {
  for (let attempt = 1; ; attempt++) {
    try {
      return construct();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (attempt >= attempts || (code !== 'ENOENT' && code !== 'EACCES')) throw e;
    }
  }
}

function onoffLine(gpio: OnoffGpio, line: number): GpioLine {
  let closed = false;
  return {
    line,
    read: () => gpio.readSync() as Level,
    write: (level: Level) => gpio.writeSync(level),
    watch(onEdge: (level: Level) => void): void {
      try {
        gpio.watch((err, value) => {
          // An error here is a failed read in the epoll callback; the next edge or poll recovers.
          if (!err) onEdge(value as Level);
        });
      } catch (e) {
        // onoff pushes the listener before epoll.add: if add throws (EPERM where the value file cannot
        // be polled), the stale listener would make unexport() throw later. Drop it now.
        try {
          gpio.unwatchAll();
        } catch {
          // unwatchAll clears the listeners before epoll.remove throws for the fd it never added.
        }
        throw e;
      }
    },
    close(): void {
      if (closed) return;
      closed = true;
      try {
        gpio.unexport();
      } catch {
        // Nothing left to do for a line the kernel already dropped.
      }
    },
  };
}
