/** A typed array of `size` elements of the same kind, holding `a`'s contents first (column stores that grow by doubling). */
export function grown<T extends Uint8Array | Uint32Array | Float64Array>(a: T, size: number): T {
  const b = new (a.constructor as new (n: number) => T)(size);
  b.set(a as never);
  return b;
}
