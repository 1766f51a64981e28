/**
 * Descriptors for Flyte's `flyteidl2.app.AppService` and its messages (`App`, `Status`,
 * `Condition`, the Watch/List/Get payloads, …), declared from the field numbers and types of
 * the Flyte IDL (flyteorg/flyte `flyteidl2/app/{app_definition,app_payload,app_service}.proto`,
 * `flyteidl2/common/{identifier,list}.proto`, `flyteidl2/task/task_definition.proto`), on top of
 * the `Spec` closure in `spec_pb.ts`. The Connect routes (`src/service/connect/`) serve this
 * service; protobuf-es's `toJson` of these messages is the same proto3 JSON the rest of appwatch
 * writes by hand.
 * @module
 */
import { createFileRegistry, type DescMessage, type DescService, type FileRegistry } from "@bufbuild/protobuf";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import { DEPLOYMENT_STATUSES } from "../model.ts";
import { file, type ServiceDef } from "./descriptor.ts";
import { APP, COMMON, CORE, registry as specRegistry } from "./spec_pb.ts";

const TASK = "flyteidl2/task/appwatch_task.proto";
const LIST = "flyteidl2/common/appwatch_list.proto";
const SERVICE = "flyteidl2/app/appwatch_app_service.proto";
const TIMESTAMP = ".google.protobuf.Timestamp";
const A = ".flyteidl2.app";
const M = ".flyteidl2.common";

const taskFile = file(TASK, "flyteidl2.task", [], [{ name: "SourceCode", fields: [["link", 1, "string"]] }]);

const listFile = file(LIST, "flyteidl2.common", [], [
  // identifier.proto
  { name: "ProjectIdentifier", fields: [["organization", 1, "string"], ["domain", 2, "string"], ["name", 3, "string"]] },
  // list.proto
  {
    name: "Sort",
    enums: [{ name: "Direction", values: ["DESCENDING", "ASCENDING"] }],
    fields: [["key", 1, "string"], ["direction", 2, `enum ${M}.Sort.Direction`]],
  },
  {
    name: "Filter",
    enums: [{
      name: "Function",
      values: [
        "EQUAL",
        "NOT_EQUAL",
        "GREATER_THAN",
        "GREATER_THAN_OR_EQUAL",
        "LESS_THAN",
        "LESS_THAN_OR_EQUAL",
        "CONTAINS",
        "VALUE_IN",
        ["VALUE_NOT_IN", 9],
        ["ENDS_WITH", 12],
        ["NOT_ENDS_WITH", 13],
        ["CONTAINS_CASE_INSENSITIVE", 14],
        ["EXISTS", 15],
        ["NOT_EXISTS", 16],
      ],
    }],
    fields: [
      ["function", 1, `enum ${M}.Filter.Function`],
      ["field", 2, "string"],
      ["values", 3, "string", { repeated: true }],
    ],
  },
  {
    name: "ListRequest",
    fields: [
      ["limit", 1, "uint32"],
      ["token", 2, "string"],
      ["sort_by", 3, `${M}.Sort`],
      ["filters", 4, `${M}.Filter`, { repeated: true }],
      ["raw_filters", 5, "string", { repeated: true }],
      ["sort_by_fields", 6, `${M}.Sort`, { repeated: true }],
    ],
  },
]);

const appService: ServiceDef = {
  name: "AppService",
  methods: [
    { name: "Create", input: `${A}.CreateRequest`, output: `${A}.CreateResponse` },
    { name: "Get", input: `${A}.GetRequest`, output: `${A}.GetResponse`, noSideEffects: true },
    { name: "Update", input: `${A}.UpdateRequest`, output: `${A}.UpdateResponse` },
    { name: "UpdateStatus", input: `${A}.UpdateStatusRequest`, output: `${A}.UpdateStatusResponse` },
    { name: "Delete", input: `${A}.DeleteRequest`, output: `${A}.DeleteResponse` },
    { name: "List", input: `${A}.ListRequest`, output: `${A}.ListResponse`, noSideEffects: true },
    { name: "Watch", input: `${A}.WatchRequest`, output: `${A}.WatchResponse`, serverStreaming: true, noSideEffects: true },
    { name: "Lease", input: `${A}.LeaseRequest`, output: `${A}.LeaseResponse`, serverStreaming: true },
  ],
};

const app = (n: number): [string, number, string] => ["app", n, `${A}.App`];

const serviceFile = file(SERVICE, "flyteidl2.app", [APP, CORE, COMMON, LIST, TASK, "google/protobuf/timestamp.proto"], [
  // app_definition.proto (Identifier and Spec are in spec_pb.ts)
  {
    name: "Meta",
    fields: [
      ["id", 1, `${A}.Identifier`],
      ["revision", 2, "uint64"],
      ["labels", 3, "map<string,string>"],
      ["code_bundle_uri", 4, "string"],
      ["source_code", 5, ".flyteidl2.task.SourceCode"],
    ],
  },
  { name: "App", fields: [["metadata", 1, `${A}.Meta`], ["spec", 2, `${A}.Spec`], ["status", 3, `${A}.Status`]] },
  {
    name: "Condition",
    fields: [
      ["last_transition_time", 1, TIMESTAMP],
      ["deployment_status", 2, `enum ${A}.Status.DeploymentStatus`],
      ["message", 3, "string"],
      ["revision", 4, "uint64"],
      ["actor", 5, `${M}.EnrichedIdentity`],
      ["substate", 6, `enum ${A}.Status.Substate`],
      ["deployment_id", 7, "string"],
    ],
  },
  {
    name: "Status",
    enums: [
      // Names in enum-number order, shared with the JSON model.
      { name: "DeploymentStatus", values: [...DEPLOYMENT_STATUSES] },
      {
        name: "Substate",
        values: [
          "SUBSTATE_UNSPECIFIED",
          "PULLING_IMAGE",
          "INITIALIZING",
          "WEBHOOK_ERROR",
          "IMAGE_PULL_ERROR",
          "SECRET_MOUNT_ERROR",
          "CRASH_LOOP",
          "OOM_KILLED",
          "RUNNING",
          "SCALED_TO_ZERO",
          "SCALING_FROM_ZERO",
          "SCALING_UP",
          "SCALING_DOWN",
        ],
      },
    ],
    fields: [
      ["assigned_cluster", 1, "string"],
      ["current_replicas", 2, "uint32"],
      ["ingress", 3, `${A}.Ingress`],
      ["created_at", 4, TIMESTAMP],
      ["last_updated_at", 5, TIMESTAMP],
      ["conditions", 6, `${A}.Condition`, { repeated: true }],
      ["lease_expiration", 7, TIMESTAMP],
      ["k8s_metadata", 8, `${A}.K8sMetadata`],
      ["materialized_inputs", 9, `${A}.MaterializedInputs`],
      ["last_started_at", 10, TIMESTAMP],
      ["last_assigned_cluster", 11, "string"],
    ],
  },
  { name: "K8sMetadata", fields: [["namespace", 1, "string"]] },
  { name: "Ingress", fields: [["public_url", 1, "string"], ["cname_url", 2, "string"], ["vpc_url", 3, "string"]] },
  {
    name: "MaterializedInputs",
    fields: [["items", 1, `${A}.MaterializedInput`, { repeated: true }], ["revision", 2, "uint64"]],
  },
  {
    name: "MaterializedInput",
    fields: [["name", 1, "string"], ["artifact_id", 2, ".flyteidl2.core.ArtifactID", { oneof: "value" }]],
  },
  // app_payload.proto
  { name: "CreateRequest", fields: [app(1)] },
  { name: "CreateResponse", fields: [app(1)] },
  {
    name: "GetRequest",
    fields: [["app_id", 1, `${A}.Identifier`, { oneof: "identifier" }], ["ingress", 2, `${A}.Ingress`, { oneof: "identifier" }]],
  },
  { name: "GetResponse", fields: [app(1)] },
  { name: "UpdateRequest", fields: [app(1), ["reason", 2, "string"]] },
  { name: "UpdateResponse", fields: [app(1)] },
  { name: "DeleteRequest", fields: [["app_id", 1, `${A}.Identifier`]] },
  { name: "DeleteResponse", fields: [] },
  {
    name: "ConsumedArtifactFilter",
    fields: [["project", 1, "string"], ["domain", 2, "string"], ["name", 3, "string"], ["version", 4, "string"]],
  },
  {
    name: "ListRequest",
    fields: [
      ["request", 1, `${M}.ListRequest`],
      ["org", 2, "string", { oneof: "filter_by" }],
      ["cluster_id", 3, `${M}.ClusterIdentifier`, { oneof: "filter_by" }],
      ["project", 4, `${M}.ProjectIdentifier`, { oneof: "filter_by" }],
      ["artifact", 7, `${A}.ConsumedArtifactFilter`, { oneof: "filter_by" }],
      ["disable_identity_enrichment", 5, "bool"],
      ["include_total_count", 6, "bool"],
    ],
  },
  {
    name: "ListResponse",
    fields: [["apps", 1, `${A}.App`, { repeated: true }], ["token", 2, "string"], ["total_count", 3, "int64"]],
  },
  {
    name: "WatchRequest",
    fields: [
      ["org", 1, "string", { oneof: "target" }],
      ["cluster_id", 2, `${M}.ClusterIdentifier`, { oneof: "target" }],
      ["project", 3, `${M}.ProjectIdentifier`, { oneof: "target" }],
      ["app_id", 4, `${A}.Identifier`, { oneof: "target" }],
    ],
  },
  { name: "CreateEvent", fields: [app(1)] },
  { name: "UpdateEvent", fields: [["updated_app", 1, `${A}.App`], ["old_app", 2, `${A}.App`]] },
  { name: "DeleteEvent", fields: [app(1)] },
  {
    name: "WatchResponse",
    fields: [
      ["create_event", 1, `${A}.CreateEvent`, { oneof: "event" }],
      ["update_event", 2, `${A}.UpdateEvent`, { oneof: "event" }],
      ["delete_event", 3, `${A}.DeleteEvent`, { oneof: "event" }],
    ],
  },
  { name: "UpdateStatusRequest", fields: [app(1)] },
  { name: "UpdateStatusResponse", fields: [app(1)] },
  { name: "LeaseRequest", fields: [["id", 1, `${M}.ClusterIdentifier`]] },
  { name: "LeaseResponse", fields: [["apps", 1, `${A}.App`, { repeated: true }]] },
], [], [appService]);

/** The registry holding the AppService declarations, the `Spec` closure and the well-known types they use. */
export const appRegistry: FileRegistry = createFileRegistry(serviceFile, (name) => {
  if (name === TASK) return taskFile;
  if (name === LIST) return listFile;
  if (name === "google/protobuf/timestamp.proto") return file_google_protobuf_timestamp;
  return specRegistry.getFile(name);
});

function mustMessage(typeName: string): DescMessage {
  const desc = appRegistry.getMessage(typeName);
  if (!desc) throw new Error(`descriptor ${typeName} missing`);
  return desc;
}

/** `flyteidl2.app.AppService`: Create, Get, Update, UpdateStatus, Delete, List, Watch (server streaming), Lease (server streaming). */
export const AppService: DescService = (() => {
  const desc = appRegistry.getService("flyteidl2.app.AppService");
  if (!desc) throw new Error("descriptor flyteidl2.app.AppService missing");
  return desc;
})();

/** Descriptor of `flyteidl2.app.App`. */
export const AppSchema: DescMessage = mustMessage("flyteidl2.app.App");
/** Descriptor of `flyteidl2.app.WatchRequest`. */
export const WatchRequestSchema: DescMessage = mustMessage("flyteidl2.app.WatchRequest");
/** Descriptor of `flyteidl2.app.WatchResponse`. */
export const WatchResponseSchema: DescMessage = mustMessage("flyteidl2.app.WatchResponse");
/** Descriptor of `flyteidl2.app.ListRequest`. */
export const ListRequestSchema: DescMessage = mustMessage("flyteidl2.app.ListRequest");
/** Descriptor of `flyteidl2.app.ListResponse`. */
export const ListResponseSchema: DescMessage = mustMessage("flyteidl2.app.ListResponse");
/** Descriptor of `flyteidl2.app.GetRequest`. */
export const GetRequestSchema: DescMessage = mustMessage("flyteidl2.app.GetRequest");
/** Descriptor of `flyteidl2.app.GetResponse`. */
export const GetResponseSchema: DescMessage = mustMessage("flyteidl2.app.GetResponse");
