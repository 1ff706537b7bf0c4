#!/usr/bin/env -S node --max-semi-space-size=1
// The small young generation keeps RSS flat on a Pi: polling churns short-lived objects and V8 would
// otherwise grow each semi-space to 16 MB (measured: 1,000 devices × 100 points, 125 MB → 91 MB RSS).
/**
 * The process: arguments, signals, exit codes. `shadowgate run --config FILE` runs the gateway;
 * `check-config FILE` validates and prints every problem (`path: message`), exit status 2 when invalid.
 * Exit codes: 0 ok, 1 runtime failure, 2 invalid configuration or usage.
 */
import { parseArgs } from 'node:util';
import { ConfigError, parseConfigText, readConfigText, validateConfig, type ConfigChecker } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { gpioConfigChecker } from './drivers/gpio.js';
import { runHashPassword } from './cli/hash-password.js';
import { GatewayError } from './core/errors.js';
import { startGateway } from './gateway.js';
import { readBootStatus } from './config/boot-status.js';
import { readActiveConfig } from './runtime/config-store.js';
import { LogRing } from './util/log-ring.js';
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
  hash-password [--password P]  print a password_hash for mqtt.users (reads the password from stdin)
  boot-config [--source FILE] [--dir DIR] [--fallback FILE] [--root DIR]
                             SD image, at boot: validate and store the boot partition's config, apply host name,
                             Wi-Fi and SSH keys (boot-config --help for the defaults)

environment: SHADOWGATE_CONFIG, SHADOWGATE_DATA_DIR, SHADOWGATE_HTTP_PORT, SHADOWGATE_MQTT_PORT, SHADOWGATE_MQTT_WS_PORT,
  SHADOWGATE_BOOT_STATUS (boot-config's status.json, shown by run as checks.boot_config in /health/shadow)`;

const DEFAULT_CONFIG = '/etc/shadowgate/config.json';

// Driver checks join the config validation (config/ may not import drivers, so they are handed in here).
const CHECKERS: readonly ConfigChecker[] = [gpioConfigChecker];

interface Loaded {
  config: GatewayConfig;
  raw: unknown;
  text: string;
}

/** The file's config, or — for `run` — the config last applied from the console when it derives from this file. */
async function loadOrExplain(file: string, opts: { active?: boolean } = {}): Promise<Loaded | undefined> {
  try {
    const text = await readConfigText(file);
    let raw = parseConfigText(text);
    let config = validateConfig(raw, { checkers: CHECKERS });
    const active = opts.active ? await readActiveConfig(config.gateway.data_dir, text) : undefined;
    if (active !== undefined) {
      try {
        config = validateConfig(active, { checkers: CHECKERS });
        raw = active;
      } catch (err) {
        // A library or schema change can make an applied config invalid: the file still runs, loudly.
        process.stderr.write(`${file}: the configuration applied from the console is no longer valid; running the file's\n  ${(err as Error).message}\n`);
      }
    }
    return { config, raw, text };
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${file}: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`);
      return undefined;
    }
    throw err;
  }
}

/** boot-config's status, read once at start: it changes only at the next boot. */
async function loadBootStatus(log: Logger): Promise<Record<string, unknown> | undefined> {
  const file = process.env.SHADOWGATE_BOOT_STATUS?.trim();
  if (!file) return undefined;
  const { status, problem } = await readBootStatus(file);
  if (problem) log.warn({ file, problem }, 'boot status not shown in health');
  return status;
}

async function run(file: string): Promise<number> {
  const loaded = await loadOrExplain(file, { active: true });
  if (!loaded) return 2;
  const { config } = loaded;
  const ring = new LogRing();
  const log = createLogger(config.gateway.log_level, ring);
  const bootStatus = await loadBootStatus(log);
  // systemd Type=notify: READY after start, WATCHDOG from this event loop, STOPPING on shutdown.
  const sd = startSdNotify(log);
  let gateway;
  try {
    gateway = await startGateway(config, {
      log, ring, raw: loaded.raw, fileText: loaded.text, checkers: CHECKERS, routes: [], ...(bootStatus ? { bootStatus } : {}),
    });
  } catch (err) {
    sd.close();
    // Problems only a part can see (export targets, MQTT users) are configuration errors too.
    if (err instanceof GatewayError && err.code === 'CONFIG_INVALID') {
      process.stderr.write(`${file}: invalid configuration\n  ${err.message.replace(/\n/g, '\n  ')}\n`);
      return 2;
    }
    throw err;
  }
  log.info({
    httpPort: gateway.httpPort, mqttPort: gateway.mqttPort, mqttWsPort: gateway.mqttWsPort,
    config: file, devices: gateway.shadow.stats().totalDevices,
  }, 'ready');
  void sd.ready(`listening: http ${gateway.httpPort}, mqtt ${gateway.mqttPort}`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping');
      const notified = sd.stopping();
      gateway.stop().then(async () => {
        await notified;
        sd.close();
        resolve(0);
      }, async (err: unknown) => {
        log.error({ err }, 'stop failed');
        await notified;
        sd.close();
        resolve(1);
      });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // A bug must not cost the shadow since the last periodic save: log it, save once (bounded), exit 1
    // so systemd restarts a clean process (Restart=on-failure).
    const fatal = (err: unknown, kind: string): void => {
      log.fatal({ err, kind }, 'unexpected error; saving the shadow and exiting');
      const deadline = new Promise((r) => setTimeout(r, 3000).unref());
      void Promise.race([gateway.flush(), deadline]).finally(() => process.exit(1));
    };
    process.once('uncaughtException', (err) => fatal(err, 'uncaughtException'));
    process.once('unhandledRejection', (err) => fatal(err, 'unhandledRejection'));
  });
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
      // Loaded only for these commands: `run` must not pay for serialport/modbus-serial at start-up.
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
    case 'hash-password':
      return runHashPassword(rest, (line) => process.stdout.write(`${line}\n`));
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
