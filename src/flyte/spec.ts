/**
 * The `flyte.org/spec` annotation: base64 (standard alphabet, padded) of a binary-protobuf
 * `flyteidl2.app.Spec`, decoded to its proto3 JSON with `@bufbuild/protobuf` v2 against the
 * descriptors declared in `proto/spec_pb.ts`.
 * @module
 */
import { fromBinary, toBinary, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import type { Logger } from "../log.ts";
import type { Spec } from "./model.ts";
import { SpecSchema } from "./proto/spec_pb.ts";

/** Go `base64.StdEncoding`: standard alphabet, padding required; Go skips embedded `\r` and `\n`. */
const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes Go-`StdEncoding` base64; `undefined` when it is not valid. */
export function decodeStdBase64(value: string): Uint8Array | undefined {
  const s = value.replace(/[\r\n]/g, "");
  if (!STD_BASE64.test(s)) return undefined;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
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
 * Unknown fields (numbers a newer Flyte may add) are accepted by the decoder and kept on the
 * decoded message, but proto3 JSON cannot carry them, so they do not appear in the result — Go's
 * `protojson` drops unknown fields the same way.
 */
export function specFromAnnotation(value: string | undefined, logger?: Logger): Spec | undefined {
  if (value === undefined) return undefined;
  const bytes = decodeStdBase64(value);
  if (!bytes) {
    logger?.warn("flyte.org/spec annotation is not valid base64; app has no spec", { length: value.length });
    return undefined;
  }
  try {
    const msg = fromBinary(SpecSchema, bytes);
    return toJson(SpecSchema, msg) as Spec;
  } catch (err) {
    logger?.warn("flyte.org/spec annotation is not a valid flyteidl2.app.Spec; app has no spec", {
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  }
}

/** proto3 JSON Spec → the annotation value (base64 of binary protobuf). Throws on invalid JSON. */
export function specToAnnotation(spec: Spec): string {
  return encodeStdBase64(toBinary(SpecSchema, fromJson(SpecSchema, spec as JsonValue)));
}
