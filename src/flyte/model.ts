/**
 * Flyte v2 `flyteidl2.app` messages as their proto3 JSON shapes (what Go's
 * `protojson` prints): lowerCamelCase field names, enum values as their names,
 * 64-bit integers as strings, timestamps as RFC 3339 UTC strings, and fields at
 * their default value omitted. Plus the valibot schemas for everything we
 * accept from outside (requests and config).
 * @module
 */
import * as v from "valibot";

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

// ---------------------------------------------------------------------------------------------
// Schemas for input from outside. proto3 JSON parsing rules (§0): both the json name and the
// proto (snake_case) name are accepted, `null` means "default", unknown fields are discarded (as
// connect-go's JSON codec does: protojson with DiscardUnknown), a oneof may have at most one
// member set, integers may be numbers or decimal strings.

const str = v.nullish(v.string());
const bool = v.nullish(v.boolean());
const U32_MAX = 4294967295;
/** uint32 as proto3 JSON: a number or a decimal string, integral, 0..2^32-1. */
const uint32 = v.nullish(
  v.pipe(
    v.union([v.number(), v.pipe(v.string(), v.regex(/^\d+$/))]),
    v.transform((x) => Number(x)),
    v.integer(),
    v.minValue(0),
    v.maxValue(U32_MAX),
  ),
);

/** Drops null/undefined members (proto3 JSON `null` = default). */
function compact<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(o)) if (val !== null && val !== undefined) out[k] = val;
  return out as T;
}

/** `flyteidl2.app.Identifier` as proto3 JSON. */
export const IdentifierSchema: v.GenericSchema<unknown, Identifier> = v.pipe(
  v.object({ org: str, project: str, domain: str, name: str }),
  v.transform((o): Identifier => compact({ org: o.org, project: o.project, domain: o.domain, name: o.name }) as Identifier),
);

const ClusterIdentifierSchema = v.pipe(
  v.object({ organization: str, name: str }),
  v.transform((o): ClusterIdentifier => compact({ organization: o.organization, name: o.name }) as ClusterIdentifier),
);

const ProjectIdentifierSchema = v.pipe(
  v.object({ organization: str, domain: str, name: str }),
  v.transform((o): ProjectIdentifier => compact({ organization: o.organization, domain: o.domain, name: o.name }) as ProjectIdentifier),
);

/** Picks `json` or `proto` spelling; both set is an error (as protojson: duplicate field). */
function either<T>(a: T | null | undefined, b: T | null | undefined): T | undefined {
  return (a ?? b) ?? undefined;
}

function bothSpellings(o: Record<string, unknown>, pairs: [string, string][]): boolean {
  return pairs.every(([a, b]) => !(a in o && b in o && o[a] !== undefined && o[b] !== undefined));
}

function oneofCount(o: Record<string, unknown>, keys: string[]): number {
  return keys.filter((k) => o[k] !== undefined && o[k] !== null).length;
}

/** `flyteidl2.app.WatchRequest` as proto3 JSON (json or proto field names). */
export const WatchRequestSchema: v.GenericSchema<unknown, WatchRequest> = v.pipe(
  v.object({
    org: str,
    clusterId: v.nullish(ClusterIdentifierSchema),
    cluster_id: v.nullish(ClusterIdentifierSchema),
    project: v.nullish(ProjectIdentifierSchema),
    appId: v.nullish(IdentifierSchema),
    app_id: v.nullish(IdentifierSchema),
  }),
  v.check((o) => bothSpellings(o, [["clusterId", "cluster_id"], ["appId", "app_id"]]), "a field is given under both its names"),
  v.check(
    (o) => oneofCount(o, ["org", "clusterId", "cluster_id", "project", "appId", "app_id"]) <= 1,
    "WatchRequest.target: more than one member of the oneof is set",
  ),
  v.transform((o): WatchRequest =>
    compact({ org: o.org, clusterId: either(o.clusterId, o.cluster_id), project: o.project, appId: either(o.appId, o.app_id) }) as WatchRequest
  ),
);

const SortSchema = v.pipe(
  v.object({
    key: str,
    direction: v.nullish(v.union([v.picklist(["DESCENDING", "ASCENDING"]), v.picklist([0, 1])])),
  }),
  v.transform((o): Sort =>
    compact({
      key: o.key,
      direction: o.direction === 0 ? "DESCENDING" : o.direction === 1 ? "ASCENDING" : o.direction,
    }) as Sort
  ),
);

const CommonListRequestSchema = v.pipe(
  v.object({
    limit: uint32,
    token: str,
    sortBy: v.nullish(SortSchema),
    sort_by: v.nullish(SortSchema),
    filters: v.nullish(v.array(v.record(v.string(), v.unknown()))),
    rawFilters: v.nullish(v.array(v.string())),
    raw_filters: v.nullish(v.array(v.string())),
    sortByFields: v.nullish(v.array(SortSchema)),
    sort_by_fields: v.nullish(v.array(SortSchema)),
  }),
  v.check(
    (o) => bothSpellings(o, [["sortBy", "sort_by"], ["rawFilters", "raw_filters"], ["sortByFields", "sort_by_fields"]]),
    "a field is given under both its names",
  ),
  v.transform((o): CommonListRequest =>
    compact({
      limit: o.limit,
      token: o.token,
      sortBy: either(o.sortBy, o.sort_by),
      filters: o.filters,
      rawFilters: either(o.rawFilters, o.raw_filters),
      sortByFields: either(o.sortByFields, o.sort_by_fields),
    }) as CommonListRequest
  ),
);

const ConsumedArtifactFilterSchema = v.pipe(
  v.object({ project: str, domain: str, name: str, version: str }),
  v.transform((o): ConsumedArtifactFilter => compact({ ...o }) as ConsumedArtifactFilter),
);

/** `flyteidl2.app.ListRequest` as proto3 JSON (json or proto field names). */
export const ListRequestSchema: v.GenericSchema<unknown, ListRequest> = v.pipe(
  v.object({
    request: v.nullish(CommonListRequestSchema),
    org: str,
    clusterId: v.nullish(ClusterIdentifierSchema),
    cluster_id: v.nullish(ClusterIdentifierSchema),
    project: v.nullish(ProjectIdentifierSchema),
    artifact: v.nullish(ConsumedArtifactFilterSchema),
    disableIdentityEnrichment: bool,
    disable_identity_enrichment: bool,
    includeTotalCount: bool,
    include_total_count: bool,
  }),
  v.check(
    (o) =>
      bothSpellings(o, [
        ["clusterId", "cluster_id"],
        ["disableIdentityEnrichment", "disable_identity_enrichment"],
        ["includeTotalCount", "include_total_count"],
      ]),
    "a field is given under both its names",
  ),
  v.check(
    (o) => oneofCount(o, ["org", "clusterId", "cluster_id", "project", "artifact"]) <= 1,
    "ListRequest.filter_by: more than one member of the oneof is set",
  ),
  v.transform((o): ListRequest =>
    compact({
      request: o.request,
      org: o.org,
      clusterId: either(o.clusterId, o.cluster_id),
      project: o.project,
      artifact: o.artifact,
      disableIdentityEnrichment: either(o.disableIdentityEnrichment, o.disable_identity_enrichment),
      includeTotalCount: either(o.includeTotalCount, o.include_total_count),
    }) as ListRequest
  ),
);

/**
 * Our `internalApps` keys, each optional (missing keys take {@link DEFAULT_APPS_CONFIG});
 * other Flyte keys (enabled, defaultRequestTimeout, …) are accepted and ignored.
 */
export const AppsConfigSchema: v.GenericSchema<unknown, AppsConfig> = v.pipe(
  v.looseObject({
    baseDomain: v.optional(v.string()),
    scheme: v.optional(v.string()),
    ingressAppsPort: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))),
    watchBufferSize: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  }),
  v.transform((o): AppsConfig => ({
    baseDomain: o.baseDomain ?? DEFAULT_APPS_CONFIG.baseDomain,
    scheme: o.scheme ?? DEFAULT_APPS_CONFIG.scheme,
    ingressAppsPort: o.ingressAppsPort ?? DEFAULT_APPS_CONFIG.ingressAppsPort,
    watchBufferSize: o.watchBufferSize ?? DEFAULT_APPS_CONFIG.watchBufferSize,
  })),
);
