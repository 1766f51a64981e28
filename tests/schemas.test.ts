import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as v from "valibot";
import { isKubeObject, isRawWatchEvent, KubeObjectSchema, RawWatchEventSchema } from "../src/watch/types.ts";

// The hot-path guards must accept exactly what the valibot schemas accept.
const meta = (m: unknown) => ({ metadata: m });
const objects: unknown[] = [
  meta({ name: "a", resourceVersion: "1" }),
  meta({ name: "a", resourceVersion: "1", namespace: "ns", uid: "u" }),
  meta({ name: "a", resourceVersion: "1", extra: [1, 2] }),
  meta({ name: "", resourceVersion: "1" }),
  meta({ name: "a", resourceVersion: "" }),
  meta({ name: "a" }),
  meta({ resourceVersion: "1" }),
  meta({ name: 1, resourceVersion: "1" }),
  meta({ name: "a", resourceVersion: 1 }),
  meta({ name: "a", resourceVersion: "1", namespace: 3 }),
  meta({ name: "a", resourceVersion: "1", uid: null }),
  meta(null),
  meta("x"),
  meta([]),
  {},
  null,
  "junk",
  42,
  [],
  { metadata: { name: "a", resourceVersion: "1" }, spec: null },
];
const events: unknown[] = [
  ...objects.map((o) => ({ type: "ADDED", object: o })),
  { type: "BOOKMARK", object: { metadata: { resourceVersion: "5" } } },
  { type: "BOOKMARK", object: { metadata: { resourceVersion: "5", annotations: { "k8s.io/initial-events-end": "true" } } } },
  { type: "BOOKMARK", object: { metadata: { resourceVersion: "5", annotations: { x: 1 } } } },
  { type: "BOOKMARK", object: { metadata: { resourceVersion: "5", annotations: null } } },
  { type: "BOOKMARK", object: { metadata: { resourceVersion: "5", annotations: ["a"] } } },
  { type: "BOOKMARK", object: { metadata: { resourceVersion: 5 } } },
  { type: "ERROR", object: { kind: "Status", code: 410 } },
  { type: "ERROR", object: "text" },
  { type: 1, object: {} },
  { object: {} },
  { type: "ADDED" },
  { type: "ADDED", object: [] },
  { type: "ADDED", object: { metadata: [] } },
  null,
  [],
];

describe("hot-path guards agree with the valibot schemas", () => {
  test("isKubeObject ≡ v.is(KubeObjectSchema)", () => {
    for (const o of objects) assert.equal(isKubeObject(o), v.is(KubeObjectSchema, o), JSON.stringify(o));
  });
  test("isRawWatchEvent ≡ v.is(RawWatchEventSchema)", () => {
    for (const e of events) assert.equal(isRawWatchEvent(e), v.is(RawWatchEventSchema, e), JSON.stringify(e));
  });
});
