/**
 * Objects, the global resourceVersion counter and the bounded per-resource event history
 * (the "watch cache" window). All writes are synchronous, so a list snapshot and the RV it
 * reports are always consistent.
 * @module
 */
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  internalError,
  invalid,
  notFound,
} from "./errors.ts";
import { canonical, deepEqual, isObject, type JsonObject, mergePatch } from "./json.ts";
import { API_VERSION, GROUP, RESOURCE_NAMES, RESOURCES } from "./resources.ts";
import type { KubeObject, SandboxResource } from "./types.ts";
import { EventLog, type EventType, type StoreEvent } from "./events.ts";

export type { EventType, StoreEvent } from "./events.ts";

/** How a write treats a missing `metadata.resourceVersion`. */
export interface UpdateOptions {
  /** True for HTTP PUT: custom resources do not allow unconditional updates (422). */
  requireResourceVersion?: boolean;
  /** Which part of the object the write may change. */
  subresource?: "main" | "status";
}

/** Preconditions of a DELETE (`DeleteOptions.preconditions`). */
export interface DeletePreconditions {
  uid?: string;
  resourceVersion?: string;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** Server-managed metadata that clients cannot set. */
const SYSTEM_META = ["uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"];

export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function nowTimestamp(): string {
  // RFC 3339 with second precision, like metav1.Time.
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

function randomSuffix(): string {
  let s = "";
  const bytes = crypto.getRandomValues(new Uint8Array(5));
  for (const b of bytes) s += GENERATE_ALPHABET[b % GENERATE_ALPHABET.length];
  return s;
}

function kindInvalid(resource: SandboxResource, name: string, errors: FieldError[]) {
  const kind = RESOURCES[resource].kind;
  return invalid(`${kind}.${GROUP}`, kind, GROUP, name, errors);
}

/** Checks apiVersion/kind when the client sent them. */
function checkTypeMeta(resource: SandboxResource, obj: JsonObject): void {
  const kind = RESOURCES[resource].kind;
  if (obj.apiVersion !== undefined && obj.apiVersion !== API_VERSION) {
    throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${API_VERSION})`);
  }
  if (obj.kind !== undefined && obj.kind !== kind) {
    throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${kind})`);
  }
}

function checkStringMap(field: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (!isObject(value) || Object.values(value).some((v) => typeof v !== "string")) {
    throw badRequest(`${field}: must be a map of string keys to string values`);
  }
}

function metaOf(obj: JsonObject): JsonObject {
  if (obj.metadata === undefined) return {};
  if (!isObject(obj.metadata)) throw badRequest("metadata: must be an object");
  checkStringMap("metadata.labels", obj.metadata.labels);
  checkStringMap("metadata.annotations", obj.metadata.annotations);
  return obj.metadata;
}

/** Everything that counts as "spec" for generation bumps: all but metadata and status. */
function specPart(obj: JsonObject): JsonObject {
  const { metadata: _m, status: _s, ...rest } = obj;
  return rest;
}

function withoutRV(obj: KubeObject): unknown {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } };
}

/** The in-memory object store. */
export class ObjectStore {
  #rv: number;
  readonly #objects: Record<SandboxResource, Map<string, KubeObject>>;
  readonly #sorted: Record<SandboxResource, string[] | undefined> = { services: undefined, revisions: undefined };
  readonly #logs: Record<SandboxResource, EventLog>;
  readonly #listeners = new Set<(ev: StoreEvent) => void>();
  readonly #waiters = new Set<{ rv: number; wake: (ok: boolean) => void }>();
  readonly historyLimit: number;

  constructor(options: { historyLimit: number; initialRV?: number }) {
    this.historyLimit = Math.max(1, Math.floor(options.historyLimit));
    this.#rv = options.initialRV ?? 1;
    this.#objects = { services: new Map(), revisions: new Map() };
    this.#logs = { services: new EventLog(this.#rv), revisions: new EventLog(this.#rv) };
  }

  /** The current global resourceVersion. */
  get rv(): number {
    return this.#rv;
  }

  /** Oldest RV a watch or Exact list of `resource` may start from. */
  compactedRV(resource: SandboxResource): number {
    return this.#logs[resource].compactedRV;
  }

  /** Current objects of a resource by key (do not mutate). */
  objects(resource: SandboxResource): ReadonlyMap<string, KubeObject> {
    return this.#objects[resource];
  }

  /** Current keys of a resource in etcd key order. */
  sortedKeys(resource: SandboxResource): readonly string[] {
    return (this.#sorted[resource] ??= [...this.#objects[resource].keys()].sort());
  }

  get(resource: SandboxResource, namespace: string, name: string): KubeObject | undefined {
    return this.#objects[resource].get(keyOf(namespace, name));
  }

  /** Events of `resource` with rv > `rv`; `rv` must be ≥ compactedRV. */
  eventsSince(resource: SandboxResource, rv: number): StoreEvent[] {
    return this.#logs[resource].since(rv);
  }

  /**
   * The objects of `resource` as they were at `rv`, rebuilt by undoing newer events.
   * Returns undefined when `rv` is older than the retained history.
   */
  stateAt(resource: SandboxResource, rv: number): ReadonlyMap<string, KubeObject> | undefined {
    if (rv >= this.#rv) return this.#objects[resource];
    const log = this.#logs[resource];
    if (rv < log.compactedRV) return undefined;
    const state = new Map(this.#objects[resource]);
    const newer = log.since(rv);
    for (let i = newer.length - 1; i >= 0; i--) {
      const ev = newer[i]!;
      if (ev.prev === undefined) state.delete(ev.key);
      else state.set(ev.key, ev.prev);
    }
    return state;
  }

  /** Forgets all history: from now on only the current RV can be replayed from. */
  compact(): void {
    for (const r of RESOURCE_NAMES) this.#logs[r].clear(this.#rv);
  }

  /** Calls `fn` synchronously after every committed write. */
  subscribe(fn: (ev: StoreEvent) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Resolves true once the global RV reaches `rv`, or false when `arm` fires its timeout first
   * (arm receives the callback and must call it on timeout).
   */
  waitForRV(rv: number, arm: (onTimeout: () => void) => void): Promise<boolean> {
    if (this.#rv >= rv) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter = {
        rv,
        wake: (ok: boolean) => {
          if (!this.#waiters.delete(waiter)) return;
          resolve(ok);
        },
      };
      this.#waiters.add(waiter);
      arm(() => waiter.wake(this.#rv >= rv));
    });
  }

  /** Resolves every pending {@link waitForRV} with false. */
  releaseWaiters(): void {
    for (const w of [...this.#waiters]) w.wake(false);
  }

  /** POST semantics. */
  create(resource: SandboxResource, namespace: string, input: unknown): KubeObject {
    if (!isObject(input)) throw badRequest("the body of the request must be a JSON object");
    checkTypeMeta(resource, input);
    const meta = metaOf(input);
    if (meta.namespace !== undefined && meta.namespace !== "" && meta.namespace !== namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    let name = typeof meta.name === "string" ? meta.name : "";
    if (!name && typeof meta.generateName === "string" && meta.generateName) {
      name = meta.generateName + randomSuffix();
    }
    if (!name) {
      throw kindInvalid(resource, "", [{
        type: "FieldValueRequired",
        field: "metadata.name",
        detail: "Required value: name or generateName is required",
      }]);
    }
    if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
      throw kindInvalid(resource, name, [{
        type: "FieldValueInvalid",
        field: "metadata.name",
        detail: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      }]);
    }
    if (typeof meta.resourceVersion === "string" && meta.resourceVersion !== "") {
      // etcd3 store: storage.ErrResourceVersionSetOnCreate, surfaced as an internal error.
      throw internalError("resourceVersion should not be set on objects to be created");
    }
    const key = keyOf(namespace, name);
    if (this.#objects[resource].has(key)) throw alreadyExists(resource, name);

    const newMeta: JsonObject = { ...meta };
    for (const k of SYSTEM_META) delete newMeta[k];
    Object.assign(newMeta, {
      name,
      namespace,
      uid: crypto.randomUUID(),
      generation: 1,
      creationTimestamp: nowTimestamp(),
      // Placeholder so the canonical key order has resourceVersion in place; #commit stamps it.
      resourceVersion: "",
    });
    // A CRD with a status subresource drops status on create (customResourceStrategy.PrepareForCreate).
    const { status: _dropped, ...rest } = input;
    const obj = canonical({ ...rest, apiVersion: API_VERSION, kind: RESOURCES[resource].kind, metadata: newMeta }) as KubeObject;
    return this.#commit(resource, "ADDED", key, obj, undefined);
  }

  /** PUT semantics for the main resource or the status subresource. */
  update(resource: SandboxResource, namespace: string, name: string, input: unknown, options: UpdateOptions = {}): KubeObject {
    const old = this.get(resource, namespace, name);
    if (!isObject(input)) throw badRequest("the body of the request must be a JSON object");
    checkTypeMeta(resource, input);
    const meta = metaOf(input);
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`);
    }
    if (meta.namespace !== undefined && meta.namespace !== "" && meta.namespace !== namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    // Custom resources do not allow create-on-update.
    if (!old) throw notFound(resource, name);
    const rv = typeof meta.resourceVersion === "string" ? meta.resourceVersion : "";
    if (rv !== "" && rv !== old.metadata.resourceVersion) throw conflict(resource, name);
    if (rv === "" && options.requireResourceVersion) {
      throw kindInvalid(resource, name, [{
        type: "FieldValueInvalid",
        field: "metadata.resourceVersion",
        detail: "Invalid value: 0x0: must be specified for an update",
      }]);
    }
    if (typeof meta.uid === "string" && meta.uid !== "" && meta.uid !== old.metadata.uid) {
      throw conflict(resource, name, `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${old.metadata.uid}`);
    }

    let next: JsonObject;
    if (options.subresource === "status") {
      // statusStrategy.PrepareForUpdate: copy the old object, take only status from the request.
      const { status: _old, ...oldRest } = old;
      next = input.status === undefined ? { ...oldRest } : { ...oldRest, status: input.status };
    } else {
      const newMeta: JsonObject = { ...meta };
      for (const k of SYSTEM_META) delete newMeta[k];
      Object.assign(newMeta, {
        name,
        namespace,
        uid: old.metadata.uid,
        generation: old.metadata.generation,
        creationTimestamp: old.metadata.creationTimestamp,
        resourceVersion: old.metadata.resourceVersion,
      });
      const { status: _ignored, ...rest } = input;
      next = { ...rest, apiVersion: API_VERSION, kind: RESOURCES[resource].kind, metadata: newMeta };
      if (old.status !== undefined) next.status = old.status;
      // Any change outside metadata and status bumps the generation (customResourceStrategy).
      if (!deepEqual(specPart(next), specPart(old))) {
        newMeta.generation = (old.metadata.generation ?? 0) + 1;
      }
    }
    const obj = canonical(next) as KubeObject;
    // A write that changes nothing is not written to etcd: no new RV, no event.
    if (deepEqual(withoutRV(obj), withoutRV(old))) return old;
    return this.#commit(resource, "MODIFIED", keyOf(namespace, name), obj, old);
  }

  /** JSON merge patch (RFC 7386) of the main resource or the status subresource. */
  patch(resource: SandboxResource, namespace: string, name: string, patch: unknown, subresource: "main" | "status" = "main"): KubeObject {
    const old = this.get(resource, namespace, name);
    if (!old) throw notFound(resource, name);
    if (!isObject(patch)) throw badRequest("the merge patch must be a JSON object");
    const patched = mergePatch(old, patch);
    return this.update(resource, namespace, name, patched, { subresource });
  }

  /** DELETE semantics; returns the deleted object stamped with the delete RV. */
  delete(resource: SandboxResource, namespace: string, name: string, pre: DeletePreconditions = {}): KubeObject {
    const old = this.get(resource, namespace, name);
    if (!old) throw notFound(resource, name);
    if (pre.uid !== undefined && pre.uid !== old.metadata.uid) {
      throw conflict(resource, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(
        resource,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    }
    return this.#commit(resource, "DELETED", keyOf(namespace, name), old, old);
  }

  #commit(resource: SandboxResource, type: EventType, key: string, obj: KubeObject, prev: KubeObject | undefined): KubeObject {
    const rv = ++this.#rv;
    const stamped: KubeObject = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
    const objects = this.#objects[resource];
    if (type === "DELETED") {
      objects.delete(key);
      this.#sorted[resource] = undefined;
    } else {
      if (!objects.has(key)) this.#sorted[resource] = undefined;
      objects.set(key, stamped);
    }
    const ev: StoreEvent = { type, resource, rv, key, object: stamped, prev };
    this.#logs[resource].push(ev, this.historyLimit);
    for (const fn of this.#listeners) {
      try {
        fn(ev);
      } catch {
        // A broken listener must not undo a committed write.
      }
    }
    for (const w of [...this.#waiters]) if (w.rv <= rv) w.wake(true);
    return stamped;
  }
}
