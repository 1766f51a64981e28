/**
 * KService → Flyte `App` conversion (`kserviceToApp`, `kserviceToStatus`,
 * `knativeCondToAppCondition` in flyteorg/flyte `app/internal/k8s/app_client.go`), as a pure
 * function: the one impure input, `currentReplicas` (a Revision GET in Go), comes from the caller.
 * Deliberate divergences are listed in docs/flyte-compatibility.md.
 * @module
 */
import type { Logger } from "../log.ts";
import type { KubeObject } from "../watch/types.ts";
import type { App, AppsConfig, Condition, DeploymentStatus, Identifier, Spec, Status } from "./model.ts";
import { goQuote } from "./gostrings.ts";
import { publicIngress } from "./naming.ts";
import { createSpecDecoder } from "./spec.ts";
import { SpecSchema } from "./proto/spec_pb.ts";
import { formatInstant, type Instant, isZero, later, parseInstant, toProtoTimestamp } from "./timestamps.ts";

/** Label keys Flyte writes on app KServices (and the Knative ones it reads). */
export const LABELS = Object.freeze({
  /** `"true"` on every KService Flyte manages; the watch selector. */
  APP_MANAGED: "flyte.org/app-managed",
  PROJECT: "flyte.org/project",
  DOMAIN: "flyte.org/domain",
  APP_NAME: "flyte.org/app-name",
  /** `"true"` while the app is stopped: drives the STOPPED status and desiredState. */
  APP_STOPPED: "flyte.org/app-stopped",
  /** `cluster-local` while stopped (not read by the conversion). */
  VISIBILITY: "networking.knative.dev/visibility",
  KNATIVE_SERVICE: "serving.knative.dev/service",
  KNATIVE_REVISION: "serving.knative.dev/revision",
});

/** Annotation keys Flyte writes on app KServices. */
export const ANNOTATIONS = Object.freeze({
  /** `{project}/{domain}/{name}`: the identity source (required). */
  APP_ID: "flyte.org/app-id",
  /** The org; "" or missing means {@link DEFAULT_ORG}. */
  APP_ORG: "flyte.org/app-org",
  /** base64 of the binary-protobuf Spec. */
  SPEC: "flyte.org/spec",
  /** 16 hex chars of sha256(spec bytes); not read by the conversion. */
  SPEC_SHA: "flyte.org/spec-sha",
});

/** The label value that marks a managed / stopped app. */
export const LABEL_TRUE = "true";
/** Flyte's `secret.DefaultOrganization`. */
export const DEFAULT_ORG = "flyte";
/** Message of the stopped condition. */
export const STOPPED_MESSAGE = "App scaled to zero";

/** A KService that cannot be converted to an App (missing or malformed `flyte.org/app-id`). */
export class AppConversionError extends Error {
  /** `namespace/name` of the KService. */
  readonly ksvc: string;
  constructor(ksvc: string, message: string) {
    super(message);
    this.name = "AppConversionError";
    this.ksvc = ksvc;
  }
}

function ksvcKey(ksvc: KubeObject): string {
  const ns = ksvc.metadata?.namespace;
  const name = ksvc.metadata?.name ?? "";
  return ns ? `${ns}/${name}` : name;
}

/**
 * A value of a KService's `map[string]string` (labels, annotations) as Go decodes it: JSON `null`
 * is the empty string; a missing key is `undefined`. (Other JSON types make Go's client refuse the
 * whole object; appwatch ignores the value instead: see docs/flyte-compatibility.md.)
 */
function goMapValue(map: Record<string, unknown> | undefined | null, key: string): string | undefined {
  if (map === null || typeof map !== "object" || !Object.hasOwn(map, key)) return undefined;
  const value = map[key];
  return typeof value === "string" ? value : value === null ? "" : undefined;
}

/**
 * The app identity from the `flyte.org/app-id` annotation (split on the first two "/") and
 * `flyte.org/app-org` (default "flyte"). Labels, name and namespace are not used.
 * Throws {@link AppConversionError} with Flyte's exact messages.
 */
export function appIdentity(ksvc: KubeObject): Identifier {
  const name = ksvc.metadata?.name ?? "";
  const annotations = ksvc.metadata?.annotations;
  const value = goMapValue(annotations, ANNOTATIONS.APP_ID);
  if (value === undefined) {
    throw new AppConversionError(ksvcKey(ksvc), `KService ${name} missing flyte.org/app-id annotation`);
  }
  // Go strings.SplitN(value, "/", 3)
  const first = value.indexOf("/");
  const second = first < 0 ? -1 : value.indexOf("/", first + 1);
  if (second < 0) {
    throw new AppConversionError(
      ksvcKey(ksvc),
      `KService ${name} has malformed flyte.org/app-id annotation: ${goQuote(value)}`,
    );
  }
  const org = goMapValue(annotations, ANNOTATIONS.APP_ORG);
  return {
    org: org !== undefined && org !== "" ? org : DEFAULT_ORG,
    project: value.slice(0, first),
    domain: value.slice(first + 1, second),
    name: value.slice(second + 1),
  };
}

// ---------------------------------------------------------------------------------------------
// Timestamps

/**
 * The deterministic stand-in for Go's `now()`: the latest `lastTransitionTime` among the
 * KService's status conditions, else its `creationTimestamp`; `undefined` when it has neither.
 */
export function stableTime(ksvc: KubeObject): string | undefined {
  let latest: Instant | undefined;
  for (const c of knativeConditions(ksvc)) {
    const t = parseInstant(c.lastTransitionTime);
    if (t && !isZero(t)) latest = later(latest, t);
  }
  if (!latest) {
    const created = parseInstant(ksvc.metadata?.creationTimestamp);
    if (created && !isZero(created)) latest = created;
  }
  return latest ? formatInstant(latest) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Conditions

interface KnativeCondition {
  type?: unknown;
  status?: unknown;
  reason?: unknown;
  message?: unknown;
  lastTransitionTime?: unknown;
}

function knativeConditions(ksvc: KubeObject): KnativeCondition[] {
  const status = ksvc.status;
  if (!status || typeof status !== "object") return [];
  const conditions = (status as { conditions?: unknown }).conditions;
  if (!Array.isArray(conditions)) return [];
  return conditions.filter((c): c is KnativeCondition => c !== null && typeof c === "object" && !Array.isArray(c));
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

const DEFAULT_MESSAGES: Record<string, string> = {
  ConfigurationsReady: "Configuration is ready",
  RoutesReady: "Routes are ready",
  Ready: "Service is ready",
};

/** Maps Knative conditions (stored order kept) to App conditions per Flyte's rules. */
export function mapConditions(ksvc: KubeObject): Condition[] {
  const conditions = knativeConditions(ksvc);
  const ready = conditions.find((c) => c.type === "Ready");
  const serviceReady = ready?.status === "True";
  const serviceFailed = ready?.status === "False";
  let fallback: string | undefined | null = null; // computed once, on first need
  const out: Condition[] = [];
  for (const c of conditions) {
    const type = text(c.type);
    const status = text(c.status);
    if (type === "RoutesReady" && status === "Unknown") continue;
    let phase: DeploymentStatus;
    if (status === "True") phase = serviceReady ? "DEPLOYMENT_STATUS_ACTIVE" : "DEPLOYMENT_STATUS_DEPLOYING";
    else if (status === "False") {
      if (!serviceFailed) continue;
      phase = "DEPLOYMENT_STATUS_FAILED";
    } else phase = "DEPLOYMENT_STATUS_PENDING";
    const reason = text(c.reason);
    const msg = text(c.message);
    const message = reason !== "" ? `${reason}: ${msg}` : msg !== "" ? msg : (DEFAULT_MESSAGES[type] ?? "");
    let ltt = toProtoTimestamp(c.lastTransitionTime);
    if (ltt === undefined) {
      if (fallback === null) fallback = stableTime(ksvc);
      ltt = fallback;
    }
    const cond: Condition = {};
    if (ltt !== undefined) cond.lastTransitionTime = ltt;
    cond.deploymentStatus = phase;
    if (message !== "") cond.message = message;
    out.push(cond);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// App

function warnWith(logger: Logger | undefined, fields: Record<string, unknown>): Logger | undefined {
  if (!logger) return undefined;
  return { ...logger, warn: (msg, f) => logger.warn(msg, { ...fields, ...f }) };
}

/** The identifier as proto3 JSON prints it: empty parts (defaults) are omitted. */
function protoIdentifier(id: Identifier): Identifier {
  if (id.project !== "" && id.domain !== "" && id.name !== "") return id;
  const out: Identifier = { org: id.org };
  if (id.project !== "") out.project = id.project;
  if (id.domain !== "") out.domain = id.domain;
  if (id.name !== "") out.name = id.name;
  return out;
}

/** Spec keys after `desiredState` (field 5), in field order: where a new `desiredState` goes before. */
const AFTER_DESIRED_STATE = new Set(
  SpecSchema.fields.filter((f) => f.number > SpecSchema.field.desiredState!.number).map((f) => f.jsonName),
);

/** The spec with `desiredState` set, at its field position (Go's protojson prints fields in order). */
function withDesiredState(spec: Spec, state: NonNullable<Spec["desiredState"]>): Spec {
  if ("desiredState" in spec) return { ...spec, desiredState: state };
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const [k, v] of Object.entries(spec)) {
    if (!placed && AFTER_DESIRED_STATE.has(k)) {
      out.desiredState = state;
      placed = true;
    }
    out[k] = v;
  }
  if (!placed) out.desiredState = state;
  return out as Spec;
}

/** How many decoded specs and ingresses an {@link AppConverter} keeps by default (oldest out first). */
export const CONVERTER_CACHE_SIZE = 4096;

type Ingress = ReturnType<typeof publicIngress>;

/** A spec text decoded once: its Spec belongs to that one App, not to the cache. */
const SEEN_ONCE = Symbol("seen once");

/** Every object and array below `value` frozen: a cached Spec is shared by the Apps built from it. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Converts KServices to Flyte Apps ({@link kserviceToApp}) for one {@link AppsConfig}, with what
 * makes a stream of them cheap: the decoded Spec memoized by the annotation's text (a KService's
 * spec rarely changes between its watch events, and decoding base64 + protobuf + proto3 JSON is
 * most of a conversion), the public ingress memoized by app-id, and one protobuf decoder. The
 * caches belong to the converter (its owner: the app client). The first App of an annotation text
 * gets a Spec of its own; later Apps of the same text share one, deeply frozen: editing one App's
 * spec cannot change another's.
 * Invalid annotations are not cached, so each one still warns.
 *
 * @example
 * ```ts
 * import { AppConverter } from "./convert.ts";
 * import { DEFAULT_APPS_CONFIG } from "./model.ts";
 * const converter = new AppConverter(DEFAULT_APPS_CONFIG);
 * const app = converter.convert({
 *   apiVersion: "serving.knative.dev/v1",
 *   kind: "Service",
 *   metadata: { name: "web", namespace: "flytesnacks-development", annotations: { "flyte.org/app-id": "flytesnacks/development/web" } },
 * });
 * app.metadata?.id; // { org: "flyte", project: "flytesnacks", domain: "development", name: "web" }
 * ```
 */
export class AppConverter {
  readonly config: AppsConfig;
  readonly #cacheSize: number;
  readonly #decodeSpec = createSpecDecoder();
  /** Decoded specs by annotation text; {@link SEEN_ONCE} for a text decoded once, whose Spec its one App owns. */
  readonly #specs = new Map<string, Spec | typeof SEEN_ONCE>();
  readonly #ingresses = new Map<string, Ingress>();
  readonly #cluster: string | undefined;

  /**
   * `cluster`: the name of the cluster the KServices are from, set as every App's
   * `status.assignedCluster` (Flyte's control plane field; its data plane leaves it empty, and so
   * does a converter without a name).
   */
  constructor(config: AppsConfig, options: { cacheSize?: number; cluster?: string } = {}) {
    this.config = config;
    this.#cacheSize = options.cacheSize ?? CONVERTER_CACHE_SIZE;
    this.#cluster = options.cluster || undefined;
  }

  /** The App of `ksvc`; see {@link kserviceToApp}. */
  convert(ksvc: KubeObject, options: { currentReplicas?: number; logger?: Logger } = {}): App {
    const id = appIdentity(ksvc);
    const annotations = ksvc.metadata?.annotations;
    const spec = this.#spec(goMapValue(annotations, ANNOTATIONS.SPEC), ksvc, options.logger);
    const stopped = goMapValue(ksvc.metadata?.labels, LABELS.APP_STOPPED) === LABEL_TRUE;
    const ingress = stopped ? undefined : this.#ingress(goMapValue(annotations, ANNOTATIONS.APP_ID)!, id);
    return buildApp(ksvc, id, stopped, spec, ingress, options.currentReplicas, this.#cluster);
  }

  #spec(value: string | undefined, ksvc: KubeObject, logger: Logger | undefined): Spec | undefined {
    if (value === undefined) return undefined;
    const hit = this.#specs.get(value);
    if (hit !== undefined && hit !== SEEN_ONCE) return hit;
    const spec = this.#decodeSpec(value, warnWith(logger, { kservice: ksvcKey(ksvc) }));
    if (spec === undefined) return undefined;
    // The first App of a text gets a Spec of its own; from the second on, Apps share one, frozen.
    // (Freezing costs about a fifth of a first-sight conversion, B4 cold: the initial list and
    // specs seen once never pay it.)
    if (hit === undefined) remember(this.#specs, value, SEEN_ONCE, this.#cacheSize);
    else remember(this.#specs, value, deepFreeze(spec), this.#cacheSize);
    return spec;
  }

  /** `publicIngress`, memoized (its KServiceName costs a UTF-8 encode and maybe a SHA-256 per call). */
  #ingress(appId: string, id: Identifier): Ingress {
    if (this.#ingresses.has(appId)) return this.#ingresses.get(appId);
    const ingress = publicIngress(id, this.config);
    remember(this.#ingresses, appId, ingress, this.#cacheSize);
    return ingress;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V, size: number): void {
  if (size <= 0) return;
  if (!map.has(key) && map.size >= size) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/**
 * Converts a KService to a Flyte App (proto3 JSON shape, Go's field order).
 * Pure: same input, same output. `currentReplicas` comes from the caller (the Revision lookup
 * is the client's job); it is ignored for stopped apps, as in Flyte.
 * Throws {@link AppConversionError} when the identity annotation is missing or malformed.
 * One call, nothing kept: to convert a stream of KServices, keep one {@link AppConverter}.
 */
export function kserviceToApp(
  ksvc: KubeObject,
  config: AppsConfig,
  options: { currentReplicas?: number; logger?: Logger } = {},
): App {
  return new AppConverter(config, { cacheSize: 0 }).convert(ksvc, options);
}

/** The App from its parts (Flyte's `KServiceToApp` after the spec and ingress lookups). */
function buildApp(ksvc: KubeObject, id: Identifier, stopped: boolean, decoded: Spec | undefined, ingress: Ingress, replicas: number | undefined, cluster: string | undefined): App {
  let spec = decoded;
  if (spec && stopped) spec = withDesiredState(spec, "DESIRED_STATE_STOPPED");

  let status: Status;
  if (stopped) {
    const cond: Condition = {};
    const at = stableTime(ksvc);
    if (at !== undefined) cond.lastTransitionTime = at;
    cond.deploymentStatus = "DEPLOYMENT_STATUS_STOPPED";
    cond.message = STOPPED_MESSAGE;
    status = cluster ? { assignedCluster: cluster, conditions: [cond] } : { conditions: [cond] };
  } else {
    // assigned_cluster is Status's field 1: first, in Go's field order.
    status = cluster ? { assignedCluster: cluster } : {};
    // Go: uint32(*actualReplicas) from an int32.
    if (replicas !== undefined && Number.isInteger(replicas) && replicas !== 0) status.currentReplicas = replicas >>> 0;
    if (ingress) status.ingress = ingress;
    const createdAt = toProtoTimestamp(ksvc.metadata?.creationTimestamp);
    if (createdAt !== undefined) status.createdAt = createdAt;
    const conditions = mapConditions(ksvc);
    if (conditions.length > 0) status.conditions = conditions;
    const namespace = ksvc.metadata?.namespace;
    status.k8sMetadata = namespace ? { namespace } : {};
  }

  const app: App = { metadata: { id: protoIdentifier(id) } };
  if (spec) app.spec = spec;
  app.status = status;
  return app;
}
