/** Wires the history store to the shadow's event bus. */
import type { EventBus, ShadowEvents } from '../../core/events.js';
import type { HistoryStore } from './types.js';

/**
 * Records every value of each dataChange (numbers and text) and forgets a deleted device's history
 * (DESIGN rule 8). Returns the detach function for the gateway's stop sequence.
 */
export function attachHistory(bus: EventBus<ShadowEvents>, store: Pick<HistoryStore, 'record' | 'deleteDevice'>): () => void {
  const owner = { name: 'history' };
  bus.on(owner, 'dataChange', ({ id, values, time }) => {
    // A "not available" point has no value to record: its gap in the history is the truth.
    for (const { name, value } of values) if (value !== null) store.record(id, name, time, value);
  });
  bus.on(owner, 'deviceDeleted', ({ id }) => {
    // deleteDevice logs its own failures; the bus must never see a rejection.
    store.deleteDevice(id).catch(() => {});
  });
  return () => bus.off(owner);
}
