/**
 * The whole gateway against the fake kernel, inside a private mount namespace: the user's config of
 * board/examples/gpio-relay-door.json (a Waveshare relay HAT and a door contact), run as
 * `node --import tsx src/main.ts run --config FILE` in its own process, driven over real HTTP.
 * Run as: unshare -m --propagation private node --import tsx scripts/gpio-fake/gateway-in-namespace.ts <workDir>
 * (workDir: an empty temp dir, made and removed by the caller). Prints one JSON line of observations for
 * test/integration/gpio-gateway.test.ts to assert. Never run it outside a fresh mount namespace: it
 * mounts a tmpfs over /sys/class (it refuses when it is not in one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stamp, waitedBetween } from '../../test/helpers/lateness.js';
import { GPIO, runThrowaway, sleep, waitFor, withFakeKernel } from './namespace.js';

const [workDir] = process.argv.slice(2);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
// Pi 4 on kernel 6.6+: pinctrl-bcm2711 at base 512 (the fake kernel's pi4 scenario, with a decoy below).
const BASE = 512;
// Waveshare RPi Relay Board CH1 = BCM 26; gpio-contact = P1-11 = BCM 17 (board/models).
const RELAY1 = BASE + 26;
const CONTACT = BASE + 17;

interface Envelope { success: boolean; errorCode: number; errorMsg: string; data: any }

let gateway: ChildProcess | undefined;
let gatewayOut = '';
let gatewayErr = '';

async function main(): Promise<Record<string, unknown>> {
  if (!workDir) throw new Error('usage: gateway-in-namespace.ts <workDir>');
  const partial: Record<string, unknown> = {};
  return withFakeKernel('pi4', 90_000, async () => {
    try {
      return await exercise(partial);
    } catch (e) {
      return { ...partial, error: String((e as Error).stack ?? e), gatewayStdout: gatewayOut.slice(-4000), gatewayStderr: gatewayErr.slice(-4000) };
    } finally {
      if (gateway?.pid !== undefined && gateway.exitCode === null && gateway.signalCode === null) {
        try {
          process.kill(gateway.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
  });
}

async function exercise(result: Record<string, unknown>): Promise<Record<string, unknown>> {
  const exported = (): string[] => readdirSync(GPIO).filter((d) => /^gpio\d+$/.test(d)).sort();
  const sysfs = (n: number, attr: string): string => readFileSync(`${GPIO}/gpio${n}/${attr}`, 'utf8').trim();

  // The user's five lines, as shipped; the only addition is the board (the container has no
  // /proc/device-tree/model to detect it from). data_dir and ports come from the environment.
  const example = JSON.parse(readFileSync(path.join(REPO, 'board/examples/gpio-relay-door.json'), 'utf8'));
  example.gateway = { ...example.gateway, board: 'rpi-4b' };
  const configFile = path.join(workDir!, 'config.json');
  writeFileSync(configFile, JSON.stringify(example, null, 2));
  const dataDir = path.join(workDir!, 'data');

  const lines: any[] = [];
  const t0 = Date.now();
  gateway = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/main.ts'), 'run', '--config', configFile], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0',
    },
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    gateway!.once('exit', (code, signal) => resolve({ code, signal })));
  let buffered = '';
  gateway.stdout!.on('data', (d: Buffer) => {
    gatewayOut += d.toString();
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        lines.push(JSON.parse(line));
      } catch {
        // Not a log line.
      }
    }
  });
  gateway.stderr!.on('data', (d: Buffer) => (gatewayErr += d.toString()));
  let gone: { code: number | null; signal: string | null } | undefined;
  void exited.then((e) => (gone = e));

  const ready = await waitFor('the gateway\'s ready line', () => {
    if (gone) throw new Error(`gateway exited early: ${JSON.stringify(gone)}`);
    return lines.find((l) => l.msg === 'ready');
  }, 40_000, 10); // about 4 s at rest (tsx compiles the gateway first); several times that beside a busy job
  const port = ready.httpPort as number;
  result.startMs = Date.now() - t0;
  result.ready = { httpPort: port, devices: ready.devices, mqttPort: ready.mqttPort };

  const call = async (p: string): Promise<Envelope> => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1${p}`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as Envelope;
  };
  const pointValue = async (id: string, point: string): Promise<unknown> =>
    (await call(`/shadow/devicePoint?id=${id}&point=${point}`)).data?.value;

  result.exported = exported();
  result.initial = { relay1: { value: sysfs(RELAY1, 'value'), direction: sysfs(RELAY1, 'direction') }, contact: sysfs(CONTACT, 'value') };
  // The line starts low: with the pull-up and active_low that is a closed contact.
  result.initialClosed = await waitFor('the contact\'s first value in the shadow', async () => {
    const v = await pointValue('door', 'closed');
    return v === null || v === undefined ? undefined : v;
  });
  result.initialRelay1 = await pointValue('relays', 'relay1');

  // (1) Switch relay 1 on over REST: active-low, so the line goes to 0; the shadow reads it back at once.
  result.writeRelay = await call('/device/writePoint?id=relays&point=relay1&value=1');
  result.relayFileAfterOn = sysfs(RELAY1, 'value');
  result.relayShadowAfterOn = await pointValue('relays', 'relay1');
  result.writeRelayOff = await call('/device/writePoint?id=relays&point=relay1&value=0');
  result.relayFileAfterOff = sysfs(RELAY1, 'value');
  result.relayShadowAfterOff = await pointValue('relays', 'relay1');
  result.writeRelayOn = await call('/device/writePoint?id=relays&point=relay1&value=1');
  result.relayFileFinal = sysfs(RELAY1, 'value');

  // (2) The door opens: the pull-up takes the line high (what the kernel shows on an edge), the shadow
  // must say 0 well before the device's 5 s poll. Then it closes again.
  // Also what this machine kept the gateway's thread (and this one, asking) from a CPU meanwhile: the test
  // widens its bound by it.
  const edge = async (level: '0' | '1', expect: number): Promise<[number, number]> => {
    const t = Date.now();
    const from = [stamp(), stamp(gateway!.pid)] as const;
    writeFileSync(`${GPIO}/gpio${CONTACT}/value`, `${level}\n`);
    await waitFor(`door.closed = ${expect} in the shadow`, async () => ((await pointValue('door', 'closed')) === expect ? true : undefined), 10_000, 2);
    return [Date.now() - t, waitedBetween(from[0], stamp()) + waitedBetween(from[1], stamp(gateway!.pid))];
  };
  [result.openLatencyMs, result.openWaitMs] = await edge('1', 0);
  result.closedAfterOpen = await pointValue('door', 'closed');
  [result.closeLatencyMs, result.closeWaitMs] = await edge('0', 1);
  result.closedAfterClose = await pointValue('door', 'closed');

  // (3) The contact is an input: REST refuses the write, and the line is untouched.
  result.writeContact = await call('/device/writePoint?id=door&point=closed&value=0');
  result.contactFileAfterRefusedWrite = sysfs(CONTACT, 'value');
  result.contactDirection = sysfs(CONTACT, 'direction');

  const health = await call('/health/shadow');
  result.health = { status: health.data?.status, buses: health.data?.checks?.buses };
  result.warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
  result.errors = lines.filter((l) => l.level >= 50).map((l) => l.msg);

  // (4) SIGTERM: the gateway stops cleanly and every line is unexported.
  const tStop = Date.now();
  gateway.kill('SIGTERM');
  const exit = await Promise.race([exited, sleep(5000).then(() => undefined)]);
  if (!exit) throw new Error('gateway did not exit within 5 s of SIGTERM');
  result.exit = exit;
  result.stopMs = Date.now() - tStop;
  await waitFor('the fake kernel to finish unexporting', () => (exported().length === 0 ? true : undefined), 10_000).catch(() => undefined);
  result.afterStop = exported();
  result.kernelLog = readFileSync('/sys/class/.fake-kernel.log', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  result.stopLogged = lines.some((l) => l.msg === 'stopping' && l.signal === 'SIGTERM');
  return result;
}

runThrowaway(main, 80_000, () => {
  if (gateway?.pid !== undefined) {
    try {
      process.kill(gateway.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return { gatewayStdout: gatewayOut.slice(-4000), gatewayStderr: gatewayErr.slice(-4000) };
});
