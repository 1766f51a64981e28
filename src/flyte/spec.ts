/**
 * The `flyte.org/spec` annotation: base64 (standard alphabet, padded) of a binary-protobuf
 * `flyteidl2.app.Spec`, decoded to its proto3 JSON against the descriptors declared in
 * `proto/spec_pb.ts` by `proto/json-decoder.ts`, which follows protobuf-go and Go's protojson (what
 * Flyte's `specFromAnnotation` and its Connect codec do). `@bufbuild/protobuf` is not a fallback:
 * it decodes malformed input differently (docs/flyte-compatibility.md); it only encodes, for tests.
 * @module
 */
import { toBinary, fromJson, type JsonValue } from "@bufbuild/protobuf";
import type { Logger } from "../log.ts";
import type { Spec } from "./model.ts";
import { SpecSchema } from "./proto/spec_pb.ts";
import { createProtoJsonDecoder } from "./proto/json-decoder.ts";

/** Standard base64 alphabet value of each char code < 128; -1 for everything else ('=' included). */
const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(i)] = i;

/**
 * Decodes Go-`StdEncoding` base64 (standard alphabet, padding required; Go skips embedded `\r` and
 * `\n`); `undefined` when it is not valid. One pass with a lookup table: on the cold path (first
 * sight of an app) a regex check plus `atob` cost about as much as decoding the Spec itself.
 */
export function decodeStdBase64(value: string): Uint8Array | undefined {
  const s = value.indexOf("\r") < 0 && value.indexOf("\n") < 0 ? value : value.replace(/[\r\n]/g, "");
  const n = s.length;
  if (n % 4 !== 0) return undefined;
  // '=' only as the last one or two chars of the last group
  const pad = n === 0 || s.charCodeAt(n - 1) !== 61 ? 0 : s.charCodeAt(n - 2) === 61 ? 2 : 1;
  const out = new Uint8Array((n / 4) * 3 - pad);
  const full = n - (pad ? 4 : 0);
  let o = 0;
  for (let i = 0; i <= full; i += 4) {
    const last = i === full;
    if (last && !pad) break;
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    const c = last && pad === 2 ? 0 : sextet(s, i + 2);
    const d = last ? 0 : sextet(s, i + 3);
    if ((a | b | c | d) < 0) return undefined;
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = v >> 16;
    if (o < out.length) out[o++] = (v >> 8) & 0xff;
    if (o < out.length) out[o++] = v & 0xff;
  }
  return out;
}

/** The 6-bit value of `s[i]`; -1 if it is not in the alphabet. */
function sextet(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c < 128 ? B64[c]! : -1;
}

/** Encodes bytes as standard padded base64 (what Flyte's Deploy writes). */
export function encodeStdBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/**
 * base64 of binary protobuf Spec → proto3 JSON; `undefined` when the annotation is missing, and
 * `undefined` plus a warning via `logger` on invalid base64/protobuf (Flyte: silent). An empty
 * value is present and decodes to an empty Spec (`{}`), as Flyte's `ok`-checked lookup does.
 *
 * Unknown fields (numbers a newer Flyte may add, or known numbers with another wire type) are
 * skipped: proto3 JSON cannot carry them, and Go's `protojson` does not print them either.
 */
export function specFromAnnotation(value: string | undefined, logger?: Logger): Spec | undefined {
  return createSpecDecoder()(value, logger);
}

/** {@link specFromAnnotation} with a decoder of its own, for many annotations (see {@link createSpecDecoder}). */
export type SpecDecoder = (value: string | undefined, logger?: Logger) => Spec | undefined;

/**
 * A {@link SpecDecoder} that keeps its protobuf decoder (compiled tables, scratch buffers) between
 * calls: what a converter owns. `specFromAnnotation` makes a new one per call.
 *
 * @example
 * ```ts
 * import { createSpecDecoder } from "./spec.ts";
 * const decode = createSpecDecoder();
 * decode(""); // {} (an empty Spec)
 * decode(undefined); // undefined (no annotation)
 * ```
 */
export function createSpecDecoder(): SpecDecoder {
  const decode = createProtoJsonDecoder();
  return (value, logger) => {
    if (value === undefined) return undefined;
    const bytes = decodeStdBase64(value);
    if (!bytes) {
      logger?.warn("flyte.org/spec annotation is not valid base64; app has no spec", { length: value.length });
      return undefined;
    }
    try {
      return decode(SpecSchema, bytes) as Spec;
    } catch (err) {
      logger?.warn("flyte.org/spec annotation is not a valid flyteidl2.app.Spec; app has no spec", {
        error: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    }
  };
}

/** proto3 JSON Spec → the annotation value (base64 of binary protobuf). Throws on invalid JSON. */
export function specToAnnotation(spec: Spec): string {
  return encodeStdBase64(toBinary(SpecSchema, fromJson(SpecSchema, spec as JsonValue)));
}
