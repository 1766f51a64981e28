// Our protobuf declarations (src/flyte/proto/) against Flyte's own generated schema
// (tests/fixtures/flyte-golden/schema.json: the message/enum closure of Flyte's AppService at the
// commit docs/flyte-compatibility.md names). Any difference, in either direction, fails.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ScalarType, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { AppService } from "../src/flyte/proto/app_service_pb.ts";
import { SpecSchema } from "../src/flyte/proto/spec_pb.ts";
import { loadSchema, type GoldenField } from "./helpers/golden.ts";

const SCALARS: Record<number, string> = {
  [ScalarType.DOUBLE]: "double",
  [ScalarType.FLOAT]: "float",
  [ScalarType.INT64]: "int64",
  [ScalarType.UINT64]: "uint64",
  [ScalarType.INT32]: "int32",
  [ScalarType.FIXED64]: "fixed64",
  [ScalarType.FIXED32]: "fixed32",
  [ScalarType.BOOL]: "bool",
  [ScalarType.STRING]: "string",
  [ScalarType.BYTES]: "bytes",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.SFIXED32]: "sfixed32",
  [ScalarType.SFIXED64]: "sfixed64",
  [ScalarType.SINT32]: "sint32",
  [ScalarType.SINT64]: "sint64",
};

/** A field in schema.json's notation. */
function describeField(f: DescField): GoldenField {
  const out: GoldenField = { number: f.number, name: f.name, jsonName: f.jsonName, type: "" };
  switch (f.fieldKind) {
    case "scalar":
      out.type = SCALARS[f.scalar]!;
      break;
    case "enum":
      out.type = `enum ${f.enum.typeName}`;
      break;
    case "message":
      out.type = f.message.typeName;
      break;
    case "list":
      out.label = "repeated";
      out.type = f.listKind === "scalar" ? SCALARS[f.scalar]! : f.listKind === "enum" ? `enum ${f.enum.typeName}` : f.message.typeName;
      break;
    case "map":
      out.label = "map";
      out.type = `${SCALARS[f.mapKey]},${f.mapKind === "scalar" ? SCALARS[f.scalar] : f.mapKind === "enum" ? `enum ${f.enum.typeName}` : f.message.typeName}`;
      break;
  }
  if (f.oneof) out.oneof = f.oneof.name;
  return out;
}

/** The message/enum closure of our AppService, in schema.json's shape. */
function ourClosure(): { messages: Record<string, GoldenField[]>; enums: Record<string, [number, string][]> } {
  const messages: Record<string, GoldenField[]> = {};
  const enums: Record<string, [number, string][]> = {};
  const addEnum = (e: DescEnum) => {
    enums[e.typeName] ??= e.values.map((v) => [v.number, v.name]);
  };
  const addMessage = (m: DescMessage) => {
    if (messages[m.typeName]) return;
    messages[m.typeName] = m.fields.map(describeField);
    for (const f of m.fields) {
      if (f.fieldKind === "enum" || (f.fieldKind !== "scalar" && f.enum)) addEnum(f.enum!);
      if (f.fieldKind === "message" || (f.fieldKind !== "scalar" && f.fieldKind !== "enum" && f.message)) addMessage(f.message!);
    }
  };
  for (const method of AppService.methods) {
    addMessage(method.input);
    addMessage(method.output);
  }
  return { messages, enums };
}

describe("protobuf declarations equal Flyte's generated schema", () => {
  const flyte = loadSchema();
  const ours = ourClosure();

  test("AppService methods", () => {
    assert.deepEqual(AppService.methods.map((m) => m.name), flyte.methods);
  });

  test("every message Flyte has is declared, and nothing else is reachable", () => {
    assert.deepEqual(Object.keys(ours.messages).sort(), Object.keys(flyte.messages).sort());
  });

  test("every field: number, name, json name, type, label, oneof", () => {
    const diffs: string[] = [];
    for (const [name, fields] of Object.entries(flyte.messages)) {
      const mine = ours.messages[name];
      if (!mine) continue; // reported by the test above
      const want = [...fields].sort((a, b) => a.number - b.number);
      const got = [...mine].sort((a, b) => a.number - b.number);
      const wantText = want.map((f) => JSON.stringify(f, Object.keys(f).sort()));
      const gotText = got.map((f) => JSON.stringify(f, Object.keys(f).sort()));
      for (const w of wantText) if (!gotText.includes(w)) diffs.push(`${name}: missing or different ${w}`);
      for (const g of gotText) if (!wantText.includes(g)) diffs.push(`${name}: not in Flyte's schema ${g}`);
    }
    assert.deepEqual(diffs, []);
  });

  test("every enum and its values", () => {
    assert.deepEqual(Object.keys(ours.enums).sort(), Object.keys(flyte.enums).sort());
    for (const [name, values] of Object.entries(flyte.enums)) {
      assert.deepEqual(ours.enums[name], values, name);
    }
  });

  test("the Spec the annotation decodes with is the AppService's Spec", () => {
    assert.equal(SpecSchema.typeName, "flyteidl2.app.Spec");
    assert.deepEqual(SpecSchema.fields.map(describeField), ours.messages["flyteidl2.app.Spec"]);
  });
});
