/** `shadowgate scan|read|write` functions against the pymodbus slave on a socat pty pair. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runModbusCommand } from '../../src/cli/modbus.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { needs, peerHook } from '../helpers/peers.js';
import { Rig, rigUnavailable, rtuBus } from './modbus-rig.js';

const missing = rigUnavailable();
const rigTest = needs(missing, 'modbus CLI rig tests');

let rig: Rig | null = null;
test.before(peerHook(missing, async () => {
  rig = new Rig('1,2,6');
  await rig.start();
}));
test.after(async () => { await rig?.stop(); });

const config = (): GatewayConfig => ({ buses: [rtuBus(rig?.master ?? '/nonexistent', { timeout: 150 })] }) as unknown as GatewayConfig;

async function run(cmd: 'scan' | 'read' | 'write', args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runModbusCommand(cmd, args, async () => config(), (l) => lines.push(l));
  return { code, lines };
}

rigTest('scan finds exactly the unit ids that answer, with data or with an exception (unit 6 has no holding register 0)', async () => {
  const r = await run('scan', ['--bus', 'rs485', '--from', '1', '--to', '7']);
  assert.is(r.code, 0, r.lines.join('\n'));
  assert.is(r.lines.at(-1), 'found 3 unit(s): 1, 2, 6');
});

rigTest('read decodes one value; write lands and reads back; reference notation works', async () => {
  let r = await run('read', ['--bus', 'rs485', '--unit', '1', '--table', 'holding', '--address', '8', '--type', 'float32', '--word-order', 'little']);
  assert.equal(r, { code: 0, lines: ['230.5'] });
  r = await run('write', ['--bus', 'rs485', '--unit', '2', '--table', 'holding', '--address', '40061', '--type', 'float32', '--value', '-3.25']);
  assert.is(r.code, 0, r.lines.join('\n'));
  r = await run('read', ['--bus', 'rs485', '--unit', '2', '--address', '60', '--type', 'float32']);
  assert.equal(r, { code: 0, lines: ['-3.25'] });
});

test('usage and value errors exit 2 with a clear message, before any I/O', async () => {
  let r = await run('read', ['--bus', 'nope', '--unit', '1', '--address', '0']);
  assert.is(r.code, 2);
  assert.match(r.lines[0]!, /unknown bus "nope"/);
  r = await run('write', ['--bus', 'rs485', '--unit', '1', '--address', '0', '--type', 'int16', '--value', '40000']);
  assert.is(r.code, 2);
  assert.match(r.lines[0]!, /does not fit int16/);
  r = await run('read', ['--bus', 'rs485', '--unit', '1', '--address', '30001']);
  assert.is(r.code, 2);
  assert.match(r.lines[0]!, /input table/);
});

rigTest('a silent unit is a clear timeout, exit 1', async () => {
  const r = await run('read', ['--bus', 'rs485', '--unit', '9', '--address', '0']);
  assert.is(r.code, 1);
  assert.match(r.lines[0]!, /timeout: unit 9/);
});

test.run();
