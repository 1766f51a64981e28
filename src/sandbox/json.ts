/**
 * JSON helpers: canonical deep copies, deep equality and RFC 7386 merge patch.
 * @module
 */

/** A JSON object. */
export type JsonObject = { [k: string]: unknown };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A deep copy with object keys sorted and `undefined` members dropped. kube-apiserver stores
 * custom resources as unstructured maps and Go encodes map keys in sorted order, so this is
 * also what a real server sends back for a Knative object.
 */
export function canonical<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : canonical(v))) as T;
  if (isObject(value)) {
    const out: JsonObject = {};
    for (const k of Object.keys(value).sort()) {
      const v = value[k];
      if (v !== undefined) out[k] = canonical(v);
    }
    return out as T;
  }
  return value;
}

/** Structural equality of JSON values (key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** Applies a JSON merge patch (RFC 7386) to `target` without mutating it. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
