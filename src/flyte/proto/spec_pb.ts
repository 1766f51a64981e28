/**
 * Descriptors for `flyteidl2.app.Spec` and the messages it can carry, declared in this repo
 * from the field numbers and types of the Flyte IDL (flyteorg/flyte `flyteidl2/app/app_definition.proto`,
 * `flyteidl2/core/{tasks,security,literals}.proto`, `flyteidl2/common/runtime_version.proto`),
 * built at runtime into a `@bufbuild/protobuf` v2 registry. Only field numbers, types and names
 * matter for binary decoding and proto3 JSON; comments, options and buf.validate rules are left out.
 *
 * The closure is complete for everything `Spec` can carry: `Spec.creator` (common.EnrichedIdentity
 * with its User/Application/Role/Policy/Resource tree from `flyteidl2/common/{identity,identifier,
 * role,policy,authorization}.proto`) and the artifact inputs (`Input.artifact_query` = 3,
 * `Input.artifact_id` = 4, from `flyteidl2/core/artifact_id.proto`). Bytes of fields a newer Flyte
 * adds stay in unknown fields and, like every unknown field, are not printed by `toJson`.
 * @module
 */
import { createFileRegistry, type DescFile, type DescMessage, type FileRegistry } from "@bufbuild/protobuf";
import {
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  type FileDescriptorProto,
} from "@bufbuild/protobuf/wkt";
import { type FieldDef, file } from "./descriptor.ts";

export const CORE = "flyteidl2/core/appwatch_core.proto";
export const COMMON = "flyteidl2/common/appwatch_common.proto";
export const APP = "flyteidl2/app/appwatch_app.proto";
const DURATION = ".google.protobuf.Duration";

const C = ".flyteidl2.core";
const coreFile = file(CORE, "flyteidl2.core", ["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"], [
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
  // flyteidl2/core/artifact_id.proto
  { name: "ArtifactKey", fields: [["project", 1, "string"], ["domain", 2, "string"], ["name", 3, "string"], ["org", 4, "string"]] },
  {
    name: "ArtifactBindingData",
    fields: [
      ["partition_key", 5, "string", { oneof: "partition_data" }],
      ["bind_to_time_partition", 6, "bool", { oneof: "partition_data" }],
      ["time_transform", 7, `${C}.TimeTransform`],
    ],
  },
  { name: "TimeTransform", fields: [["transform", 1, "string"], ["op", 2, `enum ${C}.Operator`]] },
  { name: "InputBindingData", fields: [["var", 1, "string"]] },
  { name: "RuntimeBinding", fields: [] },
  {
    name: "LabelValue",
    fields: [
      ["static_value", 1, "string", { oneof: "value" }],
      ["time_value", 2, ".google.protobuf.Timestamp", { oneof: "value" }],
      ["triggered_binding", 3, `${C}.ArtifactBindingData`, { oneof: "value" }],
      ["input_binding", 4, `${C}.InputBindingData`, { oneof: "value" }],
      ["runtime_binding", 5, `${C}.RuntimeBinding`, { oneof: "value" }],
    ],
  },
  { name: "Partitions", fields: [["value", 1, `map<string,${C}.LabelValue>`]] },
  { name: "TimePartition", fields: [["value", 1, `${C}.LabelValue`], ["granularity", 2, `enum ${C}.Granularity`]] },
  {
    name: "ArtifactID",
    fields: [
      ["artifact_key", 1, `${C}.ArtifactKey`],
      ["version", 2, "string"],
      ["partitions", 3, `${C}.Partitions`],
      ["time_partition", 4, `${C}.TimePartition`],
    ],
  },
  { name: "ArtifactVersionId", fields: [["key", 1, `${C}.ArtifactKey`], ["version", 2, "string"]] },
], [
  { name: "Granularity", values: ["UNSET", "MINUTE", "HOUR", "DAY", "MONTH"] },
  { name: "Operator", values: ["MINUS", "PLUS"] },
]);

const M = ".flyteidl2.common";
const subject: FieldDef[] = [["subject", 1, "string"]];
const orgAndName: FieldDef[] = [["organization", 1, "string"], ["name", 2, "string"]];
const commonFile = file(COMMON, "flyteidl2.common", [], [
  {
    name: "RuntimeMetadata",
    enums: [{ name: "RuntimeType", values: ["OTHER", "FLYTE_SDK", "UNION_SDK"] }],
    fields: [
      ["type", 1, "enum .flyteidl2.common.RuntimeMetadata.RuntimeType"],
      ["version", 2, "string"],
      ["flavor", 3, "string"],
    ],
  },
  // identifier.proto
  { name: "UserIdentifier", fields: subject },
  { name: "ApplicationIdentifier", fields: subject },
  { name: "RoleIdentifier", fields: orgAndName },
  { name: "PolicyIdentifier", fields: orgAndName },
  { name: "ClusterIdentifier", fields: orgAndName },
  // authorization.proto
  { name: "Organization", fields: [["name", 1, "string"]] },
  { name: "Domain", fields: [["name", 1, "string"], ["organization", 2, `${M}.Organization`]] },
  { name: "Project", fields: [["name", 1, "string"], ["domain", 2, `${M}.Domain`]] },
  { name: "Workflow", fields: [["name", 1, "string"], ["project", 2, `${M}.Project`]] },
  { name: "LaunchPlan", fields: [["name", 1, "string"], ["project", 2, `${M}.Project`]] },
  {
    name: "Resource",
    fields: [
      ["organization", 1, `${M}.Organization`, { oneof: "resource" }],
      ["domain", 2, `${M}.Domain`, { oneof: "resource" }],
      ["project", 3, `${M}.Project`, { oneof: "resource" }],
      ["workflow", 4, `${M}.Workflow`, { oneof: "resource" }],
      ["launch_plan", 5, `${M}.LaunchPlan`, { oneof: "resource" }],
      ["cluster", 6, `${M}.ClusterIdentifier`, { oneof: "resource" }],
    ],
  },
  {
    name: "Permission",
    fields: [["resource", 1, `${M}.Resource`], ["actions", 2, `enum ${M}.Action`, { repeated: true }]],
  },
  // role.proto
  { name: "RoleSpec", fields: [["description", 1, "string"]] },
  {
    name: "Role",
    fields: [
      ["id", 1, `${M}.RoleIdentifier`],
      ["permissions", 2, `${M}.Permission`, { repeated: true }],
      ["role_spec", 3, `${M}.RoleSpec`],
      ["role_type", 4, `enum ${M}.RoleType`],
      ["actions", 5, `enum ${M}.Action`, { repeated: true }],
    ],
  },
  // policy.proto
  { name: "PolicyBinding", fields: [["role_id", 1, `${M}.RoleIdentifier`], ["resource", 2, `${M}.Resource`]] },
  {
    name: "Policy",
    fields: [
      ["id", 1, `${M}.PolicyIdentifier`],
      ["bindings", 2, `${M}.PolicyBinding`, { repeated: true }],
      ["description", 3, "string"],
    ],
  },
  // identity.proto
  {
    name: "UserSpec",
    fields: [
      ["first_name", 1, "string"],
      ["last_name", 2, "string"],
      ["email", 3, "string"],
      ["organization", 4, "string"],
      ["user_handle", 5, "string"],
      ["groups", 6, "string", { repeated: true }],
      ["photo_url", 7, "string"],
    ],
  },
  {
    name: "User",
    fields: [
      ["id", 1, `${M}.UserIdentifier`],
      ["spec", 2, `${M}.UserSpec`],
      ["roles", 3, `${M}.Role`, { repeated: true }],
      ["policies", 4, `${M}.Policy`, { repeated: true }],
    ],
  },
  { name: "AppSpec", fields: [["name", 1, "string"], ["organization", 2, "string"]] },
  { name: "Application", fields: [["id", 1, `${M}.ApplicationIdentifier`], ["spec", 2, `${M}.AppSpec`]] },
  {
    name: "EnrichedIdentity",
    fields: [
      ["user", 1, `${M}.User`, { oneof: "principal" }],
      ["application", 2, `${M}.Application`, { oneof: "principal" }],
    ],
  },
], [
  {
    name: "RoleType",
    values: [
      "ROLE_TYPE_NONE",
      "ROLE_TYPE_ADMIN",
      "ROLE_TYPE_CONTRIBUTOR",
      "ROLE_TYPE_VIEWER",
      "ROLE_TYPE_CUSTOM",
      "ROLE_TYPE_CLUSTER_MANAGER",
      "ROLE_TYPE_FLYTE_PROJECT_ADMIN",
      "ROLE_TYPE_SERVERLESS_VIEWER",
      "ROLE_TYPE_SERVERLESS_CONTRIBUTOR",
      "ROLE_TYPE_SUPPORT",
      "ROLE_TYPE_SYSTEM_PROVISIONED_ACCESS",
    ],
  },
  {
    name: "Action",
    values: [
      "ACTION_NONE",
      "ACTION_CREATE",
      "ACTION_READ",
      "ACTION_UPDATE",
      "ACTION_DELETE",
      "ACTION_VIEW_FLYTE_INVENTORY",
      "ACTION_VIEW_FLYTE_EXECUTIONS",
      "ACTION_REGISTER_FLYTE_INVENTORY",
      "ACTION_CREATE_FLYTE_EXECUTIONS",
      "ACTION_ADMINISTER_PROJECT",
      "ACTION_MANAGE_PERMISSIONS",
      "ACTION_ADMINISTER_ACCOUNT",
      "ACTION_MANAGE_CLUSTER",
      "ACTION_EDIT_EXECUTION_RELATED_ATTRIBUTES",
      "ACTION_EDIT_CLUSTER_RELATED_ATTRIBUTES",
      "ACTION_EDIT_UNUSED_ATTRIBUTES",
      "ACTION_SUPPORT_SYSTEM_LOGS",
      "ACTION_VIEW_IDENTITIES",
    ],
  },
]);

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
      ["artifact_id", 6, `${C}.ArtifactVersionId`, { oneof: "value" }],
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
      ["creator", 12, `${M}.EnrichedIdentity`],
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
  "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
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
