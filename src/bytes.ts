/**
 * Joining byte chunks: the one place chunks read from a stream become one array.
 * @module
 */

/**
 * The chunks, in order, in one new array (`total`: their summed length, when the caller counted it).
 *
 * @example
 * ```ts
 * import { concatBytes } from "./bytes.ts";
 * concatBytes([new Uint8Array([1, 2]), new Uint8Array([3])]); // Uint8Array [1, 2, 3]
 * ```
 */
export function concatBytes(chunks: readonly Uint8Array[], total?: number): Uint8Array {
  let length = total ?? 0;
  if (total === undefined) for (const c of chunks) length += c.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
