/**
 * Descriptors for `flyteidl2.app.Spec` and the messages it can carry, declared in this repo
 * from the field numbers and types of the Flyte IDL (flyteorg/flyte `flyteidl2/app/app_definition.proto`,
 * `flyteidl2/core/{tasks,security,literals}.proto`, `flyteidl2/common/runtime_version.proto`),
 * built at runtime into a `@bufbuild/protobuf` v2 registry. Only field numbers, types and names
 * matter for binary decoding and proto3 JSON; comments, options and buf.validate rules are left out.
 *
 * Not declared (their bytes stay in the message's unknown fields and, like every unknown field,
 * are NOT printed by `toJson`): `Spec.creator` (12, common.EnrichedIdentity), `Input.artifact_query`
 * (3) and `Input.artifact_id` (4). See docs/flyte-compatibility.md.
 * @module
 */
import { create, type DescFile, type DescMessage } from "@bufbuild/protobuf";
import { createFileRegistry, type FileRegistry } from "@bufbuild/protobuf";
import {
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

// FieldDescriptorProto.Type / Label numbers (google/protobuf/descriptor.proto).
const T = { uint64: 4, int32: 5, bool: 8, string: 9, message: 11, uint32: 13, enum: 14 } as const;
const LABEL_OPTIONAL = 1;
const LABEL_REPEATED = 3;

/** `[name, number, type, flags]`; type is a scalar name, `map<string,string>`, `.pkg.Message` or `enum .pkg.Enum`. */
type FieldDef = [name: string, no: number, type: string, opts?: { repeated?: boolean; oneof?: string }];
interface EnumDef {
  name: string;
  values: string[]; // index = number
}
interface MsgDef {
  name: string;
  fields: FieldDef[];
  enums?: EnumDef[];
  messages?: MsgDef[];
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
    const map = /^map<string,string>$/.exec(type);
    if (map) {
      const entry = `${pascal(name)}Entry`;
      nested.push({
        name: entry,
        field: [
          { name: "key", number: 1, jsonName: "key", label: LABEL_OPTIONAL, type: T.string },
          { name: "value", number: 2, jsonName: "value", label: LABEL_OPTIONAL, type: T.string },
        ],
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
  return { name: def.name, value: def.values.map((name, number) => ({ name, number })) };
}

function file(name: string, pkg: string, deps: string[], messages: MsgDef[], enums: EnumDef[] = []): FileDescriptorProto {
  return create(FileDescriptorProtoSchema, {
    name,
    package: pkg,
    dependency: deps,
    syntax: "proto3",
    messageType: messages.map((m) => message(m, `.${pkg}`)),
    enumType: enums.map(enumType),
  } as never);
}

const CORE = "flyteidl2/core/appwatch_core.proto";
const COMMON = "flyteidl2/common/appwatch_common.proto";
const APP = "flyteidl2/app/appwatch_app.proto";
const DURATION = ".google.protobuf.Duration";

const coreFile = file(CORE, "flyteidl2.core", ["google/protobuf/struct.proto"], [
  { name: "KeyValuePair", fields: [["key", 1, "string"], ["value", 2, "string"]] },
  {
    name: "Resources",
    enums: [{ name: "ResourceName", values: ["UNKNOWN", "CPU", "GPU", "MEMORY", "STORAGE", "EPHEMERAL_STORAGE"] }],
    messages: [{
      name: "ResourceEntry",
      fields: [["name", 1, "enum .flyteidl2.core.Resources.ResourceName"], ["value", 2, "string"]],
    }],
    fields: [
      ["requests", 1, ".flyteidl2.core.Resources.ResourceEntry", { repeated: true }],
      ["limits", 2, ".flyteidl2.core.Resources.ResourceEntry", { repeated: true }],
    ],
  },
  {
    name: "GPUAccelerator",
    enums: [{ name: "DeviceClass", values: ["NVIDIA_GPU", "GOOGLE_TPU", "AMAZON_NEURON", "AMD_GPU", "HABANA_GAUDI"] }],
    fields: [
      ["device", 1, "string"],
      ["unpartitioned", 2, "bool", { oneof: "partition_size_value" }],
      ["partition_size", 3, "string", { oneof: "partition_size_value" }],
      ["device_class", 4, "enum .flyteidl2.core.GPUAccelerator.DeviceClass"],
    ],
  },
  { name: "SharedMemory", fields: [["mount_path", 1, "string"], ["mount_name", 2, "string"], ["size_limit", 3, "string"]] },
  {
    name: "ExtendedResources",
    fields: [
      ["gpu_accelerator", 1, ".flyteidl2.core.GPUAccelerator"],
      ["shared_memory", 2, ".flyteidl2.core.SharedMemory"],
    ],
  },
  { name: "ContainerPort", fields: [["container_port", 1, "uint32"], ["name", 2, "string"]] },
  {
    name: "IOStrategy",
    enums: [
      { name: "DownloadMode", values: ["DOWNLOAD_EAGER", "DOWNLOAD_STREAM", "DO_NOT_DOWNLOAD"] },
      { name: "UploadMode", values: ["UPLOAD_ON_EXIT", "UPLOAD_EAGER", "DO_NOT_UPLOAD"] },
    ],
    fields: [
      ["download_mode", 1, "enum .flyteidl2.core.IOStrategy.DownloadMode"],
      ["upload_mode", 2, "enum .flyteidl2.core.IOStrategy.UploadMode"],
    ],
  },
  {
    name: "DataLoadingConfig",
    enums: [
      { name: "LiteralMapFormat", values: ["JSON", "YAML", "PROTO"] },
      { name: "FileInputLayout", values: ["DIRECT", "NAMED_DIR"] },
    ],
    fields: [
      ["enabled", 1, "bool"],
      ["input_path", 2, "string"],
      ["output_path", 3, "string"],
      ["format", 4, "enum .flyteidl2.core.DataLoadingConfig.LiteralMapFormat"],
      ["io_strategy", 5, ".flyteidl2.core.IOStrategy"],
      ["file_input_layout", 6, "enum .flyteidl2.core.DataLoadingConfig.FileInputLayout"],
    ],
  },
  {
    name: "Container",
    enums: [{ name: "Architecture", values: ["UNKNOWN", "AMD64", "ARM64", "ARM_V6", "ARM_V7"] }],
    fields: [
      ["image", 1, "string"],
      ["command", 2, "string", { repeated: true }],
      ["args", 3, "string", { repeated: true }],
      ["resources", 4, ".flyteidl2.core.Resources"],
      ["env", 5, ".flyteidl2.core.KeyValuePair", { repeated: true }],
      ["config", 6, ".flyteidl2.core.KeyValuePair", { repeated: true }],
      ["ports", 7, ".flyteidl2.core.ContainerPort", { repeated: true }],
      ["data_config", 9, ".flyteidl2.core.DataLoadingConfig"],
      ["architecture", 10, "enum .flyteidl2.core.Container.Architecture"],
    ],
  },
  {
    name: "K8sObjectMetadata",
    fields: [["labels", 1, "map<string,string>"], ["annotations", 2, "map<string,string>"]],
  },
  {
    name: "K8sPod",
    fields: [
      ["metadata", 1, ".flyteidl2.core.K8sObjectMetadata"],
      ["pod_spec", 2, ".google.protobuf.Struct"],
      ["data_config", 3, ".flyteidl2.core.DataLoadingConfig"],
      ["primary_container_name", 4, "string"],
    ],
  },
  {
    name: "Secret",
    enums: [{ name: "MountType", values: ["ANY", "ENV_VAR", "FILE"] }],
    fields: [
      ["group", 1, "string"],
      ["group_version", 2, "string"],
      ["key", 3, "string"],
      ["mount_requirement", 4, "enum .flyteidl2.core.Secret.MountType"],
      ["env_var", 5, "string"],
    ],
  },
  { name: "OAuth2Client", fields: [["client_id", 1, "string"], ["client_secret", 2, ".flyteidl2.core.Secret"]] },
  {
    name: "Identity",
    fields: [
      ["iam_role", 1, "string"],
      ["k8s_service_account", 2, "string"],
      ["oauth2_client", 3, ".flyteidl2.core.OAuth2Client"],
      ["execution_identity", 4, "string"],
    ],
  },
]);

const commonFile = file(COMMON, "flyteidl2.common", [], [{
  name: "RuntimeMetadata",
  enums: [{ name: "RuntimeType", values: ["OTHER", "FLYTE_SDK", "UNION_SDK"] }],
  fields: [
    ["type", 1, "enum .flyteidl2.common.RuntimeMetadata.RuntimeType"],
    ["version", 2, "string"],
    ["flavor", 3, "string"],
  ],
}]);

const A = ".flyteidl2.app";
const appFile = file(APP, "flyteidl2.app", [CORE, COMMON, "google/protobuf/duration.proto"], [
  {
    name: "Identifier",
    fields: [["org", 1, "string"], ["project", 2, "string"], ["domain", 3, "string"], ["name", 4, "string"]],
  },
  { name: "Replicas", fields: [["min", 1, "uint32"], ["max", 2, "uint32"]] },
  { name: "RequestRate", fields: [["target_value", 1, "uint32"]] },
  { name: "Concurrency", fields: [["target_value", 1, "uint32"]] },
  {
    name: "ScalingMetric",
    fields: [
      ["request_rate", 1, `${A}.RequestRate`, { oneof: "metric" }],
      ["concurrency", 2, `${A}.Concurrency`, { oneof: "metric" }],
    ],
  },
  {
    name: "AutoscalingConfig",
    fields: [
      ["replicas", 1, `${A}.Replicas`],
      ["scaledown_period", 2, DURATION],
      ["scaling_metric", 3, `${A}.ScalingMetric`],
    ],
  },
  { name: "IngressConfig", fields: [["private", 1, "bool"], ["subdomain", 2, "string"], ["cname", 3, "string"]] },
  { name: "ImageSpec", fields: [["tag", 1, "string"], ["build_job_url", 2, "string"]] },
  { name: "ImageSpecSet", fields: [["images", 1, `${A}.ImageSpec`, { repeated: true }]] },
  {
    name: "SecurityContext",
    fields: [
      ["run_as", 1, ".flyteidl2.core.Identity"],
      ["secrets", 2, ".flyteidl2.core.Secret", { repeated: true }],
      ["allow_anonymous", 5, "bool"],
    ],
  },
  {
    name: "Profile",
    fields: [["type", 1, "string"], ["name", 2, "string"], ["short_description", 3, "string"], ["icon_url", 4, "string"]],
  },
  {
    name: "Input",
    fields: [
      ["name", 1, "string"],
      ["string_value", 2, "string", { oneof: "value" }],
      ["app_id", 5, `${A}.Identifier`, { oneof: "value" }],
    ],
  },
  { name: "InputList", fields: [["items", 1, `${A}.Input`, { repeated: true }]] },
  { name: "Link", fields: [["path", 1, "string"], ["title", 2, "string"], ["is_relative", 3, "bool"]] },
  { name: "TimeoutConfig", fields: [["request_timeout", 1, DURATION]] },
  {
    name: "Spec",
    enums: [{
      name: "DesiredState",
      values: ["DESIRED_STATE_UNSPECIFIED", "DESIRED_STATE_STOPPED", "DESIRED_STATE_STARTED", "DESIRED_STATE_ACTIVE"],
    }],
    fields: [
      ["container", 1, ".flyteidl2.core.Container", { oneof: "app_payload" }],
      ["pod", 2, ".flyteidl2.core.K8sPod", { oneof: "app_payload" }],
      ["autoscaling", 3, `${A}.AutoscalingConfig`],
      ["ingress", 4, `${A}.IngressConfig`],
      ["desired_state", 5, `enum ${A}.Spec.DesiredState`],
      ["cluster_pool", 6, "string"],
      ["images", 7, `${A}.ImageSpecSet`],
      ["security_context", 8, `${A}.SecurityContext`],
      ["extended_resources", 9, ".flyteidl2.core.ExtendedResources"],
      ["runtime_metadata", 10, ".flyteidl2.common.RuntimeMetadata"],
      ["profile", 11, `${A}.Profile`],
      // 12 creator (common.EnrichedIdentity): not declared, see the module comment.
      ["inputs", 13, `${A}.InputList`],
      ["links", 14, `${A}.Link`, { repeated: true }],
      ["timeouts", 15, `${A}.TimeoutConfig`],
    ],
  },
]);

const byName: Record<string, FileDescriptorProto | DescFile> = {
  [CORE]: coreFile,
  [COMMON]: commonFile,
  "google/protobuf/duration.proto": file_google_protobuf_duration,
  "google/protobuf/struct.proto": file_google_protobuf_struct,
};

/** The registry holding our declarations (and the well-known types they use). */
export const registry: FileRegistry = createFileRegistry(
  appFile,
  (name) => byName[name],
);

function mustMessage(typeName: string): DescMessage {
  const desc = registry.getMessage(typeName);
  if (!desc) throw new Error(`descriptor ${typeName} missing`);
  return desc;
}

/** Descriptor of `flyteidl2.app.Spec`. */
export const SpecSchema: DescMessage = mustMessage("flyteidl2.app.Spec");
