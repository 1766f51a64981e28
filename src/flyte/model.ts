/**
 * Flyte v2 `flyteidl2.app` messages as their proto3 JSON shapes (what Go's
 * `protojson` prints): lowerCamelCase field names, enum values as their names,
 * 64-bit integers as strings, timestamps as RFC 3339 UTC strings, and fields at
 * their default value omitted. Requests are parsed by the Connect layer from
 * the protobuf descriptors (src/flyte/proto/, src/service/connect/requests.ts).
 * @module
 */

/** `flyteidl2.app.Identifier`. */
export interface Identifier {
  org?: string;
  project?: string;
  domain?: string;
  name?: string;
}

/** `flyteidl2.app.Meta` — the watcher only ever sets `id`. */
export interface Meta {
  id?: Identifier;
  /** uint64, so a JSON string. Never set by the watcher. */
  revision?: string;
  labels?: Record<string, string>;
  codeBundleUri?: string;
  sourceCode?: { link?: string };
}

/** `flyteidl2.app.Status.DeploymentStatus`, by name. */
export type DeploymentStatus =
  | "DEPLOYMENT_STATUS_UNSPECIFIED"
  | "DEPLOYMENT_STATUS_UNASSIGNED"
  | "DEPLOYMENT_STATUS_ASSIGNED"
  | "DEPLOYMENT_STATUS_PENDING"
  | "DEPLOYMENT_STATUS_STOPPED"
  | "DEPLOYMENT_STATUS_STARTED"
  | "DEPLOYMENT_STATUS_FAILED"
  | "DEPLOYMENT_STATUS_ACTIVE"
  | "DEPLOYMENT_STATUS_SCALING_UP"
  | "DEPLOYMENT_STATUS_SCALING_DOWN"
  | "DEPLOYMENT_STATUS_DEPLOYING";

/** Every `DeploymentStatus` name, in enum-number order (index = number). */
export const DEPLOYMENT_STATUSES: readonly DeploymentStatus[] = [
  "DEPLOYMENT_STATUS_UNSPECIFIED",
  "DEPLOYMENT_STATUS_UNASSIGNED",
  "DEPLOYMENT_STATUS_ASSIGNED",
  "DEPLOYMENT_STATUS_PENDING",
  "DEPLOYMENT_STATUS_STOPPED",
  "DEPLOYMENT_STATUS_STARTED",
  "DEPLOYMENT_STATUS_FAILED",
  "DEPLOYMENT_STATUS_ACTIVE",
  "DEPLOYMENT_STATUS_SCALING_UP",
  "DEPLOYMENT_STATUS_SCALING_DOWN",
  "DEPLOYMENT_STATUS_DEPLOYING",
];

/** `flyteidl2.app.Status.Substate`, by name (never set by the watcher). */
export type Substate =
  | "SUBSTATE_UNSPECIFIED"
  | "PULLING_IMAGE"
  | "INITIALIZING"
  | "WEBHOOK_ERROR"
  | "IMAGE_PULL_ERROR"
  | "SECRET_MOUNT_ERROR"
  | "CRASH_LOOP"
  | "OOM_KILLED"
  | "RUNNING"
  | "SCALED_TO_ZERO"
  | "SCALING_FROM_ZERO"
  | "SCALING_UP"
  | "SCALING_DOWN";

/** `flyteidl2.app.Condition`. The watcher sets only the first three fields. */
export interface Condition {
  lastTransitionTime?: string;
  deploymentStatus?: DeploymentStatus;
  message?: string;
  revision?: string;
  actor?: Record<string, unknown>;
  substate?: Substate;
  deploymentId?: string;
}

/** `flyteidl2.app.Ingress`. The watcher sets only `publicUrl`. */
export interface Ingress {
  publicUrl?: string;
  cnameUrl?: string;
  vpcUrl?: string;
}

/** `flyteidl2.app.K8sMetadata`. */
export interface K8sMetadata {
  namespace?: string;
}

/** `flyteidl2.app.Status`. */
export interface Status {
  assignedCluster?: string;
  currentReplicas?: number;
  ingress?: Ingress;
  createdAt?: string;
  lastUpdatedAt?: string;
  conditions?: Condition[];
  leaseExpiration?: string;
  k8sMetadata?: K8sMetadata;
  materializedInputs?: { items?: Record<string, unknown>[]; revision?: string };
  lastStartedAt?: string;
  lastAssignedCluster?: string;
}

/** proto3 JSON of `flyteidl2.app.Spec` (decoded from the `flyte.org/spec` annotation, see `spec.ts`). */
export type Spec = Record<string, unknown>;

/** `flyteidl2.app.App`. */
export interface App {
  metadata?: Meta;
  spec?: Spec;
  status?: Status;
}

/** `flyteidl2.app.WatchResponse`: exactly one event member (the oneof name never appears in JSON). */
export type WatchResponse =
  | { createEvent: { app: App } }
  | { updateEvent: { updatedApp: App; oldApp?: App } }
  | { deleteEvent: { app: App } };

/** Which of its three cases a {@link WatchResponse} is: its one key. */
export type WatchEventKind = "createEvent" | "updateEvent" | "deleteEvent";

/** The case of `e` (the one place that tells them apart). */
export function watchEventKind(e: WatchResponse): WatchEventKind {
  return "createEvent" in e ? "createEvent" : "updateEvent" in e ? "updateEvent" : "deleteEvent";
}

/** The App a {@link WatchResponse} carries. */
export function appOf(e: WatchResponse): App {
  return "createEvent" in e ? e.createEvent.app : "updateEvent" in e ? e.updateEvent.updatedApp : e.deleteEvent.app;
}

/** `flyteidl2.common.ClusterIdentifier`. */
export interface ClusterIdentifier {
  organization?: string;
  name?: string;
}

/** `flyteidl2.common.ProjectIdentifier`. */
export interface ProjectIdentifier {
  organization?: string;
  domain?: string;
  name?: string;
}

/**
 * `flyteidl2.app.WatchRequest`, normalised: at most one `target` member is set
 * (the oneof); none set is accepted, as in Flyte (no validation interceptor).
 */
export interface WatchRequest {
  org?: string;
  clusterId?: ClusterIdentifier;
  project?: ProjectIdentifier;
  appId?: Identifier;
}

/** `flyteidl2.common.Sort`. */
export interface Sort {
  key?: string;
  direction?: "DESCENDING" | "ASCENDING";
}

/** `flyteidl2.common.Filter` (kept opaque: the data plane ignores filters). */
export type Filter = Record<string, unknown>;

/** `flyteidl2.common.ListRequest`. */
export interface CommonListRequest {
  limit?: number;
  token?: string;
  sortBy?: Sort;
  filters?: Filter[];
  rawFilters?: string[];
  sortByFields?: Sort[];
}

/** `flyteidl2.app.ConsumedArtifactFilter`. */
export interface ConsumedArtifactFilter {
  project?: string;
  domain?: string;
  name?: string;
  version?: string;
}

/** `flyteidl2.app.ListRequest`, normalised; `org`/`clusterId`/`project`/`artifact` form the `filter_by` oneof. */
export interface ListRequest {
  request?: CommonListRequest;
  org?: string;
  clusterId?: ClusterIdentifier;
  project?: ProjectIdentifier;
  artifact?: ConsumedArtifactFilter;
  disableIdentityEnrichment?: boolean;
  includeTotalCount?: boolean;
}

/** `flyteidl2.app.ListResponse`. `totalCount` is an int64 (JSON string); the data plane never sets it. */
export interface ListResponse {
  apps?: App[];
  token?: string;
  totalCount?: string;
}

/** Flyte's `internalApps` config keys we use. */
export interface AppsConfig {
  /** Public URL host suffix; "" means no ingress. */
  baseDomain: string;
  /** URL scheme; "" is treated as "https". */
  scheme: string;
  /** Appended as `:port` when non-zero. */
  ingressAppsPort: number;
  /** Per-subscriber buffer size. */
  watchBufferSize: number;
}

/** Flyte's defaults (`app/config/config.go`, section `internalApps`). */
export const DEFAULT_APPS_CONFIG: AppsConfig = Object.freeze({
  baseDomain: "",
  scheme: "",
  ingressAppsPort: 0,
  watchBufferSize: 100,
});
