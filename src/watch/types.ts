/**
 * The small vocabulary of the watch engine: Kubernetes objects, raw watch
 * events from the wire, and the reflector's own ordered output events.
 * @module
 */
import * as v from "valibot";

/** Object metadata fields the engine relies on. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  [key: string]: unknown;
}

/** Any Kubernetes object. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** An API resource to list and watch, e.g. `{ group: "serving.knative.dev", version: "v1", plural: "services" }`. */
export interface ResourceRef {
  /** API group; "" for the core group (`/api/v1`). */
  group: string;
  version: string;
  /** Plural resource name, as in the URL. */
  plural: string;
}

/** Knative Serving `Service` (KService). */
export const KNATIVE_SERVICES: ResourceRef = { group: "serving.knative.dev", version: "v1", plural: "services" };
/** Knative Serving `Revision`. */
export const KNATIVE_REVISIONS: ResourceRef = { group: "serving.knative.dev", version: "v1", plural: "revisions" };

/** The API path of a resource collection, in one namespace or across all. */
export function collectionPath(resource: ResourceRef, namespace?: string): string {
  const base = resource.group === "" ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${base}${ns}/${resource.plural}`;
}

/** Store key of an object: `namespace/name` (or `name` for cluster-scoped objects). */
export function objectKey(obj: { metadata: { namespace?: string; name?: string } }): string {
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${obj.metadata.name ?? ""}` : (obj.metadata.name ?? "");
}

/** Schema of a Kubernetes object as the engine needs it (name + resourceVersion present). */
export const KubeObjectSchema = v.looseObject({
  metadata: v.looseObject({
    name: v.pipe(v.string(), v.minLength(1)),
    namespace: v.optional(v.string()),
    uid: v.optional(v.string()),
    resourceVersion: v.pipe(v.string(), v.minLength(1)),
  }),
});

/** Schema of one raw watch line: `{type, object}`. */
export const RawWatchEventSchema = v.object({
  type: v.string(),
  object: v.looseObject({
    metadata: v.optional(v.looseObject({
      resourceVersion: v.optional(v.string()),
      annotations: v.optional(v.record(v.string(), v.string())),
    })),
  }),
});

/** A raw watch line as {@link RawWatchEventSchema} accepts it. */
export type RawWatchEvent = v.InferOutput<typeof RawWatchEventSchema>;

// valibot's object and record schemas accept any non-null object (arrays included); so do these guards.
const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null;

/**
 * The same check as `v.is(RawWatchEventSchema, x)` without valibot's copy of
 * every level: this runs once per watch event, the hot path. Agreement with
 * the schema is asserted by `tests/schemas.test.ts`; on failure, the schema
 * produces the error message.
 */
export function isRawWatchEvent(x: unknown): x is RawWatchEvent {
  if (!isRecord(x) || typeof x.type !== "string" || !isRecord(x.object)) return false;
  const m = x.object.metadata;
  if (m === undefined) return true;
  if (!isRecord(m)) return false;
  if (m.resourceVersion !== undefined && typeof m.resourceVersion !== "string") return false;
  const a = m.annotations;
  if (a === undefined) return true;
  if (!isRecord(a)) return false;
  for (const k in a) if (typeof a[k] !== "string") return false;
  return true;
}

/** The same check as `v.is(KubeObjectSchema, x)`, without copying (see {@link isRawWatchEvent}). */
export function isKubeObject(x: unknown): x is KubeObject {
  if (!isRecord(x) || !isRecord(x.metadata)) return false;
  const m = x.metadata;
  return typeof m.name === "string" && m.name.length > 0 &&
    typeof m.resourceVersion === "string" && m.resourceVersion.length > 0 &&
    (m.namespace === undefined || typeof m.namespace === "string") &&
    (m.uid === undefined || typeof m.uid === "string");
}

/** Schema of a list response page. */
export const ListPageSchema = v.looseObject({
  metadata: v.looseObject({
    resourceVersion: v.pipe(v.string(), v.minLength(1)),
    continue: v.optional(v.string()),
    remainingItemCount: v.optional(v.number()),
  }),
  items: v.array(v.unknown()),
});

/** The annotation that marks the end of a streaming list's initial events. */
export const INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end";

/**
 * One item of the reflector's ordered output stream.
 * - `added` / `modified` / `deleted`: a true change of the store. `modified`
 *   carries the `previous` state. A `deleted` with `inferred: true` was not
 *   seen on the wire: the object vanished while we were not watching and a
 *   relist found it missing (its `object` is the last state we knew). `relist: true`
 *   marks the events of a relist's diff (the store is consistent only at the
 *   `synced` marker that follows them: no resume point lies between).
 * - `synced`: the store now equals a complete server snapshot. `initial` for
 *   the first sync, `resync` after a relist (410 Expired, or an error that
 *   forced a relist); `cause` says why. When several namespaces are watched,
 *   one `initial` marker comes once all of them are synced (with each
 *   namespace's own list RV in `resourceVersions`), and a `resync` names the
 *   `namespace` that relisted.
 */
export type ReflectorEvent<T extends KubeObject = KubeObject> =
  | { type: "added"; object: T; relist?: true }
  | { type: "modified"; object: T; previous: T; relist?: true }
  | { type: "deleted"; object: T; inferred?: true; relist?: true }
  | {
    type: "synced";
    phase: "initial" | "resync";
    resourceVersion: string;
    cause?: RelistCause;
    namespace?: string;
    resourceVersions?: Record<string, string>;
  };

/** Why the reflector listed again. */
export type RelistCause =
  | "expired" // 410 Gone / Expired
  | "watch-errors" // the same error repeated on re-watch (W9)
  | "restart"; // run() called again after it was stopped in the middle of a relist
