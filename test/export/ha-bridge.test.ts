/**
 * Home Assistant on its own Mosquitto, the gateway bridged to it (`mqtt.bridge`): a real Mosquitto child
 * process (free port, stopped by PID) and an HA-like client on it with HA's default prefix. Every config
 * arrives there retained, the topics the configs name exist on that broker and carry values, and HA's
 * commands come down to the gateway.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startExport } from '../../src/runtime/export.js';
import { needs } from '../helpers/peers.js';
import { collect, connectClient, endClient, makeFixture, MODEL_POINTS, removeDir, tempDir, waitFor, withTimeout } from './helpers.js';
import { haLike, type HaLike } from './ha-like.js';
import { Mosquitto, freePort, hasMosquitto } from './mosquitto.js';
import type { MqttClient } from 'mqtt';

// Two devices' points, and the gateway's own HA device (its upstream link).
const CONFIGS = 2 * MODEL_POINTS.length + 1;

/** The topics a config names for HA to read: state and every availability topic. */
function readTopics(c: Record<string, unknown>): string[] {
  const av = (c.availability as { topic: string }[] | undefined)?.map((a) => a.topic) ?? [c.availability_topic as string | undefined];
  return [c.state_topic as string, ...av].filter((t): t is string => t !== undefined);
}

const bridgeTest = needs(hasMosquitto ? null : '/usr/sbin/mosquitto is missing (apt-get install mosquitto)', 'the HA bridge test');

bridgeTest('HA on its own Mosquitto behind the bridge: every config retained there, naming topics that carry values; commands come down', async () => {
  const dir = tempDir('ha-mq');
  const up = new Mosquitto(await freePort(), dir);
  await up.start();
  const f = makeFixture({
    mqtt: {
      homeassistant: { enable: true, prefix: 'homeassistant' },
      bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 },
    },
  });
  let gw: Awaited<ReturnType<typeof startExport>> | undefined;
  let ha: HaLike | undefined;
  let late: MqttClient | undefined;
  try {
    gw = await startExport(f.ctx);
    const g = gw;
    // Retained upstream: a client that never announces itself gets them all, flagged retained.
    const br = () => g.stats().bridge as { discoveryForwarded: number; forwarded: number; queueMessages: number; inflight: number };
    // Sent and acknowledged (a subscriber that came earlier would get them live, unflagged).
    await waitFor(() => br().discoveryForwarded >= CONFIGS && br().queueMessages === 0 && br().inflight === 0 && br().forwarded >= CONFIGS, 5000, 'configs forwarded');
    late = await connectClient(`mqtt://127.0.0.1:${up.port}`);
    const retained = await collect(late, 'homeassistant/#');
    const retainedConfigs = () => new Set(retained.filter((m) => m.retain && m.topic.endsWith('/config')).map((m) => m.topic));
    await waitFor(() => retainedConfigs().size === CONFIGS, 5000, `${CONFIGS} retained configs upstream`);
    assert.ok(retained.every((m) => !m.topic.startsWith('site-a/')), 'under HA\'s own prefix, not the bridge prefix');

    // HA with its defaults on that broker.
    ha = await haLike(`mqtt://127.0.0.1:${up.port}`);
    const h = ha;
    await waitFor(() => h.configs.size === CONFIGS, 5000, `${CONFIGS} configs at HA (got ${h.configs.size})`);
    await waitFor(() => (g.stats().exporter as { homeassistant: { upstreamBirths: number } }).homeassistant.upstreamBirths === 1, 3000, 'HA birth upstream seen');
    // Every topic a config names for reading exists upstream and carries a value.
    const wanted = new Set([...h.configs.values()].flatMap(readTopics));
    for (const t of wanted) assert.ok(t.startsWith('site-a/sg/'), `upstream topic: ${t}`);
    for (const t of wanted) await h.watch(t);
    await waitFor(() => [...wanted].every((t) => h.messages.some((m) => m.topic === t && m.payload !== '')), 5000, 'a value on every state and availability topic');
    const last = (t: string): string => h.messages.filter((m) => m.topic === t).at(-1)!.payload;
    for (const [topic, c] of h.configs) {
      const av = readTopics(c).slice(1);
      if (topic.includes('gw1_dev1')) {
        const state = JSON.parse(last(c.state_topic as string)) as Record<string, unknown>;
        const point = /\[("[^"]*")\]/.exec(c.value_template as string)![1]!;
        assert.ok(state[JSON.parse(point) as string] !== undefined, `${topic}: its value is in the state`);
        assert.ok(av.every((t) => last(t) === 'online'), `${topic}: available`);
      }
    }
    // The gateway is an HA device of its own, reading the link's state there; the devices hang off it.
    const link = h.configs.get('homeassistant/binary_sensor/gw1/upstream_link/config')!;
    assert.equal([link.state_topic, last(link.state_topic as string)], ['site-a/sg/bridge/state', 'online']);
    assert.equal((link.device as { identifiers: string[] }).identifiers, ['gw1']);
    for (const [topic, c] of h.configs) if (c !== link) assert.is((c.device as { via_device: string }).via_device, 'gw1', topic);
    // HA's switch: its command goes to the upstream command topic and is written by the gateway.
    const sw = h.configs.get('homeassistant/switch/gw1_dev1/relay1/config')!;
    assert.is(sw.command_topic, 'site-a/sg/dev1/set');
    await withTimeout(h.client.publishAsync(sw.command_topic as string, sw.payload_on as string, { qos: 0 }), 3000, 'command');
    await waitFor(() => f.io.writes.length === 1, 3000, 'the write');
    assert.equal(f.io.writes[0], { id: 'dev1', values: [{ name: 'relay1', value: 1 }] });
    assert.is(ha.closes, 0);
  } finally {
    await ha?.end();
    await endClient(late);
    await gw?.stop();
    await up.stop();
    removeDir(f.dir);
    removeDir(dir);
  }
});

bridgeTest('the broker off (mqtt.enable false) and bridged to HA\'s Mosquitto: no port of its own; configs, state and commands go through the bridge', async () => {
  const dir = tempDir('ha-mq-off');
  const up = new Mosquitto(await freePort(), dir);
  await up.start();
  const f = makeFixture({
    mqtt: {
      enable: false,
      homeassistant: { enable: true, prefix: 'homeassistant' },
      bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 },
    },
  });
  let gw: Awaited<ReturnType<typeof startExport>> | undefined;
  let ha: HaLike | undefined;
  try {
    gw = await startExport(f.ctx);
    assert.equal([gw.mqttPort, gw.wsPort], [0, 0], 'no listener: HA\'s Mosquitto keeps its port');
    ha = await haLike(`mqtt://127.0.0.1:${up.port}`);
    const h = ha;
    await waitFor(() => h.configs.size === CONFIGS, 5000, `${CONFIGS} configs at HA (got ${h.configs.size})`);
    f.shadow.SetDevicePoints('dev1', { temp: 31 });
    await h.watch('site-a/sg/dev1');
    await waitFor(() => h.messages.some((m) => m.topic === 'site-a/sg/dev1' && JSON.parse(m.payload).temp === 31), 5000, 'state upstream');
    const sw = h.configs.get('homeassistant/switch/gw1_dev1/relay1/config')!;
    await withTimeout(h.client.publishAsync(sw.command_topic as string, sw.payload_on as string, { qos: 0 }), 3000, 'command');
    await waitFor(() => f.io.writes.length === 1, 3000, 'the write');
    assert.equal(f.io.writes[0], { id: 'dev1', values: [{ name: 'relay1', value: 1 }] });
  } finally {
    await ha?.end();
    await gw?.stop();
    await up.stop();
    removeDir(f.dir);
    removeDir(dir);
  }
});

test.run();
