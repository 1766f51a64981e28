// kserviceToApp against Flyte's own answers: 4,000 KServices run through Flyte's real Go
// `kserviceToApp` (tests/fixtures/flyte-golden/, see tests/helpers/golden.ts). Every App must equal
// Flyte's value for value and key for key; the only allowed differences are the ones
// docs/flyte-compatibility.md documents (stable timestamps instead of now(); timestamps outside
// 0001–9999, which Flyte cannot print at all; objects Flyte's client cannot decode).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppConversionError, kserviceToApp } from "../src/flyte/convert.ts";
import { goQuote, goToLower } from "../src/flyte/gostrings.ts";
import { KServiceName } from "../src/flyte/naming.ts";
import type { App } from "../src/flyte/model.ts";
import { encodeStdBase64, specFromAnnotation } from "../src/flyte/spec.ts";
import { fromJsonString, toJsonString } from "@bufbuild/protobuf";
import { WatchResponseSchema } from "../src/flyte/proto/app_service_pb.ts";
import { expectedApp, type GoldenAnswer, type GoldenVector, goldenConfig, goldenReplicas, jsonDiff, loadGolden } from "./helpers/golden.ts";

const golden = loadGolden();

/** appwatch's answer: the App as it goes on the wire (JSON text, parsed back), or the conversion error. */
function convert(v: GoldenVector): { app?: unknown; error?: string } {
  try {
    const app = kserviceToApp(v.ksvc, goldenConfig(v), { currentReplicas: goldenReplicas(v) });
    return { app: JSON.parse(JSON.stringify(app)) };
  } catch (err) {
    if (err instanceof AppConversionError) return { error: err.message };
    throw new Error(`${v.id}: conversion crashed: ${err instanceof Error ? err.stack : err}`);
  }
}

/** Where appwatch and Flyte differ for one vector (`undefined`: equal, or an allowed divergence). */
function difference(vector: GoldenVector, answer: GoldenAnswer): string | undefined {
  const ours = convert(vector);
  switch (answer.outcome) {
    case "app":
      if (ours.error !== undefined) return `error ${JSON.stringify(ours.error)} where Flyte gives an App`;
      return jsonDiff(ours.app, expectedApp(answer, answer.app!));
    case "error":
      return ours.error === answer.error ? undefined : `${JSON.stringify(ours.error ?? "an App")} ≠ Flyte's error ${JSON.stringify(answer.error)}`;
    case "marshalError":
      // Flyte converts it but cannot print it (a timestamp outside 0001–9999); appwatch leaves such a
      // timestamp unset, which is the App Flyte's generator printed with those timestamps cleared.
      if (ours.error !== undefined) return `error ${JSON.stringify(ours.error)}`;
      return jsonDiff(ours.app, expectedApp(answer, answer.appClamped!));
    case "decodeError":
      return undefined; // checked below: never a crash
  }
}

function vectorsTagged(tag: string): { vector: GoldenVector; answer: GoldenAnswer }[] {
  const found = golden.filter(({ vector }) => vector.tags.some((t) => t === tag || t.startsWith(`${tag}:`)));
  assert.ok(found.length > 0, `no golden vector tagged ${tag}`);
  return found;
}

/** Every vector with one of `tags` equals Flyte's answer. */
function allEqual(...tags: string[]): number {
  let n = 0;
  for (const tag of tags) {
    for (const { vector, answer } of vectorsTagged(tag)) {
      const d = difference(vector, answer);
      assert.equal(d, undefined, `${vector.id} [${vector.tags.join(" ")}]: ${d}`);
      n++;
    }
  }
  return n;
}

describe("kserviceToApp equals Flyte's Go code (golden vectors)", () => {
  test("all 4,000 vectors: equal, or an allowed divergence; none different", () => {
    const counts = { equal: 0, nowReplaced: 0, marshalError: 0, decodeError: 0, different: 0 };
    const different: string[] = [];
    for (const { vector, answer } of golden) {
      const d = difference(vector, answer);
      if (d !== undefined) {
        counts.different++;
        if (different.length < 20) different.push(`${vector.id} [${vector.tags.join(" ")}]: ${d}`);
      } else if (answer.outcome === "marshalError") counts.marshalError++;
      else if (answer.outcome === "decodeError") counts.decodeError++;
      else if (answer.outcome === "app" && JSON.stringify(expectedApp(answer, answer.app!)) !== JSON.stringify(JSON.parse(answer.app!))) counts.nowReplaced++;
      else counts.equal++;
    }
    console.log(`golden vectors: ${JSON.stringify(counts)}`);
    assert.equal(golden.length, 4000);
    assert.deepEqual(different, []);
  });

  test("every App's JSON is the proto3 JSON of its message: a strict parse (no unknown fields) and connect-es's printing give the same values", () => {
    // Connect JSON Watch frames are the event's own JSON (src/service/connect/frames.ts), not a
    // fromJson → toJsonString round trip: this is what makes that the same answer.
    let n = 0;
    for (const { vector } of golden) {
      const app = convert(vector).app;
      if (app === undefined) continue;
      for (const event of [{ createEvent: { app } }, { updateEvent: { updatedApp: app, oldApp: app } }, { deleteEvent: { app } }]) {
        const json = JSON.stringify(event);
        const printed = toJsonString(WatchResponseSchema, fromJsonString(WatchResponseSchema, json));
        assert.deepEqual(JSON.parse(printed), event, `${vector.id} [${vector.tags.join(" ")}]`);
      }
      n++;
    }
    assert.ok(n > 3000, `${n} Apps`);
  });

  test("proto3 JSON omits default values: an empty identity part is not printed", () => {
    const n = allEqual("id:empty-part");
    const v = vectorsTagged("id:empty-part").find(({ answer }) => answer.outcome === "app")!;
    const id = (convert(v.vector).app as App).metadata!.id!;
    assert.ok(Object.values(id).every((part) => part !== ""), JSON.stringify(id));
    assert.ok(n > 100);
  });

  test("a stopped app's desiredState sits at its field position", () => {
    allEqual("stopped");
    const v = vectorsTagged("stopped").find(({ answer }) => answer.outcome === "app" && /"inputs"|"creator"|"profile"/.test(answer.app!))!;
    const keys = Object.keys((convert(v.vector).app as App).spec!);
    assert.ok(keys.indexOf("desiredState") < keys.findIndex((k) => ["profile", "creator", "inputs"].includes(k)), keys.join(","));
  });

  test("Input.artifact_id is field 6 (core.ArtifactVersionId); RoleType 10 and Action 17 print by name", () => {
    const withArtifact = golden.filter(({ answer }) => answer.app?.includes('"artifactId"'));
    const withNewEnums = golden.filter(({ answer }) => /ROLE_TYPE_SYSTEM_PROVISIONED_ACCESS|ACTION_VIEW_IDENTITIES/.test(answer.app ?? ""));
    assert.ok(withArtifact.length > 50 && withNewEnums.length > 5);
    for (const { vector, answer } of [...withArtifact, ...withNewEnums]) assert.equal(difference(vector, answer), undefined, vector.id);
  });

  test("binary decoding follows protobuf-go: wrong wire type kept as unknown, overrunning length rejects, duplicates, truncation", () => {
    allEqual("spec:mutated", "spec:garbage", "spec:valid");
    // by hand: Spec{cluster_pool(6)="p", profile(11) sent as a varint} decodes, profile skipped
    const spec = (bytes: number[]) => specFromAnnotation(encodeStdBase64(Uint8Array.from(bytes)));
    assert.deepEqual(spec([0x32, 1, 0x70, 0x58, 0x05]), { clusterPool: "p" });
    // profile(11){ unknown field 9, length 5 } where profile is 3 bytes long: rejected
    assert.equal(spec([0x5a, 3, 0x4a, 5, 0x61, 0x61, 0x61, 0x61, 0x61]), undefined);
    // the same unknown field inside its bounds: accepted, not printed
    assert.deepEqual(spec([0x5a, 3, 0x4a, 1, 0x61]), { profile: {} });
  });

  test("base64 as Go's StdEncoding: padding required, CR/LF skipped, URL alphabet and spaces refused", () => {
    allEqual("b64");
  });

  test("map and Struct keys in Go's order (protojson sorts them)", () => {
    const withMaps = golden.filter(({ answer }) => /"(labels|annotations|podSpec)":\{"/.test(answer.app ?? ""));
    assert.ok(withMaps.length > 100);
    for (const { vector, answer } of withMaps) assert.equal(difference(vector, answer), undefined, vector.id);
  });

  test("lower-casing is Go's strings.ToLower: İ → i, no final sigma, for names, hosts and URLs", () => {
    assert.equal(goToLower("İSTANBUL"), "istanbul");
    assert.equal(goToLower("ΑΣ"), "ασ");
    assert.equal(goToLower("Straße-ΣΑΣ"), "straße-σασ");
    assert.equal(KServiceName({ project: "P", domain: "D", name: "İ" }), "i-p-d");
    const nonAscii = golden.filter(({ vector, answer }) => answer.outcome === "app" && /[İΣ]/.test(vector.ksvc.metadata?.annotations?.["flyte.org/app-id"] ?? ""));
    assert.ok(nonAscii.length > 0);
    for (const { vector, answer } of nonAscii) assert.equal(difference(vector, answer), undefined, vector.id);
  });

  test("timestamps parse as Go's time.Parse(time.RFC3339): ',' fraction, 1-digit hour, offsets, ranges", () => {
    allEqual("ltt:lenient-form", "created:lenient-form", "ltt:fraction", "ltt:offset", "created:offset", "ltt:edge-range", "created:edge-range", "ltt:zero-time", "created:zero-time");
  });

  test("error texts quote like Go's %q (NBSP, U+0085, U+200B, U+FEFF, U+2028 escaped)", () => {
    assert.equal(goQuote("a\u00a0b\u0085c\u200bd\ufeffe\u2028f"), '"a\\u00a0b\\u0085c\\u200bd\\ufeffe\\u2028f"');
    assert.equal(goQuote("tab\there \x00 \x7f é 日本 😀"), '"tab\\there \\x00 \\x7f é 日本 😀"');
    assert.equal(goQuote("\u{e0001}"), '"\\U000e0001"');
    allEqual("app-id:two-parts", "app-id:one-part", "app-id:empty", "app-id:missing");
  });

  test("negative actualReplicas wraps like Go's uint32(int32): -1 → 4294967295", () => {
    allEqual("rev:negative", "rev:max-int32", "rev:zero", "rev:missing", "rev:other-namespace", "rev:no-actualReplicas");
    const v = vectorsTagged("rev:negative").find(({ answer }) => answer.outcome === "app" && answer.app!.includes("currentReplicas"))!;
    assert.ok(((convert(v.vector).app as App).status!.currentReplicas ?? 0) > 2 ** 31);
  });

  test('"flyte.org/spec": null (a hand-made object) gives spec {} as Flyte does, never a TypeError', () => {
    allEqual("illtyped:spec-null", "illtyped:annotation-null");
    for (const { vector, answer } of vectorsTagged("illtyped:spec-null")) {
      if (answer.outcome === "app") assert.deepEqual(JSON.parse(answer.app!).spec, (convert(vector).app as App).spec);
    }
  });

  test("objects Flyte's client cannot decode: appwatch converts them leniently, never crashes, and no other app changes", () => {
    const undecodable = golden.filter(({ answer }) => answer.outcome === "decodeError");
    assert.ok(undecodable.length > 100);
    for (const { vector } of undecodable) {
      const ours = convert(vector); // throws on anything but an App or an AppConversionError
      assert.ok(ours.app !== undefined || ours.error !== undefined);
    }
    // the conversion caches (specs, ingress) are shared: converting the undecodable objects first
    // and in between changes nothing for the others
    const decodable = golden.filter(({ answer }) => answer.outcome !== "decodeError").slice(0, 500);
    for (let i = 0; i < decodable.length; i++) {
      convert(undecodable[i % undecodable.length]!.vector);
      const { vector, answer } = decodable[i]!;
      assert.equal(difference(vector, answer), undefined, vector.id);
    }
  });
});
