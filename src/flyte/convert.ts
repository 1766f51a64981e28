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
import { specFromAnnotation } from "./spec.ts";
import { SpecSchema } from "./proto/spec_pb.ts";

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

/** A point in time as protobuf holds it. */
interface Instant {
  seconds: number;
  nanos: number;
  /** Its canonical text, when the input already was (see {@link parseCanonical}). */
  text?: string;
}

/**
 * What Go's `time.Parse(time.RFC3339, …)` accepts (as `metav1.Time` uses it; its lenient general
 * path, not only the strict fast path): a 1- or 2-digit hour, a fraction after `.` or `,` (digits
 * past the 9th ignored), `Z` or a `±hh:mm` offset of up to 24 hours and 60 minutes.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;
const MIN_SECONDS = -62135596800; // 0001-01-01T00:00:00Z
const MAX_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

/** Days in month `mo` (1–12) of year `y` (proleptic Gregorian). */
function daysIn(y: number, mo: number): number {
  if (mo === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
}

/** Two ASCII digits at `i`, or -1. */
function digits2(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * Fast path for the form Kubernetes writes (`YYYY-MM-DDTHH:MM:SSZ`, years 1970–9999): no regex,
 * no Date. Its canonical protobuf text is the input itself. `null`: not this form (use the
 * general parser); `undefined`: this form but not a valid time.
 */
function parseCanonical(value: string): Instant | undefined | null {
  if (
    value.length !== 20 || value.charCodeAt(19) !== 90 /* Z */ || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 ||
    value.charCodeAt(10) !== 84 /* T */ || value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58
  ) return null;
  const hi = digits2(value, 0);
  const lo = digits2(value, 2);
  const mo = digits2(value, 5);
  const d = digits2(value, 8);
  const h = digits2(value, 11);
  const mi = digits2(value, 14);
  const sec = digits2(value, 17);
  if (hi < 0 || lo < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0) return null;
  const y = hi * 100 + lo;
  if (y < 1970) return null; // Date.UTC maps years 0–99 to 19xx: leave old years to the general path
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59) return undefined;
  return { seconds: Date.UTC(y, mo - 1, d, h, mi, sec) / 1000, nanos: 0, text: value };
}

function parseInstant(value: unknown): Instant | undefined {
  if (typeof value !== "string") return undefined;
  const fast = parseCanonical(value);
  if (fast !== null) return fast;
  const m = RFC3339.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  let seconds = date.getTime() / 1000;
  if (m[8] !== undefined) {
    const sign = m[8] === "-" ? -1 : 1;
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 24 || om > 60) return undefined;
    seconds -= sign * (oh * 3600 + om * 60);
  }
  const nanos = m[7] ? Number(m[7].slice(0, 9).padEnd(9, "0")) : 0;
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) return undefined;
  return { seconds, nanos };
}

function isZero(t: Instant): boolean {
  return t.seconds === MIN_SECONDS && t.nanos === 0;
}

function formatInstant(t: Instant): string {
  if (t.text !== undefined) return t.text;
  const base = new Date(t.seconds * 1000).toISOString().slice(0, 19); // years 0001..9999 print as 4 digits
  let frac = "";
  if (t.nanos !== 0) {
    const digits = String(t.nanos).padStart(9, "0");
    frac = t.nanos % 1_000_000 === 0 ? `.${digits.slice(0, 3)}` : t.nanos % 1000 === 0 ? `.${digits.slice(0, 6)}` : `.${digits}`;
  }
  return `${base}${frac}Z`;
}

/**
 * A Kubernetes RFC 3339 time as Go's protojson prints a `google.protobuf.Timestamp`: UTC,
 * trailing `Z`, 0/3/6/9 fractional digits. `undefined` for a missing, invalid or zero time.
 */
export function toProtoTimestamp(value: unknown): string | undefined {
  const t = parseInstant(value);
  return t && !isZero(t) ? formatInstant(t) : undefined;
}

function later(a: Instant | undefined, b: Instant | undefined): Instant | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.seconds > a.seconds || (b.seconds === a.seconds && b.nanos > a.nanos) ? b : a;
}

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

/** How many decoded specs {@link cachedSpec} keeps (by annotation text; oldest out first). */
const SPEC_CACHE_SIZE = 4096;
const specCache = new Map<string, Spec>();

/**
 * `specFromAnnotation`, memoized by the annotation's text: a KService's spec rarely changes
 * between its watch events (status changes dominate), and decoding base64 + protobuf + proto3
 * JSON is most of a conversion. The cached Spec is shared by the Apps built from it (Apps are
 * never mutated). Invalid annotations are not cached, so each one still warns.
 */
function cachedSpec(value: string | undefined, ksvc: KubeObject, logger: Logger | undefined): Spec | undefined {
  if (value === undefined) return undefined;
  const hit = specCache.get(value);
  if (hit !== undefined) return hit;
  const spec = specFromAnnotation(value, warnWith(logger, { kservice: ksvcKey(ksvc) }));
  if (spec !== undefined) {
    if (specCache.size >= SPEC_CACHE_SIZE) specCache.delete(specCache.keys().next().value!);
    specCache.set(value, spec);
  }
  return spec;
}

/** Public ingress by app-id annotation (the ingress depends only on project/domain/name), per config. */
const ingressCache = new WeakMap<AppsConfig, Map<string, ReturnType<typeof publicIngress>>>();

/** `publicIngress`, memoized (its KServiceName costs a UTF-8 encode and maybe a SHA-256 per call). */
function cachedIngress(appId: string, id: Identifier, config: AppsConfig): ReturnType<typeof publicIngress> {
  let byId = ingressCache.get(config);
  if (!byId) ingressCache.set(config, byId = new Map());
  if (byId.has(appId)) return byId.get(appId);
  const ingress = publicIngress(id, config);
  if (byId.size >= SPEC_CACHE_SIZE) byId.delete(byId.keys().next().value!);
  byId.set(appId, ingress);
  return ingress;
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

/**
 * Converts a KService to a Flyte App (proto3 JSON shape, Go's field order).
 * Pure: same input, same output. `currentReplicas` comes from the caller (the Revision lookup
 * is the client's job); it is ignored for stopped apps, as in Flyte.
 * Throws {@link AppConversionError} when the identity annotation is missing or malformed.
 */
export function kserviceToApp(
  ksvc: KubeObject,
  config: AppsConfig,
  options: { currentReplicas?: number; logger?: Logger } = {},
): App {
  const id = appIdentity(ksvc);
  const stopped = goMapValue(ksvc.metadata?.labels, LABELS.APP_STOPPED) === LABEL_TRUE;

  let spec: Spec | undefined = cachedSpec(goMapValue(ksvc.metadata?.annotations, ANNOTATIONS.SPEC), ksvc, options.logger);
  if (spec && stopped) spec = withDesiredState(spec, "DESIRED_STATE_STOPPED");

  let status: Status;
  if (stopped) {
    const cond: Condition = {};
    const at = stableTime(ksvc);
    if (at !== undefined) cond.lastTransitionTime = at;
    cond.deploymentStatus = "DEPLOYMENT_STATUS_STOPPED";
    cond.message = STOPPED_MESSAGE;
    status = { conditions: [cond] };
  } else {
    status = {};
    const replicas = options.currentReplicas;
    // Go: uint32(*actualReplicas) from an int32.
    if (replicas !== undefined && Number.isInteger(replicas) && replicas !== 0) status.currentReplicas = replicas >>> 0;
    const ingress = cachedIngress(goMapValue(ksvc.metadata?.annotations, ANNOTATIONS.APP_ID)!, id, config);
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
