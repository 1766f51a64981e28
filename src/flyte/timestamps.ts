/**
 * Kubernetes timestamps (`metav1.Time`, RFC 3339 as Go's `time.Parse` reads it) → protobuf
 * `Timestamp` JSON as Go's `protojson` prints it, for the App's times.
 * @module
 */

/** A point in time as protobuf holds it. */
export interface Instant {
  seconds: number;
  nanos: number;
  /** Its canonical text, when the input already was (see {@link parseCanonical}). */
  text?: string;
}

/**
 * What Go's `time.Parse(time.RFC3339, …)` accepts (as `metav1.Time` uses it; its lenient general
 * path, not only the strict fast path): a 1- or 2-digit hour, a fraction after `.` or `,` (digits
 * past the 9th ignored), `Z` or a `±hh:mm` offset of up to 24 hours and 60 minutes.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;
const MIN_SECONDS = -62135596800; // 0001-01-01T00:00:00Z
const MAX_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

/** Days in month `mo` (1–12) of year `y` (proleptic Gregorian). */
function daysIn(y: number, mo: number): number {
  if (mo === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
}

/** Two ASCII digits at `i`, or -1. */
function digits2(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * Fast path for the form Kubernetes writes (`YYYY-MM-DDTHH:MM:SSZ`, years 1970–9999): no regex,
 * no Date. Its canonical protobuf text is the input itself. `null`: not this form (use the
 * general parser); `undefined`: this form but not a valid time.
 */
function parseCanonical(value: string): Instant | undefined | null {
  if (
    value.length !== 20 || value.charCodeAt(19) !== 90 /* Z */ || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 ||
    value.charCodeAt(10) !== 84 /* T */ || value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58
  ) return null;
  const hi = digits2(value, 0);
  const lo = digits2(value, 2);
  const mo = digits2(value, 5);
  const d = digits2(value, 8);
  const h = digits2(value, 11);
  const mi = digits2(value, 14);
  const sec = digits2(value, 17);
  if (hi < 0 || lo < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0) return null;
  const y = hi * 100 + lo;
  if (y < 1970) return null; // Date.UTC maps years 0–99 to 19xx: leave old years to the general path
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59) return undefined;
  return { seconds: Date.UTC(y, mo - 1, d, h, mi, sec) / 1000, nanos: 0, text: value };
}

export function parseInstant(value: unknown): Instant | undefined {
  if (typeof value !== "string") return undefined;
  const fast = parseCanonical(value);
  if (fast !== null) return fast;
  const m = RFC3339.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  let seconds = date.getTime() / 1000;
  if (m[8] !== undefined) {
    const sign = m[8] === "-" ? -1 : 1;
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 24 || om > 60) return undefined;
    seconds -= sign * (oh * 3600 + om * 60);
  }
  const nanos = m[7] ? Number(m[7].slice(0, 9).padEnd(9, "0")) : 0;
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) return undefined;
  return { seconds, nanos };
}

export function isZero(t: Instant): boolean {
  return t.seconds === MIN_SECONDS && t.nanos === 0;
}

export function formatInstant(t: Instant): string {
  if (t.text !== undefined) return t.text;
  const base = new Date(t.seconds * 1000).toISOString().slice(0, 19); // years 0001..9999 print as 4 digits
  let frac = "";
  if (t.nanos !== 0) {
    const digits = String(t.nanos).padStart(9, "0");
    frac = t.nanos % 1_000_000 === 0 ? `.${digits.slice(0, 3)}` : t.nanos % 1000 === 0 ? `.${digits.slice(0, 6)}` : `.${digits}`;
  }
  return `${base}${frac}Z`;
}

/**
 * A Kubernetes RFC 3339 time as Go's protojson prints a `google.protobuf.Timestamp`: UTC,
 * trailing `Z`, 0/3/6/9 fractional digits. `undefined` for a missing, invalid or zero time.
 */
export function toProtoTimestamp(value: unknown): string | undefined {
  const t = parseInstant(value);
  return t && !isZero(t) ? formatInstant(t) : undefined;
}

export function later(a: Instant | undefined, b: Instant | undefined): Instant | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.seconds > a.seconds || (b.seconds === a.seconds && b.nanos > a.nanos) ? b : a;
}
