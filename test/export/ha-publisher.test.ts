/**
 * What the discovery publisher remembers of the configs it sent (one layout shared by devices with the same points):
 * a point gone or changed component has its old config removed, the others are not, and deleting one device of a
 * shared layout removes only its own topics. The sender is a recording function: the broker side is covered by
 * homeassistant.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ExportContext, PointInfo } from '../../src/export/context.js';
import { HaPublisher } from '../../src/export/ha-publisher.js';
import { Topics } from '../../src/export/topics.js';

function fixture(points: Record<string, PointInfo[]>, backlog?: () => number) {
  const sent: [string, string][] = [];
  const ctx = {
    gatewayId: 'gw',
    mqtt: { homeassistant: { enable: true, prefix: 'ha' } },
    devicePoints: (id: string) => points[id] ?? [],
    shadow: {
      GetDeviceIds: () => Object.keys(points).sort(),
      GetDeviceRecord: (id: string) => (points[id] ? { id, modelName: 'm' } : null),
    },
  } as unknown as ExportContext;
  const pub = new HaPublisher(ctx, new Topics('sg'), { local: (topic, payload) => sent.push([topic, payload]), ...(backlog ? { backlog } : {}) });
  const removed = () => sent.filter(([, p]) => p === '').map(([t]) => t).sort();
  return { pub, sent, removed };
}

const sensor = (name: string): PointInfo => ({ name, type: 'float', access: 'R', unit: 'W' });

test('a point dropped or turned writable: its old config removed, nothing else', () => {
  const points = { d1: [sensor('a'), sensor('b'), sensor('c')], d2: [sensor('a'), sensor('b'), sensor('c')] };
  const f = fixture(points);
  f.pub.publish({ id: 'd1', modelName: 'm' });
  f.pub.publish({ id: 'd1', modelName: 'm' });
  assert.is(f.pub.layoutCount, 1, 'sent again: the same layout');
  f.sent.length = 0;
  f.pub.publish({ id: 'd2', modelName: 'm' });
  assert.is(f.pub.layoutCount, 1, 'shared by the two devices');
  assert.equal(f.removed(), []);
  assert.is(f.sent.length, 3);
  points.d1 = [sensor('a'), { ...sensor('c'), access: 'RW' }];
  f.sent.length = 0;
  f.pub.publish({ id: 'd1', modelName: 'm' });
  assert.equal(f.removed(), ['ha/sensor/gw_d1/b/config', 'ha/sensor/gw_d1/c/config']);
  assert.ok(f.sent.some(([t, p]) => t === 'ha/number/gw_d1/c/config' && p !== ''));
  assert.is(f.pub.layoutCount, 2);
  f.sent.length = 0;
  f.pub.publish({ id: 'd1', modelName: 'm' });
  assert.equal(f.removed(), [], 'sent again unchanged: nothing removed');
  f.sent.length = 0;
  f.pub.remove('d2');
  assert.equal(f.removed(), ['ha/sensor/gw_d2/a/config', 'ha/sensor/gw_d2/b/config', 'ha/sensor/gw_d2/c/config']);
  f.sent.length = 0;
  f.pub.remove('d2');
  f.pub.remove('d1');
  assert.equal(f.removed(), ['ha/number/gw_d1/c/config', 'ha/sensor/gw_d1/a/config'], 'd2 forgotten; d1 as last sent');
  assert.is(f.pub.layoutCount, 0);
});

test('two names with one object id are one topic, removed once', () => {
  const f = fixture({ d: [sensor('x.y'), sensor('x_y')] });
  f.pub.publish({ id: 'd', modelName: 'm' });
  f.sent.length = 0;
  f.pub.remove('d');
  assert.equal(f.removed(), ['ha/sensor/gw_d/x_y/config']);
});

test('a republish waits while the broker has more than two slices of messages queued', async () => {
  const points: Record<string, PointInfo[]> = {};
  for (let i = 0; i < 25; i++) points[`d${String(i).padStart(2, '0')}`] = [sensor('a')];
  let queued = 5000;
  const f = fixture(points, () => queued);
  f.pub.republish();
  await new Promise((r) => setTimeout(r, 100));
  assert.is(f.sent.length, 0, 'nothing while 5,000 wait');
  queued = 0;
  const t0 = Date.now();
  while (f.sent.length < 25 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
  assert.is(f.sent.length, 25, 'every device once the queue is short');
  f.pub.stop();
});

test.run();
