/**
 * systemd readiness and watchdog (sd_notify) for `Type=notify` units, after zigbee2mqtt's
 * lib/util/sd-notify.ts: READY=1 once started, WATCHDOG=1 every half WATCHDOG_USEC, STOPPING=1 on
 * shutdown. Node has no unix datagram sockets, so each message spawns the `systemd-notify` binary
 * (the unit needs NotifyAccess=all: the sender is a child, not the main PID). systemd ≥ 246 makes
 * systemd-notify wait on sd_notify_barrier, so the message is processed before the child exits;
 * `--no-block` would bring back the race where systemd cannot attribute it (systemd#2739).
 * The pings run on a timer of the main event loop on purpose: a blocked loop stops them and systemd
 * restarts the service. Nothing here throws; a failing systemd-notify is logged once as a warning.
 */
import { execFile } from 'node:child_process';
import type { Logger } from './logger.js';

export interface SdNotify {
  /** READY=1 (and STATUS=) and starts the watchdog pings; resolves when systemd-notify has exited. */
  ready(status?: string): Promise<void>;
  /** Stops the pings and sends STOPPING=1; resolves when systemd-notify has exited. */
  stopping(): Promise<void>;
  /** Stops the pings without telling systemd anything (idempotent). */
  close(): void;
}

export interface SdNotifyOptions {
  /** Environment to read NOTIFY_SOCKET/WATCHDOG_* from and to run systemd-notify with. */
  env?: NodeJS.ProcessEnv;
  /** Upper bound for one systemd-notify run. */
  timeoutMs?: number;
}

const NOOP: SdNotify = { ready: async () => {}, stopping: async () => {}, close: () => {} };

/** Half of WATCHDOG_USEC in ms, or undefined when the watchdog is off or meant for another PID. */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isSafeInteger(usec) || usec <= 0) return undefined;
  // sd_watchdog_enabled(): WATCHDOG_PID, when set, names the process the watchdog is for.
  if (env.WATCHDOG_PID !== undefined && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}

export function startSdNotify(log: Logger, options: SdNotifyOptions = {}): SdNotify {
  const env = options.env ?? process.env;
  if (!env.NOTIFY_SOCKET) {
    log.debug('NOTIFY_SOCKET not set: not running under systemd Type=notify, sd_notify disabled');
    return NOOP;
  }
  const timeout = options.timeoutMs ?? 5000;
  const interval = watchdogIntervalMs(env);
  let warned = false;
  let timer: NodeJS.Timeout | undefined;
  let pinging = false;

  const send = (args: string[]): Promise<void> => new Promise((resolve) => {
    const fail = (err: unknown): void => {
      if (!warned) {
        warned = true;
        log.warn({ err, args }, 'systemd-notify failed; systemd readiness/watchdog will not work (warned once)');
      }
      resolve();
    };
    try {
      execFile('systemd-notify', args, { env, timeout, windowsHide: true }, (err) => (err ? fail(err) : resolve()));
    } catch (err) {
      fail(err);
    }
  });

  const ping = (): void => {
    if (pinging) return; // a slow systemd-notify must not pile up children
    pinging = true;
    void send(['WATCHDOG=1']).then(() => { pinging = false; });
  };

  const close = (): void => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };

  return {
    ready(status = 'ready') {
      if (interval !== undefined && !timer) {
        timer = setInterval(ping, interval);
        timer.unref(); // the watchdog never keeps the process alive on its own
        log.debug({ intervalMs: interval }, 'systemd watchdog pings started');
      }
      return send(['--ready', `--status=${status}`]);
    },
    stopping() {
      close();
      return send(['STOPPING=1', 'STATUS=stopping']);
    },
    close,
  };
}
