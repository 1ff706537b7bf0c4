/** What an edited file undoes of the console's changes, by path (src/config/console-drift.ts). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { consoleDrift, fileOwnEdits } from '../../src/config/console-drift.js';

const base = {
  http: { port: 8081 },
  mqtt: { users: [{ username: 'a', password_hash: 'x' }] },
  models: { m: { points: [] } },
  buses: [{ id: 'sim', driver: 'simulator' }, { id: 'old', driver: 'simulator' }],
  devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '1s' }],
};

test('console additions, edits and removals the file does not carry, each once, by path', () => {
  const consoleRaw = {
    ...base,
    http: { port: 8081, body_limit: '2MB' },
    mqtt: { users: [{ username: 'a', password_hash: 'x' }, { username: 'ha', password_hash: 'y' }], homeassistant: { enable: true } },
    models: { m: { points: [] }, n: { points: [] } },
    buses: [{ id: 'sim', driver: 'simulator' }],
    devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '5s' }, { id: 'd2', model: 'n', bus: 'sim' }],
  };
  const file = { ...base, devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '2s' }, { id: 'd9', model: 'm', bus: 'sim' }] };
  assert.equal(consoleDrift(base, consoleRaw, file), [
    { path: 'buses[old]', change: 'back' },
    { path: 'devices[d1]', change: 'changed' },
    { path: 'devices[d2]', change: 'dropped' },
    { path: 'http.body_limit', change: 'dropped' },
    { path: 'models.n', change: 'dropped' },
    { path: 'mqtt.homeassistant', change: 'dropped' },
    { path: 'mqtt.users[ha]', change: 'dropped' },
  ]);
});

test('a file that carries the console changes (keys in any order) or changes only other things: nothing', () => {
  const consoleRaw = { ...base, devices: [...base.devices, { id: 'd2', model: 'm', bus: 'sim' }] };
  const file = { ...base, http: { port: 9000 }, devices: [{ poll: '1s', bus: 'sim', model: 'm', id: 'd1' }, { bus: 'sim', id: 'd2', model: 'm' }] };
  assert.equal(consoleDrift(base, consoleRaw, file), []);
  assert.equal(consoleDrift(base, base, { ...base, devices: [] }), [], 'the console changed nothing');
});

test('the file\'s own edits (what returning to the console\'s version discards): not the console\'s changes it undid', () => {
  const consoleRaw = { ...base, devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '5s' }, { id: 'd2', model: 'm', bus: 'sim' }] };
  const file = { ...base, http: { port: 9000 }, buses: [{ id: 'sim', driver: 'simulator' }], devices: [{ id: 'd1', model: 'm', bus: 'sim', poll: '2s' }, { id: 'd9', model: 'm', bus: 'sim' }] };
  assert.equal(fileOwnEdits(base, consoleRaw, file), [
    { path: 'buses[old]', change: 'removed' },
    { path: 'devices[d9]', change: 'added' },
    { path: 'http.port', change: 'changed' },
  ], 'devices[d1] is a console change the file undid, not an edit of its own');
  assert.equal(fileOwnEdits(base, consoleRaw, base), [], 'a file back at the base has no edits of its own');
});

test.run();
