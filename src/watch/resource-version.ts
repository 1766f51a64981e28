/**
 * resourceVersion ordering. Since Kubernetes 1.35, RVs of built-in and CRD
 * types are conformance-required to be decimal integers of unbounded size:
 * compare by length, then lexicographically. Non-numeric RVs (aggregated
 * APIs) are not comparable.
 * @module
 */

const DIGITS = /^[0-9]+$/;

/**
 * Compares two resourceVersions: negative if a < b, 0 if equal, positive if
 * a > b, or `undefined` when either is not a decimal integer.
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!DIGITS.test(a) || !DIGITS.test(b)) return a === b ? 0 : undefined;
  const x = a.replace(/^0+(?=\d)/, "");
  const y = b.replace(/^0+(?=\d)/, "");
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}
