/**
 * Entries by due time, earliest first (a binary min-heap): the simulator's ticker takes what is due without
 * scanning a fleet of thousands of polls on every turn. Entries due at the same time come out in the order
 * they were pushed, so a fleet's staggered first polls keep the devices' order.
 */
export interface DueEntry {
  due: number;
}

interface Slot<T> {
  entry: T;
  due: number;
  seq: number;
}

const before = <T>(a: Slot<T>, b: Slot<T>): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq);

export class DueQueue<T extends DueEntry> {
  private readonly heap: Slot<T>[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  /** The earliest entry, left in the queue. */
  peek(): T | undefined {
    return this.heap[0]?.entry;
  }

  /** Queued at its `due` as it is now (changing `due` later does not move it: pop, change, push). */
  push(entry: T): void {
    const heap = this.heap;
    const slot = { entry, due: entry.due, seq: this.seq++ };
    let i = heap.length;
    heap.push(slot);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(slot, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = slot;
  }

  pop(): T | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (!top || !last || heap.length === 0) return top?.entry;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top.entry;
  }

  clear(): void {
    this.heap.length = 0;
  }
}
