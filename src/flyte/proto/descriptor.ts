/**
 * A compact way to declare protobuf files in TypeScript: messages, enums and
 * services written as small tables, turned into `google.protobuf.FileDescriptorProto`
 * for a `@bufbuild/protobuf` v2 registry. Only what binary decoding, proto3 JSON and
 * Connect routing need is kept: names, numbers, types, oneofs, maps, streaming and
 * idempotency. Comments, options and buf.validate rules are left out.
 * @module
 */
import { create } from "@bufbuild/protobuf";
import { type FileDescriptorProto, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

// FieldDescriptorProto.Type / Label numbers (google/protobuf/descriptor.proto).
const T = { int64: 3, uint64: 4, int32: 5, bool: 8, string: 9, message: 11, bytes: 12, uint32: 13, enum: 14 } as const;
const LABEL_OPTIONAL = 1;
const LABEL_REPEATED = 3;
// MethodOptions.IdempotencyLevel.NO_SIDE_EFFECTS: Connect serves such methods over GET too.
const NO_SIDE_EFFECTS = 1;

/** `[name, number, type, flags]`; type is a scalar name, `map<string,V>` (V a scalar or `.pkg.Message`), `.pkg.Message` or `enum .pkg.Enum`. */
export type FieldDef = [name: string, no: number, type: string, opts?: { repeated?: boolean; oneof?: string }];

/** An enum: `values[i]` is value number `i`, or an explicit `[name, number]` where numbers have gaps. */
export interface EnumDef {
  name: string;
  values: (string | [name: string, number: number])[];
}

/** A message, with its nested enums and messages. */
export interface MsgDef {
  name: string;
  fields: FieldDef[];
  enums?: EnumDef[];
  messages?: MsgDef[];
}

/** An RPC: input and output are fully qualified (`.pkg.Message`). */
export interface MethodDef {
  name: string;
  input: string;
  output: string;
  clientStreaming?: boolean;
  serverStreaming?: boolean;
  noSideEffects?: boolean;
}

/** A service and its methods. */
export interface ServiceDef {
  name: string;
  methods: MethodDef[];
}

/** protoc's json_name: drop underscores, upper-case the letter after each. */
function jsonName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()).replace(/_/g, "");
}

function pascal(name: string): string {
  const j = jsonName(name);
  return j.charAt(0).toUpperCase() + j.slice(1);
}

function message(def: MsgDef, scope: string): Record<string, unknown> {
  const typeName = `${scope}.${def.name}`;
  const oneofs: string[] = [];
  const nested: Record<string, unknown>[] = (def.messages ?? []).map((m) => message(m, typeName));
  const fields = def.fields.map(([name, number, type, opts]) => {
    const field: Record<string, unknown> = { name, number, jsonName: jsonName(name), label: LABEL_OPTIONAL };
    if (opts?.repeated) field.label = LABEL_REPEATED;
    if (opts?.oneof !== undefined) {
      let i = oneofs.indexOf(opts.oneof);
      if (i < 0) i = oneofs.push(opts.oneof) - 1;
      field.oneofIndex = i;
    }
    const map = /^map<string,(.+)>$/.exec(type)?.[1];
    if (map) {
      const entry = `${pascal(name)}Entry`;
      const value: Record<string, unknown> = { name: "value", number: 2, jsonName: "value", label: LABEL_OPTIONAL };
      if (map.startsWith(".")) Object.assign(value, { type: T.message, typeName: map });
      else Object.assign(value, { type: T[map as keyof typeof T] });
      nested.push({
        name: entry,
        field: [{ name: "key", number: 1, jsonName: "key", label: LABEL_OPTIONAL, type: T.string }, value],
        options: { mapEntry: true },
      });
      field.label = LABEL_REPEATED;
      field.type = T.message;
      field.typeName = `${typeName}.${entry}`;
    } else if (type.startsWith("enum ")) {
      field.type = T.enum;
      field.typeName = type.slice(5);
    } else if (type.startsWith(".")) {
      field.type = T.message;
      field.typeName = type;
    } else {
      const scalar = T[type as keyof typeof T];
      if (scalar === undefined) throw new Error(`unknown scalar type ${type}`);
      field.type = scalar;
    }
    return field;
  });
  return {
    name: def.name,
    field: fields,
    nestedType: nested,
    enumType: (def.enums ?? []).map(enumType),
    oneofDecl: oneofs.map((name) => ({ name })),
  };
}

function enumType(def: EnumDef): Record<string, unknown> {
  return {
    name: def.name,
    value: def.values.map((v, i) => (typeof v === "string" ? { name: v, number: i } : { name: v[0], number: v[1] })),
  };
}

function service(def: ServiceDef): Record<string, unknown> {
  return {
    name: def.name,
    method: def.methods.map((m) => ({
      name: m.name,
      inputType: m.input,
      outputType: m.output,
      ...(m.clientStreaming ? { clientStreaming: true } : {}),
      serverStreaming: m.serverStreaming ?? false,
      ...(m.noSideEffects ? { options: { idempotencyLevel: NO_SIDE_EFFECTS } } : {}),
    })),
  };
}

/** A proto3 file of package `pkg`, importing `deps` (file names). */
export function file(
  name: string,
  pkg: string,
  deps: string[],
  messages: MsgDef[],
  enums: EnumDef[] = [],
  services: ServiceDef[] = [],
): FileDescriptorProto {
  return create(FileDescriptorProtoSchema, {
    name,
    package: pkg,
    dependency: deps,
    syntax: "proto3",
    messageType: messages.map((m) => message(m, `.${pkg}`)),
    enumType: enums.map(enumType),
    service: services.map(service),
  } as never);
}
