/**
 * Differential tests: `fromBinaryToJson` (src/flyte/proto/json-decoder.ts) must give exactly what
 * Flyte's Go code gets from protobuf-go's `proto.Unmarshal` + `protojson.Marshal` for
 * `flyteidl2.app.Spec` — same values, same key order — and must fail whenever Go fails. Go's answers
 * for every input here are in tests/fixtures/protogo (see tests/helpers/protogo.ts); the last test
 * re-derives them from protobuf-go itself where Go is installed (CI).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { type DescField, type DescMessage, fromBinary, fromJson, type JsonValue, ScalarType, toBinary, toJson } from "@bufbuild/protobuf";
import { SpecSchema } from "../src/flyte/proto/spec_pb.ts";
import { createProtoJsonDecoder } from "../src/flyte/proto/json-decoder.ts";
import { decodeStdBase64, encodeStdBase64, specFromAnnotation } from "../src/flyte/spec.ts";
import { runtimeName } from "../src/runtime.ts";
import { hex, loadAnswers, oracleSkip, runOracle } from "./helpers/protogo.ts";

/** mulberry32: small seeded PRNG so failures reproduce. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)]!, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof rng>;

type Outcome = { ok: true; json: string } | { ok: false; error: string };
function run(f: () => unknown): Outcome {
  try {
    return { ok: true, json: JSON.stringify(f()) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
const GO = loadAnswers();
/** `PROTOGO_COLLECT=file`: record every input (for `npm run oracle:protogo`) instead of checking it. */
const COLLECT = typeof process !== "undefined" ? process.env.PROTOGO_COLLECT : undefined;

/** Go's outcome for `b` (JSON text normalised through JS objects, like ours). */
function reference(b: Uint8Array): Outcome {
  const answer = GO.get(hex(b));
  if (!answer) assert.fail(`no protobuf-go answer for ${hex(b)}: run \`npm run oracle:protogo\` (needs Go) and commit tests/fixtures/protogo`);
  return answer.ok ? { ok: true, json: JSON.stringify(JSON.parse(answer.json!)) } : { ok: false, error: `${answer.stage}: ${answer.error}` };
}
const fromBinaryToJson = createProtoJsonDecoder();
const fast = (b: Uint8Array) => run(() => fromBinaryToJson(SpecSchema, b));

/** Both fail, or both give the same JSON text; returns Go's outcome. */
function same(b: Uint8Array, label = ""): Outcome {
  if (COLLECT) {
    appendFileSync(COLLECT, "x" + hex(b) + "\n");
    return fast(b);
  }
  const ref = reference(b);
  const got = fast(b);
  if (ref.ok !== got.ok || (ref.ok && got.ok && ref.json !== got.json)) {
    assert.fail(`${label} bytes ${hex(b)}\n protobuf-go: ${JSON.stringify(ref)}\n appwatch:    ${JSON.stringify(got)}`);
  }
  return ref;
}
const ok = (b: Uint8Array, label = "") => {
  const r = same(b, label);
  if (COLLECT) return r.ok ? JSON.parse(r.json) as Record<string, unknown> : {};
  assert.ok(r.ok, `${label}: protobuf-go failed: ${!r.ok && r.error}`);
  return JSON.parse(r.json) as Record<string, unknown>;
};
const fails = (b: Uint8Array, label = "") => {
  const r = same(b, label);
  if (!COLLECT) assert.equal(r.ok, false, `${label} should fail`);
};

// ---- random Spec messages, generated from the descriptors so every field of the closure is hit ----

const WORDS = ["", "a", "app", "1", "10", "2", "__proto__", "constructor", "é", "日本語", "😀", "\uFEFFbom", "x".repeat(70), "long ümlaut ".repeat(8), "k-1"];
function str(r: Rng): string {
  if (r.chance(0.7)) return r.pick(WORDS);
  let s = "";
  for (let i = r.int(12); i > 0; i--) s += String.fromCharCode(r.chance(0.9) ? 32 + r.int(95) : 0x80 + r.int(0x2000));
  return s;
}
function timestamp(r: Rng): string {
  const ms = Date.parse("0001-01-01T00:00:00Z") + Math.floor(r.next() * (Date.parse("9999-12-31T23:59:59Z") - Date.parse("0001-01-01T00:00:00Z")));
  const base = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
  const frac = r.pick(["", ".000", ".123", ".100", ".120000", ".123456", ".000001", ".123456789", ".000000001", ".5"]);
  return `${base}${frac}Z`;
}
function duration(r: Rng): string {
  const sec = r.pick([0, 1, 59, 3600, 315576000000, r.int(1e6)]);
  const frac = r.pick(["", ".5", ".001", ".000001", ".123456789", ".100000", ".010"]);
  const neg = r.chance(0.2) && (sec > 0 || frac !== "") ? "-" : "";
  return `${neg}${sec}${frac}s`;
}
function jsonValue(r: Rng, depth: number): JsonValue {
  switch (r.int(depth > 4 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return r.pick([0, 1, -1, 1.5, -0.25, 1e21, 2 ** 53 + 2, 5e-324, r.next() * 1000]);
    case 2:
      return str(r);
    case 3:
      return r.chance(0.5);
    case 4:
      return Array.from({ length: r.int(4) }, () => jsonValue(r, depth + 1));
    default:
      return jsonObject(r, depth + 1);
  }
}
function jsonObject(r: Rng, depth: number): { [k: string]: JsonValue } {
  const o: { [k: string]: JsonValue } = {};
  for (let i = r.int(5); i > 0; i--) Object.defineProperty(o, str(r), { value: jsonValue(r, depth), enumerable: true, writable: true, configurable: true });
  return o;
}
function scalar(r: Rng, t: ScalarType): JsonValue {
  switch (t) {
    case ScalarType.STRING:
      return str(r);
    case ScalarType.BOOL:
      return r.chance(0.5);
    case ScalarType.UINT32:
      return r.pick([0, 1, 127, 128, 300, 2 ** 31, 2 ** 32 - 1, r.int(70000)]);
    case ScalarType.INT32:
      return r.pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31), r.int(1000)]);
    case ScalarType.INT64:
      return r.pick(["0", "1", "-1", "9223372036854775807", "-9223372036854775808", String(r.int(1e9))]);
    case ScalarType.UINT64:
      return r.pick(["0", "1", "18446744073709551615", String(r.int(1e9))]);
    default:
      throw new Error(`generator: scalar ${t}`);
  }
}
function enumValue(r: Rng, f: DescField): JsonValue {
  const e = f.enum!;
  return r.chance(0.8) ? r.pick(e.values).name : r.pick([e.values.length, 42, 1000, -1]);
}
function fieldValue(r: Rng, f: DescField, depth: number): JsonValue {
  const single = (): JsonValue =>
    f.message ? messageJson(r, f.message, depth + 1) : f.enum ? enumValue(r, f) : scalar(r, f.scalar!);
  switch (f.fieldKind) {
    case "list":
      return Array.from({ length: r.int(4) }, single);
    case "map": {
      const o: { [k: string]: JsonValue } = {};
      for (let i = r.int(4); i > 0; i--) Object.defineProperty(o, str(r), { value: single(), enumerable: true, writable: true, configurable: true });
      return o;
    }
    default:
      return single();
  }
}
function messageJson(r: Rng, desc: DescMessage, depth: number): JsonValue {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return timestamp(r);
    case "google.protobuf.Duration":
      return duration(r);
    case "google.protobuf.Struct":
      return jsonObject(r, 0);
  }
  const o: { [k: string]: JsonValue } = {};
  if (depth > 9) return o;
  for (const f of desc.fields) {
    if (f.oneof) continue;
    if (r.chance(0.55)) o[f.jsonName] = fieldValue(r, f, depth);
  }
  for (const oneof of desc.oneofs) {
    if (r.chance(0.75)) {
      const f = r.pick(oneof.fields);
      o[f.jsonName] = fieldValue(r, f, depth);
    }
  }
  return o;
}
function randomSpec(r: Rng): Uint8Array {
  return toBinary(SpecSchema, fromJson(SpecSchema, messageJson(r, SpecSchema, 0)));
}

// ---- a small wire writer, for what toBinary never produces ----

function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
type Part = number[] | Uint8Array;
const cat = (...parts: Part[]): number[] => parts.flatMap((p) => Array.from(p));
const key = (no: number, wt: number) => varint((no << 3) | wt);
const V = (no: number, n: number | bigint) => cat(key(no, 0), varint(n));
const L = (no: number, ...body: Part[]) => {
  const b = cat(...body);
  return cat(key(no, 2), varint(b.length), b);
};
const S = (no: number, s: string) => L(no, new TextEncoder().encode(s));
const F64 = (no: number, x: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x, true);
  return cat(key(no, 1), b);
};
const bytes = (...parts: Part[]) => new Uint8Array(cat(...parts));
/** Unknown fields of every wire type, numbered `no`: varint, 64-bit, length, group (nested), 32-bit. */
const UNKNOWN = (no: number) =>
  cat(V(no, 300), key(no, 1), [1, 2, 3, 4, 5, 6, 7, 8], L(no, [1, 2, 3]), key(no, 3), V(1, 1), key(7, 3), key(7, 4), key(no, 4), key(no, 5), [9, 9, 9, 9]);
// Struct/Value helpers (Struct.fields = 1: map<string, Value>; Value: 1 null, 2 number, 3 string, 4 bool, 5 struct, 6 list).
const entry = (k: string, value: Part) => L(1, S(1, k), L(2, value));
const POD = (...structBody: Part[]) => L(2, L(2, ...structBody)); // Spec.pod.pod_spec

describe("fromBinaryToJson vs protobuf-go (flyteidl2.app.Spec)", () => {
  test("3,000 seeded random Specs covering the whole descriptor closure", () => {
    const r = rng(20261130);
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const b = randomSpec(r);
      const json = ok(b, `random #${i}`);
      for (const k of Object.keys(json)) seen.add(k);
    }
    // every top-level Spec field was produced at least once
    assert.deepEqual([...seen].sort(), SpecSchema.fields.map((f) => f.jsonName).sort());
  });

  test("empty input and empty message fields", () => {
    assert.deepEqual(ok(new Uint8Array(0)), {});
    assert.deepEqual(ok(bytes(L(3), L(12), L(13))), { autoscaling: {}, creator: {}, inputs: {} });
    assert.deepEqual(ok(bytes(L(2, L(2)))), { pod: { podSpec: {} } });
  });

  test("repeated scalars: unpacked, packed, mixed, empty packed run", () => {
    // Spec.creator(12).user(1).roles(3) Role.actions = 5 (repeated enum)
    const role = (...b: Part[]) => bytes(L(12, L(1, L(3, ...b))));
    const j = ok(role(V(5, 1), V(5, 2), L(5, [3, 4, 99]), V(5, 0), L(5)), "mixed");
    assert.deepEqual((j as { creator: { user: { roles: { actions: unknown[] }[] } } }).creator.user.roles[0]!.actions, ["ACTION_CREATE", "ACTION_READ", "ACTION_UPDATE", "ACTION_DELETE", 99, "ACTION_NONE"]);
    const e = ok(role(L(5)), "empty packed");
    assert.deepEqual((e as { creator: { user: { roles: unknown[] } } }).creator.user.roles, [{}]);
    // Container.ports are messages; Container.command strings are never packed
    ok(bytes(L(1, S(2, "a"), S(2, ""), S(3, "b"), L(7, V(1, 80)), L(7))), "strings");
  });

  test("duplicated singular fields: last wins, explicit defaults omitted, oneof members printed at default", () => {
    assert.deepEqual(ok(bytes(S(6, "a"), S(6, "b"))), { clusterPool: "b" });
    assert.deepEqual(ok(bytes(S(6, "a"), S(6, ""), V(5, 2), V(5, 0))), {});
    assert.deepEqual(ok(bytes(V(5, 2), V(5, 7))), { desiredState: 7 });
    assert.deepEqual(ok(bytes(V(5, -1))), { desiredState: -1 });
    assert.deepEqual(ok(bytes(L(3, L(1, V(1, 0), V(2, 0))))), { autoscaling: { replicas: {} } });
    // GPUAccelerator.unpartitioned (oneof, bool false) and Input.string_value (oneof, "")
    assert.deepEqual(ok(bytes(L(9, L(1, V(2, 0))))), { extendedResources: { gpuAccelerator: { unpartitioned: false } } });
    assert.deepEqual(ok(bytes(L(13, L(1, S(2, ""))))), { inputs: { items: [{ stringValue: "" }] } });
    // bool written as a multi-byte varint; uint32 as a 10-byte varint
    ok(bytes(L(4, cat(key(1, 0), [0x80, 0x80, 0x01]))), "bool varint");
    ok(bytes(L(3, L(1, V(1, -2)))), "uint32 from 10-byte varint");
  });

  test("duplicated message fields merge; oneof switches replace", () => {
    const j = ok(bytes(L(1, S(1, "img"), S(2, "a")), L(1, S(2, "b"), L(4, L(1, V(1, 1)))), L(1, L(4, L(1, S(2, "1"))))));
    assert.deepEqual(j, {
      container: { image: "img", command: ["a", "b"], resources: { requests: [{ name: "CPU" }, { value: "1" }] } },
    });
    // container → pod → container: only the last member is kept, and not merged with the first
    assert.deepEqual(ok(bytes(L(1, S(1, "x")), L(2, S(4, "p")), L(1, S(2, "c")))), { container: { command: ["c"] } });
    // the same member twice merges
    assert.deepEqual(ok(bytes(L(2, S(4, "p")), L(2, L(1, L(1, S(1, "a"), S(2, "b")))))), {
      pod: { metadata: { labels: { a: "b" } }, primaryContainerName: "p" },
    });
    // LabelValue oneof: message member then scalar member
    ok(bytes(L(13, L(1, L(4, L(3, L(1, S(1, "k"), L(2, L(3, L(5, S(5, "pk"))), S(1, "s")))))))), "labelvalue");
  });

  test("unknown fields of every wire type are skipped, at every level and in map entries", () => {
    const j = ok(bytes(UNKNOWN(99), S(6, "pool"), UNKNOWN(16), L(2, UNKNOWN(5), L(1, UNKNOWN(3), L(1, UNKNOWN(7), S(1, "k"), UNKNOWN(3), S(2, "v"))))));
    assert.deepEqual(j, { clusterPool: "pool", pod: { metadata: { labels: { k: "v" } } } });
    ok(bytes(key(100, 3), key(100, 3), key(100, 4), key(100, 4)), "nested same-number groups");
    fails(bytes(key(100, 3), key(101, 4)), "mismatched end group");
    fails(bytes(key(100, 4)), "stray end group");
    fails(bytes(key(100, 3)), "unterminated group");
    const groups = (n: number) => {
      const deep: number[] = [];
      for (let i = 0; i < n; i++) deep.push(...key(100, 3));
      for (let i = 0; i < n; i++) deep.push(...key(100, 4));
      return new Uint8Array(deep);
    };
    ok(groups(10_001), "groups nested 10,001 deep (protobuf-es stops at 100)");
    fails(groups(10_002), "groups nested past Go's recursion limit");
  });

  test("maps: missing key/value, duplicate keys, key order, message values", () => {
    const labels = (...entries: Part[]) => bytes(L(2, L(1, ...entries.map((e) => L(1, e)))));
    assert.deepEqual(ok(labels(S(2, "v"), S(1, "k"), [])), { pod: { metadata: { labels: { "": "", k: "" } } } });
    const dup = ok(labels(cat(S(1, "b"), S(2, "1")), cat(S(1, "a"), S(2, "2")), cat(S(1, "b"), S(2, "3")), cat(S(1, "10"), S(2, "x")), cat(S(1, "2"), S(2, "y")), cat(S(2, "z"), S(1, "__proto__"))));
    // protojson sorts map keys (Go string order); JS objects put integer-like keys first anyway
    assert.equal(JSON.stringify(dup), JSON.stringify({ pod: { metadata: { labels: JSON.parse('{"2":"y","10":"x","__proto__":"z","a":"2","b":"3"}') } } }));
    const sorted = ok(labels(cat(S(1, "😀"), S(2, "1")), cat(S(1, "\uffee"), S(2, "2")), cat(S(1, "é"), S(2, "3")), cat(S(1, "Z"), S(2, "4"))));
    assert.deepEqual(Object.keys((sorted as { pod: { metadata: { labels: object } } }).pod.metadata.labels), ["Z", "é", "\uffee", "😀"]);
    ok(labels(cat(S(1, "a"), S(1, "b"), S(2, "1"), S(2, "2"))), "repeated key and value inside one entry");
    // Struct.fields: map<string, Value>, the message-valued map of the closure
    fails(bytes(POD(L(1, S(1, "k")))), "message value missing: an empty Value, which protojson cannot print");
    assert.deepEqual(ok(bytes(POD(L(1, S(1, "k"), L(2, S(3, "a")), L(2, V(4, 1)))))), { pod: { podSpec: { k: true } } });
    ok(bytes(POD(L(1, S(1, "k"), L(2, S(3, "a"))), L(1, S(1, "k"), L(2, L(5, entry("v", V(1, 0))))))), "key twice: replaced");
    fails(bytes(POD(entry("k", []), entry("l", L(6, L(1), L(1, L(5, entry("m", []))))))), "Values with no kind (protobuf-es prints null)");
    // wrong wire types inside an entry: skipped like unknown fields
    assert.deepEqual(ok(labels(cat(V(1, 5), S(1, "k"), V(2, 1), S(2, "v")))), { pod: { metadata: { labels: { k: "v" } } } });
  });

  test("well-known types: Timestamp, Duration, Struct/Value/ListValue", () => {
    // (no Timestamp is reachable from Spec since Input.artifact_id became ArtifactVersionId)
    // AutoscalingConfig.scaledown_period
    const dur = (...b: Part[]) => bytes(L(3, L(2, ...b)));
    for (const [s, n] of [[0, 0], [1, 0], [1, 500000000], [-1, -500000000], [0, -1000], [0, 1], [315576000000, 0], [-315576000000, 0], [5, 123456]]) ok(dur(V(1, s!), V(2, n!)), `dur ${s} ${n}`);
    fails(dur(V(1, 315576000001)), "duration too long");
    fails(dur(V(1, 1), V(2, -1)), "duration sign mismatch");
    fails(dur(V(1, -1), V(2, 1)), "duration sign mismatch 2");
    fails(dur(V(2, 1_000_000_000)), "duration nanos out of range");
    // Value kinds, NaN/Infinity, nested lists, last kind wins
    ok(bytes(POD(entry("n", V(1, 0)), entry("d", F64(2, -0)), entry("s", S(3, "x")), entry("b", V(4, 1)), entry("o", L(5, entry("i", F64(2, 2)))), entry("l", L(6, L(1, F64(2, 1)), L(1, V(1, 0)), L(1, L(6)))))), "value kinds");
    ok(bytes(POD(entry("k", cat(S(3, "x"), F64(2, 3), V(4, 0))))), "last kind wins");
    for (const x of [NaN, Infinity, -Infinity]) fails(bytes(POD(entry("k", F64(2, x)))), `number_value ${x}`);
    fails(bytes(POD(entry("k", L(6, L(1))))), "list with an empty Value (protojson cannot print it)");
    // pod_spec twice: the Struct maps merge, a key repeated is replaced
    ok(bytes(POD(entry("a", S(3, "1")), entry("b", V(1, 0))), POD(entry("a", F64(2, 2)), entry("c", V(4, 1)))), "struct merge");
    // Struct nested 40 and 120 deep is fine (Go's limit is 10,000 messages)
    const nest = (n: number): number[] => (n === 0 ? [] : entry("k", L(5, nest(n - 1))));
    ok(bytes(POD(nest(40))), "deep struct");
    ok(bytes(POD(nest(120))), "deeper struct");
  });

  test("strings: UTF-8 validation, BOM, long and non-ASCII", () => {
    ok(bytes(S(6, "\uFEFFbom")), "leading BOM kept");
    ok(bytes(S(6, "ü".repeat(40))), "non-ASCII");
    ok(bytes(S(6, "a".repeat(200))), "long ASCII");
    fails(bytes(L(6, [0x61, 0xff, 0x62])), "invalid UTF-8");
    fails(bytes(L(6, [0xed, 0xa0, 0x80])), "surrogate in UTF-8");
    fails(bytes(L(2, L(1, L(1, L(1, [0xc3]))))), "invalid UTF-8 map key");
  });

  test("malformed input and protobuf-go's wire rules", () => {
    const cases: [string, number[]][] = [
      ["field number 0", [0x00, 0x01]],
      ["wire type 6", [0x0e]],
      ["wire type 7", [0x0f]],
      ["truncated tag", [0x80]],
      ["truncated varint", [0x28, 0x80]],
      ["length past end", [0x32, 0x05, 0x61]],
      ["message length past end", [0x0a, 0x05, 0x0a]],
      ["overlong tag", [0xf8, 0xff, 0xff, 0xff, 0xff, 0x01]],
      ["tag of 6 bytes, field number in range", [0xb2, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x61]],
      ["field number 2^29", [0x82, 0x80, 0x80, 0x80, 0x10, 0x00]],
      ["11-byte varint", [0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
      ["10-byte varint with a 10th byte of 2", [0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02]],
      ["10-byte varint with a 10th byte of 1", [0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
      ["truncated fixed64 unknown", [0x81, 0x06, 1, 2, 3]],
      ["truncated fixed32 unknown", [0x85, 0x06, 1]],
      // wire-type mismatches on known fields: unknown fields in Go (protobuf-es reads the declared type)
      ["string as varint", [0x30, 0x01, 0x61]],
      ["message as fixed32", [0x1d, 0x00, 0x00, 0x00, 0x00]],
      ["message as a group", [0x1b, 0x08, 0x01, 0x1c]],
      ["enum as length-delimited", [0x2a, 0x01, 0x05]],
      ["repeated message as varint, then a valid item", [0x72, 0x00, 0x70, 0x01, 0x72, 0x02, 0x08, 0x01]],
      // lengths must fit their enclosing message (protobuf-es only checks the buffer's end)
      ["nested message overruns its length", [0x0a, 0x01, 0x0a, 0x01, 0x61]],
      ["unknown field overruns its enclosing message", [0x5a, 0x03, 0x4a, 0x05, 0x61, 0x61, 0x61, 0x61, 0x61]],
      ["string overruns its enclosing message", [0x5a, 0x02, 0x12, 0x03, 0x61, 0x61, 0x61]],
      ["packed run overruns its enclosing message", [0x62, 0x04, 0x0a, 0x02, 0x1a, 0x02, 0x2a, 0x05, 1, 2]],
      ["end group at top level", [0x0c]],
    ];
    for (const [label, b] of cases) same(new Uint8Array(b), label);
    assert.deepEqual(ok(new Uint8Array([0x1d, 0x00, 0x00, 0x00, 0x00, 0x32, 0x01, 0x70])), { clusterPool: "p" }, "a known field with the wrong wire type is skipped");
  });

  test("5,000 seeded corruptions (truncate, flip, insert, splice): both fail or both agree", () => {
    const r = rng(7);
    let bothOk = 0;
    for (let i = 0; i < 5000; i++) {
      const src = Array.from(randomSpec(r));
      const b = src.slice();
      for (let k = 1 + r.int(3); k > 0 && b.length > 0; k--) {
        const at = r.int(b.length);
        switch (r.int(5)) {
          case 0:
            b.length = at;
            break;
          case 1:
            b[at] = r.int(256);
            break;
          case 2:
            b[at] = b[at]! ^ (1 << r.int(8));
            break;
          case 3:
            b.splice(at, 0, ...Array.from({ length: 1 + r.int(4) }, () => r.int(256)));
            break;
          default:
            b.splice(at, 0, ...src.slice(r.int(src.length), r.int(src.length)));
        }
      }
      if (same(new Uint8Array(b), `corruption #${i}`).ok) bothOk++;
    }
    assert.ok(bothOk > 100, `only ${bothOk} corrupted inputs still decoded; the test is not exercising the success path`);
  });

  test("decodeStdBase64 agrees with the regex + atob definition on 20,000 seeded strings", () => {
    const STD = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
    const refDecode = (v: string): string | undefined => {
      const s = v.replace(/[\r\n]/g, "");
      return STD.test(s) ? hex(Uint8Array.from(atob(s), (c) => c.charCodeAt(0))) : undefined;
    };
    const r = rng(64);
    const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n-_ é";
    for (let i = 0; i < 20000; i++) {
      let v = encodeStdBase64(Uint8Array.from({ length: r.int(12) }, () => r.int(256)));
      for (let k = r.int(3); k > 0; k--) {
        const at = r.int(v.length + 1);
        const c = r.pick([...chars]);
        v = r.chance(0.5) ? v.slice(0, at) + c + v.slice(at) : v.slice(0, at) + c + v.slice(at + 1);
      }
      const got = decodeStdBase64(v);
      assert.equal(got === undefined ? undefined : hex(got), refDecode(v), JSON.stringify(v));
    }
  });

  test("specFromAnnotation gives Go's answer and warns with the decoder's reason on failures", () => {
    const r = rng(99);
    for (let i = 0; i < 200; i++) {
      const b = randomSpec(r);
      const ref = same(b, `annotation #${i}`);
      if (!COLLECT) assert.equal(JSON.stringify(specFromAnnotation(encodeStdBase64(b))), ref.ok ? ref.json : undefined);
    }
    const warnings: string[] = [];
    const logger = { warn: (msg: string, fields?: Record<string, unknown>) => warnings.push(`${msg} ${JSON.stringify(fields)}`) } as never;
    const bad = new Uint8Array([0x32, 0x05, 0x61]);
    fails(bad, "length past end");
    assert.equal(specFromAnnotation(encodeStdBase64(bad), logger), undefined);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /not a valid flyteidl2\.app\.Spec.*unexpected EOF/);
  });

  test("the committed answers are protobuf-go's own (re-run live where Go is installed)", { skip: COLLECT !== undefined || runtimeName() !== "node" ? "the live check runs once, in the Node step" : (process.env.CI === "true" ? false : oracleSkip()) }, () => {
    const inputs = [...GO.keys()];
    assert.ok(inputs.length > 8000, `only ${inputs.length} committed answers`);
    const live = runOracle(inputs.map((h) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16))));
    let differ = 0;
    inputs.forEach((h, i) => {
      // protobuf-go varies its whitespace and error texts on purpose: compare outcome, stage and value
      const norm = (a: { ok: boolean; stage?: string; json?: string } | undefined) => JSON.stringify([a?.ok, a?.stage, a?.json && JSON.parse(a.json)]);
      if (norm(live[i]) !== norm(GO.get(h))) differ++;
    });
    assert.equal(differ, 0, `${differ} committed answers are not what protobuf-go answers now: run npm run oracle:protogo`);
  });
});
