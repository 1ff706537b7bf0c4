/**
 * What the shadow records while the history store is still opening. The store opens after the gateway is ready
 * (reading a fleet's series registry and newest log is a third of the start on fleet F), and the shadow changes
 * from the first poll on: the samples and device deletions of that time wait here, in arrival order, and go
 * into the store once it is open, as if it had been open all along. Plain columns, not an object a sample.
 */
import type { HistoryStore } from '../store/history.js';

type Waiting = Pick<HistoryStore, 'record' | 'deleteDevice'>;

export class EarlyHistory implements Waiting {
  private readonly devices: string[] = [];
  /** The point name, or null for a deletion of the device. */
  private readonly points: (string | null)[] = [];
  private readonly times: number[] = [];
  private readonly values: (number | string)[] = [];
  private samples = 0;
  /** Samples refused for want of room: the store's own buffer would have refused them too (it holds as many). */
  dropped = 0;

  constructor(private readonly capacity: number) {}

  /** Samples waiting. */
  get length(): number {
    return this.samples;
  }

  /** Anything waiting, samples or deletions. */
  get waiting(): boolean {
    return this.devices.length > 0;
  }

  record(deviceId: string, point: string, time: number, value: number | string): void {
    if (this.samples >= this.capacity) {
      this.dropped++;
      return;
    }
    this.samples++;
    this.push(deviceId, point, time, value);
  }

  deleteDevice(id: string): Promise<void> {
    this.push(id, null, 0, 0);
    return Promise.resolve();
  }

  /** Hands everything to the open store, in order, and forgets it. */
  drainInto(store: HistoryStore): void {
    for (let i = 0; i < this.devices.length; i++) {
      const point = this.points[i];
      if (point === null) store.deleteDevice(this.devices[i]!).catch(() => {}); // it logs its own failures
      else store.record(this.devices[i]!, point!, this.times[i]!, this.values[i]!);
    }
    this.clear();
  }

  clear(): void {
    this.devices.length = this.points.length = this.times.length = this.values.length = 0;
    this.samples = 0;
  }

  private push(device: string, point: string | null, time: number, value: number | string): void {
    this.devices.push(device);
    this.points.push(point);
    this.times.push(time);
    this.values.push(value);
  }
}
