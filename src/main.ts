#!/usr/bin/env -S node --max-semi-space-size=1
// The small young generation keeps RSS flat on a Pi: polling churns short-lived objects and V8 would
// otherwise grow each semi-space to 16 MB (measured: 1,000 devices × 100 points, 125 MB → 91 MB RSS).
/**
 * The process: arguments, signals, exit codes. `shadowgate run --config FILE` runs the gateway;
 * `check-config FILE` validates and prints every problem (`path: message`), exit status 2 when invalid.
 * Exit codes: 0 ok, 1 runtime failure, 2 invalid configuration or usage, 75 a restart asked for from the
 * console (the systemd unit starts the gateway again: RestartForceExitStatus=75).
 */
import { parseArgs } from 'node:util';
import { ConfigError, parseConfigText, readConfigText, validateConfig, type ConfigChecker } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { gpioConfigChecker, loadBoards } from './drivers/gpio.js';
import { runHashPassword } from './cli/hash-password.js';
import { GatewayError } from './core/errors.js';
import { startGateway } from './gateway.js';
import { readBootStatus } from './config/boot-status.js';
import { readActiveConfig, sha256 } from './runtime/config-store.js';
import { applyPending, type LifecycleStatus } from './runtime/lifecycle.js';
import { tokensOf } from './runtime/backup-format.js';
import { lockDataDir, type DataDirLock } from './runtime/data-dir-lock.js';
import { describeStartupFailure } from './runtime/startup-failure.js';
import { DataDirDamage } from './store/damage.js';
import { LogRing } from './util/log-ring.js';
import { sameValue } from './util/same-value.js';
import { createLogger, type Logger } from './util/logger.js';
import { startSdNotify } from './util/sd-notify.js';

const USAGE = `usage: shadowgate <command> [options]

  run [--config FILE]        run the gateway (FILE defaults to $SHADOWGATE_CONFIG or /etc/shadowgate/config.json)
  check-config [FILE]        validate a config file and print every problem
  scan --bus ID | --port DEV [--baud 9600 --parity none --stop-bits 1] [--from 1 --to 247]
                             find responding Modbus unit ids on a bus of the config, or on a serial port
  read|write --bus ID --unit N --table holding --address A --type float32 [--value V] [--word-order little]
                             one-off Modbus I/O without the daemon (stop the gateway first on RTU)
  probe --bus ID | --port DEV [--baud 9600 --parity none --stop-bits 1]  --unit N --model NAME [--json]
                             read every point of a device once, with units; flag implausible values
  doctor --port DEV [--baud auto|N --parity auto|none|even|odd --stop-bits auto|1|2] [--from 1 --to 247] [--json]
                             find a line's serial settings, every unit on it and which library model each one is;
                             --listen SECONDS: only listen to another master's traffic (sends nothing)
  hash-password [--password P]  print a password_hash for mqtt.users (reads the password from stdin)
  update FILE.raucb [--timeout SECONDS]
                             SD image: install an A/B system update bundle and follow the install (docs/deploy.md)
  boot-config [--source FILE] [--dir DIR] [--fallback FILE] [--root DIR]
                             SD image, at boot: validate and store the boot partition's config, apply host name,
                             Wi-Fi and SSH keys (boot-config --help for the defaults)

environment: SHADOWGATE_CONFIG, SHADOWGATE_DATA_DIR, SHADOWGATE_HTTP_PORT, SHADOWGATE_MQTT_PORT, SHADOWGATE_MQTT_WS_PORT,
  SHADOWGATE_BOOT_STATUS (boot-config's status.json, shown by run as checks.boot_config in /health/shadow),
  SHADOWGATE_RAUC_SYSTEM_CONF (where run and update look for RAUC's system.conf: /etc/rauc/system.conf)`;

const DEFAULT_CONFIG = '/etc/shadowgate/config.json';
/** Exit status of a restart asked for from the console (EX_TEMPFAIL); the systemd unit restarts on it. */
const EXIT_RESTART = 75;

// Driver checks join the config validation (config/ may not import drivers, so they are handed in here).
const CHECKERS: readonly ConfigChecker[] = [gpioConfigChecker];

interface Loaded {
  config: GatewayConfig;
  raw: unknown;
  text: string;
}

/** The file's config (validated); for `run`, the config last applied from the console may replace it (withActive). */
async function loadOrExplain(file: string): Promise<Loaded | undefined> {
  try {
    const text = await readConfigText(file);
    const raw = parseConfigText(text);
    return { config: validateConfig(raw, { checkers: CHECKERS }), raw, text };
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${file}: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`);
      return undefined;
    }
    throw err;
  }
}

/** The config last applied from the console, when it derives from this very file text (runtime/config-store.ts). */
async function withActive(file: string, loaded: Loaded, damage: DataDirDamage): Promise<Loaded> {
  const active = await readActiveConfig(loaded.config.gateway.data_dir, loaded.text, damage);
  // Every start records the running config as the active one, so this is usually the file's own value: its
  // validation is the one just done (~100 ms of start-up for 1,000 devices).
  if (active === undefined || sameValue(active, loaded.raw)) return loaded;
  try {
    return { ...loaded, config: validateConfig(active, { checkers: CHECKERS }), raw: active };
  } catch (err) {
    // A library or schema change can make an applied config invalid: the file still runs, loudly.
    process.stderr.write(`${file}: the configuration applied from the console is no longer valid; running the file's\n  ${(err as Error).message}\n`);
    return loaded;
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a restore applied at start needs of the file's config: its tokens stay valid, its data_dir stays. */
function pendingOptions(loaded: Loaded): Parameters<typeof applyPending>[0] {
  const raw = isObj(loaded.raw) ? loaded.raw : {};
  return {
    dataDir: loaded.config.gateway.data_dir, baseSha: sha256(loaded.text), now: Date.now(), keepTokens: tokensOf(raw),
    dataDirValue: isObj(raw.gateway) ? raw.gateway.data_dir : undefined,
    validate: (next) => void validateConfig(next, { checkers: CHECKERS }),
  };
}

/** A start-up failure the user can fix: one line naming the cause and the setting, exit 1; anything else is a bug. */
function explainStartup(err: unknown, config: GatewayConfig): number {
  const line = describeStartupFailure(err, config);
  if (line === undefined) throw err;
  process.stderr.write(`shadowgate: ${line}\n`);
  return 1;
}

/** Where RAUC's system.conf is looked for: $SHADOWGATE_RAUC_SYSTEM_CONF moves it (tests, a development box). */
const raucSystemConf = (): { raucSystemConf?: string } => {
  const file = process.env.SHADOWGATE_RAUC_SYSTEM_CONF?.trim();
  return file ? { raucSystemConf: file } : {};
};

/** boot-config's status, read once at start: it changes only at the next boot. */
async function loadBootStatus(log: Logger): Promise<Record<string, unknown> | undefined> {
  const file = process.env.SHADOWGATE_BOOT_STATUS?.trim();
  if (!file) return undefined;
  const { status, problem } = await readBootStatus(file);
  if (problem) log.warn({ file, problem }, 'boot status not shown in health');
  return status;
}

async function run(file: string): Promise<number> {
  // The board files are read once, now: a GPIO bus added later (live config) then reads no file on the loop.
  // A malformed one is reported by the gpio check that uses it, so it is not an error here.
  try {
    loadBoards();
  } catch {
    // See above.
  }
  const fromFile = await loadOrExplain(file);
  if (!fromFile) return 2;
  // The lock comes before anything in data_dir is read: a second gateway must not restore, nor set aside.
  let lock: DataDirLock;
  try {
    lock = await lockDataDir(fromFile.config.gateway.data_dir);
  } catch (err) {
    return explainStartup(err, fromFile.config);
  }
  // A restore or reset asked for (REST, the boot partition) is carried out now, before anything in data_dir is read.
  let lifecycle: LifecycleStatus | undefined;
  const lifecycleLines: string[] = [];
  try {
    lifecycle = await applyPending(pendingOptions(fromFile), (line) => lifecycleLines.push(line));
  } catch (err) {
    await lock.release();
    process.stderr.write(`shadowgate: the restore or reset asked for could not be carried out: ${(err as Error).message}\n`);
    return 1;
  }
  const damage = new DataDirDamage(fromFile.config.gateway.data_dir);
  const loaded = await withActive(file, fromFile, damage);
  if (loaded.config.gateway.data_dir !== fromFile.config.gateway.data_dir) {
    // The console moved data_dir (taking effect now): that directory needs its own lock; the file's is let go.
    try {
      const moved = await lockDataDir(loaded.config.gateway.data_dir);
      await lock.release();
      lock = moved;
    } catch (err) {
      await lock.release();
      return explainStartup(err, loaded.config);
    }
  }
  const { config } = loaded;
  const ring = new LogRing();
  const log = createLogger(config.gateway.log_level, ring);
  damage.attach(log);
  const bootStatus = await loadBootStatus(log);
  for (const line of lifecycleLines) log.warn(line);
  // systemd Type=notify: READY after start, WATCHDOG from this event loop, STOPPING on shutdown.
  const sd = startSdNotify(log);
  // Only under systemd (it sets INVOCATION_ID for every start of a unit) does an exit come back as a restart.
  let restartNow = (): void => {};
  const restart = process.env.INVOCATION_ID ? { restart: () => restartNow() } : {};
  let gateway;
  try {
    gateway = await startGateway(config, {
      log, ring, raw: loaded.raw, fileText: loaded.text, checkers: CHECKERS, routes: [], damage, ...(bootStatus ? { bootStatus } : {}), ...restart,
      ...(lifecycle ? { lifecycle } : {}), ...raucSystemConf(),
    });
  } catch (err) {
    sd.close();
    await lock.release();
    // Problems only a part can see (export targets, MQTT users) are configuration errors too.
    if (err instanceof GatewayError && err.code === 'CONFIG_INVALID') {
      process.stderr.write(`${file}: invalid configuration\n  ${err.message.replace(/\n/g, '\n  ')}\n`);
      return 2;
    }
    return explainStartup(err, config);
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string, code = 0): void => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping');
      const notified = sd.stopping();
      gateway.stop().then(async () => {
        await lock.release();
        await notified;
        sd.close();
        resolve(code);
      }, async (err: unknown) => {
        log.error({ err }, 'stop failed');
        await lock.release();
        await notified;
        sd.close();
        resolve(1);
      });
    };
    restartNow = () => stop('restart', EXIT_RESTART);
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // A bug must not cost the shadow since the last periodic save: log it, save once (bounded), exit 1
    // so systemd restarts a clean process (Restart=on-failure).
    const fatal = (err: unknown, kind: string): void => {
      log.fatal({ err, kind }, 'unexpected error; saving the shadow and exiting');
      const deadline = new Promise((r) => setTimeout(r, 3000).unref());
      void Promise.race([gateway.flush(), deadline]).finally(() => void lock.release().finally(() => process.exit(1)));
    };
    process.once('uncaughtException', (err) => fatal(err, 'uncaughtException'));
    process.once('unhandledRejection', (err) => fatal(err, 'unhandledRejection'));
    // Only now, with the handlers in place: a SIGTERM sent on seeing "ready" found none before and killed the
    // process with the kernel's default action, without the final save (seen: 3 of 6 immediate stops).
    log.info({
      httpPort: gateway.httpPort, mqttPort: gateway.mqttPort, mqttWsPort: gateway.mqttWsPort,
      config: file, devices: gateway.shadow.stats().totalDevices,
    }, 'ready');
    void sd.ready(`listening: http ${gateway.httpPort}, mqtt ${gateway.mqttPort || 'off'}`);
  });
}

/**
 * A progress line on stderr: rewritten in place on a terminal; elsewhere (a log, a pipe) one line per phase
 * and at most one every 2 s, so a scan of 247 units does not print 247 lines.
 */
function progressLine(): (line: string) => void {
  let lastPhase = '';
  let lastAt = 0;
  return (line) => {
    // '' ends the progress: a terminal's line is cleared so the report starts on a clean one.
    if (line === '') {
      if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
      return;
    }
    if (process.stderr.isTTY) {
      process.stderr.write(`\r${line.slice(0, (process.stderr.columns || 80) - 1)}\x1b[K`);
      return;
    }
    const phase = line.slice(0, line.indexOf(']') + 1);
    if (phase === lastPhase && Date.now() - lastAt < 2000) return;
    lastPhase = phase;
    lastAt = Date.now();
    process.stderr.write(`${line}\n`);
  };
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest, allowPositionals: true, strict: false, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
  });
  // Only run and check-config take the file as a bare argument: for scan/read/write, parseArgs (strict: false, no
  // schema for their flags) would take a flag's value (`--bus rs485`) for a positional.
  const bare = command === 'run' || command === 'check-config' ? positionals[0] : undefined;
  const file = (typeof values.config === 'string' ? values.config : bare) ?? process.env.SHADOWGATE_CONFIG ?? DEFAULT_CONFIG;
  switch (command) {
    case 'run':
      return run(file);
    case 'check-config': {
      const loaded = await loadOrExplain(file);
      if (!loaded) return 2;
      process.stdout.write(`${file}: ok (${loaded.config.devices.length} devices on ${loaded.config.buses.length} buses)\n`);
      return 0;
    }
    case 'scan':
    case 'read':
    case 'write': {
      // Loaded only for these commands: `run` must not pay for serialport at start-up.
      const { runModbusCommand } = await import('./cli/modbus.js');
      // The config is read only for a --bus: `scan --port DEV` runs before any config exists.
      return runModbusCommand(command, rest, async () => (await loadOrExplain(file))?.config, (line) => process.stdout.write(`${line}\n`));
    }
    case 'probe': {
      // Its own --config (the shared parse above takes flag values for positionals); none at all with --port.
      const { runProbe } = await import('./cli/probe.js');
      return runProbe(rest, {
        loadConfig: async (f) => (await loadOrExplain(f ?? process.env.SHADOWGATE_CONFIG ?? DEFAULT_CONFIG))?.config,
        checkers: CHECKERS,
      }, (line) => process.stdout.write(`${line}\n`), (line) => process.stderr.write(`${line}\n`));
    }
    case 'doctor': {
      const { runDoctorCommand } = await import('./cli/doctor.js');
      return runDoctorCommand(rest, { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`), progress: progressLine() });
    }
    case 'hash-password':
      return runHashPassword(rest, (line) => process.stdout.write(`${line}\n`));
    case 'update': {
      const { runUpdate } = await import('./cli/update.js');
      const { RAUC_SYSTEM_CONF } = await import('./store/update-status.js');
      return runUpdate(rest, {
        dataDir: async (f) => (await loadOrExplain(f ?? process.env.SHADOWGATE_CONFIG ?? DEFAULT_CONFIG))?.config.gateway.data_dir,
        systemConf: raucSystemConf().raucSystemConf ?? RAUC_SYSTEM_CONF,
        out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`),
      });
    }
    case 'boot-config': {
      const { runBootConfig } = await import('./cli/boot-config.js');
      return runBootConfig(rest, (line) => process.stdout.write(`${line}\n`), (line) => process.stderr.write(`${line}\n`));
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`shadowgate: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  },
);
