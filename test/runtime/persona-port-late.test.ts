/**
 * An RTU persona whose serial port is not there when the gateway starts (a USB adapter plugged in after
 * boot): the gateway starts anyway, the server reports the port closed with the reason, and the slave keeps
 * trying with backoff; once the pty pair appears (socat started after the gateway) the pymodbus master on
 * its other end is answered.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { kill, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { RtuMaster } from '../helpers/rtu-master.js';

const why = rigUnavailable();
if (why) console.log(`SKIP: persona late port test: ${why}`);

interface SlaveStats { open: boolean; error: string | null; reopened: number; answered: number }

async function serverUp(gw: Gateway): Promise<string | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  return text.split('\n').find((l) => l.startsWith('shadowgate_modbus_server_up{server="meter"}'))?.split(' ').at(-1);
}

async function serverStats(gw: Gateway): Promise<SlaveStats> {
  const res = await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/health/shadow`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as { data: { checks: { modbusServers: Record<string, SlaveStats> } } };
  return body.data.checks.modbusServers['meter']!;
}

test('a persona port missing at start is opened once it appears, and answered', async () => {
  if (why) return;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-persona-late-'));
  const consumer = path.join(dir, 'ttyA');
  const slavePort = path.join(dir, 'ttyB');
  let socat: ChildProcess | null = null;
  let gw: Gateway | null = null;
  const master = new RtuMaster();
  try {
    const raw = {
      gateway: { id: 'persona-late', data_dir: dir, log_level: 'silent' },
      http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
      buses: [{ id: 'sim', driver: 'simulator' }],
      models: { source: { points: [{ name: 'power', type: 'float', access: 'R', sim: { fn: 'constant', value: 1234.5 } }] } },
      devices: [{ id: 'grid', model: 'source', bus: 'sim', poll: '500ms' }],
      servers: [{ id: 'meter', transport: 'rtu', port: slavePort, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1,
        units: [{ unit: 2, persona: 'eastron-sdm630', bind: { total_power: 'grid.power' } }] }],
    };
    gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
    const before = await serverStats(gw);
    assert.is(before.open, false);
    assert.match(String(before.error), /No such file|ENOENT|cannot open/i);
    assert.is(await serverUp(gw), '0', 'down while the port is missing');
    await sleep(1500); // a few attempts fail meanwhile (250, 500, 1000 ms apart)
    socat = spawn('socat', [`pty,raw,echo=0,link=${consumer}`, `pty,raw,echo=0,link=${slavePort}`], { stdio: 'ignore' });
    await waitFor('socat links', () => existsSync(consumer) && existsSync(slavePort), 5000);
    // The backoff has grown to 2 s by now and is capped at 5 s: the port opens within that.
    const g = gw;
    const deadline = Date.now() + 10_000;
    let after = await serverStats(g);
    while (!after.open && Date.now() < deadline) {
      await sleep(200);
      after = await serverStats(g);
    }
    assert.ok(after.open, `the slave opened its port (${JSON.stringify(after)})`);
    assert.is(after.error, null);
    assert.is(await serverUp(g), '1');
    await master.start(consumer);
    const r = await master.run({ op: 'read', fc: 4, unit: 2, address: 0x34, count: 2 });
    assert.ok(r.ok, JSON.stringify(r));
    const b = Buffer.alloc(4);
    b.writeUInt16BE(r.regs![0]!, 0);
    b.writeUInt16BE(r.regs![1]!, 2);
    assert.is(b.readFloatBE(0), 1234.5);
  } finally {
    await master.stop();
    await gw?.stop();
    await kill(socat);
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
