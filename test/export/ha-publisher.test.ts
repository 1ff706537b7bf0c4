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

function fixture(points: Record<string, PointInfo[]>) {
  const sent: [string, string][] = [];
  const ctx = {
    gatewayId: 'gw',
    mqtt: { homeassistant: { enable: true, prefix: 'ha' } },
    devicePoints: (id: string) => points[id] ?? [],
  } as unknown as ExportContext;
  const pub = new HaPublisher(ctx, new Topics('sg'), { local: (topic, payload) => sent.push([topic, payload]) });
  const removed = () => sent.filter(([, p]) => p === '').map(([t]) => t).sort();
  return { pub, sent, removed };
}

const sensor = (name: string): PointInfo => ({ name, type: 'float', access: 'R', unit: 'W' });

test('a point dropped or turned writable: its old config removed, nothing else', () => {
  const points = { d1: [sensor('a'), sensor('b'), sensor('c')], d2: [sensor('a'), sensor('b'), sensor('c')] };
  const f = fixture(points);
  f.pub.publish({ id: 'd1', modelName: 'm' });
  f.pub.publish({ id: 'd2', modelName: 'm' });
  assert.equal(f.removed(), []);
  assert.is(f.sent.length, 6);
  points.d1 = [sensor('a'), { ...sensor('c'), access: 'RW' }];
  f.sent.length = 0;
  f.pub.publish({ id: 'd1', modelName: 'm' });
  assert.equal(f.removed(), ['ha/sensor/gw_d1/b/config', 'ha/sensor/gw_d1/c/config']);
  assert.ok(f.sent.some(([t, p]) => t === 'ha/number/gw_d1/c/config' && p !== ''));
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
});

test('two names with one object id are one topic, removed once', () => {
  const f = fixture({ d: [sensor('x.y'), sensor('x_y')] });
  f.pub.publish({ id: 'd', modelName: 'm' });
  f.sent.length = 0;
  f.pub.remove('d');
  assert.equal(f.removed(), ['ha/sensor/gw_d/x_y/config']);
});

test.run();
