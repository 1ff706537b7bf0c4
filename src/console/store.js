// Shared state of the console: devices as the shadow shows them, their configuration (bus, poll, TTL),
// the models, and the live link's state. Views subscribe through useStore(); events batch one render a frame.
import { useEffect, useState } from 'preact/hooks';
import { api, liveEvents } from './api.js';

export const state = {
  devices: new Map(), // id → REST device (points as an array)
  config: new Map(), // id → { bus, unit_id, poll, ttl, model }
  models: [],
  live: false,
  loaded: false,
  error: '',
  version: 0,
};

const listeners = new Set();
let scheduled = false;
export function changed() {
  state.version++;
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    for (const fn of listeners) fn(state.version);
  });
}

/** Re-renders the calling component whenever the store changes. */
export function useStore() {
  const [, set] = useState(0);
  useEffect(() => {
    listeners.add(set);
    return () => listeners.delete(set);
  }, []);
  return state;
}

export async function loadDevices() {
  try {
    const [all, configured] = await Promise.all([api('/shadow/all'), api('/devices')]);
    state.devices = new Map(all.map((d) => [d.id, d]));
    state.config = new Map(configured.map((d) => [d.id, d]));
    state.error = '';
  } catch (err) {
    state.error = err.message;
  }
  state.loaded = true;
  changed();
}

export async function loadModels() {
  if (state.models.length === 0) state.models = await api('/models');
  return state.models;
}

const pad = (n) => String(n).padStart(2, '0');
/** The REST time text (`YYYY-MM-DD HH:MM:SS`, local) for an epoch ms, like the gateway prints it. */
export const timeText = (ms) => {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};

function apply(e) {
  const d = state.devices.get(e.id);
  if (!d) {
    // A device added elsewhere (another console, the API): fetch the list again.
    if (e.type === 'dataChange') void loadDevices();
    return;
  }
  const when = timeText(e.ts);
  if (e.type === 'dataChange') {
    for (const { name, value, reason } of e.values) {
      const p = d.points.find((x) => x.name === name);
      if (p) {
        p.value = value;
        p.reason = reason;
        p.updated_at = when;
      } else d.points.push({ name, value, reason, write_value: null, updated_at: when, write_time: '0001-01-01 00:00:00' });
    }
    d.updated_at = when;
    d.online = true;
    if (d.state === 'Offline' || d.state === 'Initializing') d.state = 'Online';
  } else {
    d.online = e.type === 'online';
    if (e.state) d.state = e.state;
    else if (e.type === 'offline') d.state = 'Offline';
  }
  changed();
}

let stop = null;
export function startLive() {
  stop?.();
  stop = liveEvents(apply, (up) => {
    state.live = up;
    // After a reconnect the stream resumes from now: refetch what was missed.
    if (up) void loadDevices();
    changed();
  });
}
