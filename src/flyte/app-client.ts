/**
 * `AppK8sClient`: Flyte's app watcher API in idiomatic TypeScript. It keeps
 * the seed's shape (`startWatching`, `subscribe`/`unsubscribe`, `list`,
 * `getApp`) and fixes what Flyte's Go version gets wrong (see
 * docs/flyte-compatibility.md): subscriptions by exact identity, project,
 * org or everything; a snapshot with no gap and no duplicate; updates only
 * for real changes; bounded per-subscriber buffers with a policy.
 * @module
 */
import { goQuote } from "./gostrings.ts";
import type { KubeClient } from "../kube/client.ts";
import { errorFromResponse, KubeApiError } from "../kube/status.ts";
import { type Logger, silentLogger } from "../log.ts";
import { createWatcher, type ObjectWatcher } from "../watch/group.ts";
import type { ReflectorOptions } from "../watch/reflector.ts";
import { collectionPath, KNATIVE_REVISIONS, KNATIVE_SERVICES, type KubeObject, objectKey } from "../watch/types.ts";
import { AppConversionError, kserviceToApp } from "./convert.ts";
import { type App, type AppsConfig, DEFAULT_APPS_CONFIG, type Identifier, type WatchResponse } from "./model.ts";
import { KServiceName } from "./naming.ts";
import { Journal } from "./journal.ts";
import { type AppChange, appOf, type SlowConsumerPolicy, Subscription } from "./subscriptions.ts";
import type { ReflectorHealth } from "../watch/reflector.ts";

/** The label every Flyte-managed KService carries. */
export const APP_MANAGED_SELECTOR = "flyte.org/app-managed=true";

/**
 * What a subscription receives:
 * - a bare app name (the seed's form) or `""` for everything;
 * - `{ project, domain, name, org? }`: exactly that app;
 * - `{ project, domain, org? }`: every app of a project and domain;
 * - `{ org }`: every app of an org.
 */
export type SubscribeTarget =
  | string
  | { org?: string; project: string; domain: string; name: string }
  | { org?: string; project: string; domain: string; name?: undefined }
  | { org?: string; project: string; domain?: undefined; name?: undefined }
  | { org: string; project?: undefined; domain?: undefined; name?: undefined };

/** Options for {@link AppK8sClient}. */
export interface AppK8sClientOptions {
  client: KubeClient;
  /** Namespace(s) of the app KServices (default `"flyte"`); `"*"` or `[]` for all. */
  namespace?: string | string[];
  /** Flyte's `internalApps` keys, plus the slow-consumer policy (default `coalesce`). */
  config?: Partial<AppsConfig> & { slowConsumer?: SlowConsumerPolicy };
  logger?: Logger;
  /** Tuning of the underlying watch (timeouts, backoff, initial list mode). */
  watch?: Partial<Omit<ReflectorOptions<KubeObject>, "client" | "resource" | "namespace" | "labelSelector">>;
  /** How long a Revision's `actualReplicas` is cached (default 30 s). */
  replicasTtlMs?: number;
  /** How many recent app changes are kept for resuming subscriptions (default 10,000). */
  resumeWindow?: number;
}

/** Options of {@link AppK8sClient.subscribe}. */
export interface SubscribeOptions {
  /** Start with a `createEvent` for every matching app. */
  snapshot?: boolean;
  /**
   * A resume token from an earlier subscription (any replica): start with
   * exactly the changes after it. When that is not possible the subscription
   * starts with a snapshot instead and {@link Subscription.start} says why.
   */
  resume?: string;
}

/** Knative Serving is not installed: the `serving.knative.dev/v1` `services` resource does not exist. */
export class KnativeNotInstalledError extends Error {
  override readonly name = "KnativeNotInstalledError";
}

/** The credentials may not list/watch KServices. */
export class AppsForbiddenError extends Error {
  override readonly name = "AppsForbiddenError";
}

/** `getApp` found no KService for the identifier. */
export class AppNotFoundError extends Error {
  override readonly name = "AppNotFoundError";
}

/**
 * Flyte's `GetApp` not-found text: `KService <name> not found: <the Kubernetes error>` (it wraps the
 * API server's NotFound with `%w`); the Kubernetes part is the Status message the server sent, or
 * the one it would send when the lookup did not go through a GET of that name.
 */
export function notFoundText(name: string, kubernetesMessage?: string): string {
  return `KService ${name} not found: ${kubernetesMessage ?? `services.serving.knative.dev ${goQuote(name)} not found`}`;
}

interface Known {
  /** The KService as the watch keeps it (slimmed by {@link slimKService}; shared with the reflector's store). */
  ksvc: KubeObject;
  app: App;
  appKey: string;
  /** `namespace/revision` of `status.latestReadyRevisionName` (the replica lookup it depends on), or "". */
  revision: string;
}

/**
 * What the watch keeps of a KService: everything the conversion reads (metadata without
 * `managedFields`, and `status`). `managedFields` and `spec` (the pod template; the app's
 * spec comes from the `flyte.org/spec` annotation) are about half of a KService's bytes and
 * are never read, so they are dropped as each object arrives, before it enters the store.
 */
function slimKService<T extends KubeObject>(obj: T): T {
  // The reflector's byte-level `prune` (below) already cut both from watch lines and list pages:
  // nothing to rebuild. The rebuild stays for what pruning passes through (a caller's own `prune`).
  if (obj.spec === undefined && obj.metadata.managedFields === undefined) return obj;
  // Rebuilt rather than `delete`d: V8 turns an object a property was deleted from into a
  // slower, larger dictionary-mode object.
  const { managedFields: _managedFields, ...metadata } = obj.metadata;
  const { spec: _spec, metadata: _metadata, ...rest } = obj;
  return { ...rest, metadata } as T;
}

/**
 * Deep equality of two JSON-like values as `JSON.stringify` would see them (object
 * properties whose value is `undefined` count as absent; key order does not matter).
 * Replaces keeping each App's JSON text just to detect "no change".
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    const v = x[k];
    if (v === undefined) continue;
    n++;
    if (!sameJson(v, y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) n--;
  return n === 0;
}

function revisionOf(ksvc: KubeObject): string {
  const rev = (ksvc.status as { latestReadyRevisionName?: unknown } | undefined)?.latestReadyRevisionName;
  return typeof rev === "string" && rev !== "" ? `${ksvc.metadata.namespace ?? ""}/${rev}` : "";
}

/** Counters for the metrics endpoint. */
export interface AppClientMetrics {
  events: { create: number; update: number; delete: number };
  /** Changes of the KService that did not change the App (no event sent). */
  unchanged: number;
  conversionErrors: number;
  revisionRequests: number;
  subscribers: number;
  /** Subscriptions started by kind. */
  starts: { snapshot: number; resumed: number; live: number; resumeFailed: number };
}

/** `org/project/domain/name` */
export function appKey(id: Identifier | undefined): string {
  return `${id?.org ?? ""}/${id?.project ?? ""}/${id?.domain ?? ""}/${id?.name ?? ""}`;
}

/** Where a subscription is indexed for publishing (see `AppK8sClient.#index`). */
function indexKey(target: SubscribeTarget): string {
  if (typeof target === "string" || target.project === undefined || target.domain === undefined) return "";
  return target.name !== undefined ? `a\n${target.project}\n${target.domain}\n${target.name}` : `p\n${target.project}\n${target.domain}`;
}

function matcher(target: SubscribeTarget): (id: Identifier | undefined) => boolean {
  if (typeof target === "string") return target === "" ? () => true : (id) => id?.name === target;
  return (id) => {
    if (!id) return false;
    if (target.org !== undefined && target.org !== "" && id.org !== target.org) return false;
    if (target.project !== undefined && id.project !== target.project) return false;
    if (target.domain !== undefined && id.domain !== target.domain) return false;
    if (target.name !== undefined && id.name !== target.name) return false;
    return true;
  };
}

/** Watches Flyte's app KServices and serves `WatchResponse` subscriptions. */
export class AppK8sClient {
  readonly config: AppsConfig;
  readonly policy: SlowConsumerPolicy;
  readonly namespaces: string[];
  readonly metrics: AppClientMetrics = {
    events: { create: 0, update: 0, delete: 0 },
    unchanged: 0,
    conversionErrors: 0,
    revisionRequests: 0,
    subscribers: 0,
    starts: { snapshot: 0, resumed: 0, live: 0, resumeFailed: 0 },
  };
  readonly #client: KubeClient;
  readonly #log: Logger;
  readonly #watchOptions: AppK8sClientOptions["watch"];
  readonly #apps = new Map<string, Known>(); // by KService namespace/name
  /** KService keys by the `namespace/revision` their replica count comes from. */
  readonly #byRevision = new Map<string, Set<string>>();
  readonly #subs = new Map<Subscription, (id: Identifier | undefined) => boolean>();
  /**
   * Candidates by index key ({@link indexKey}): exact-app targets under `a\n<project>\n<domain>\n<name>`,
   * project targets under `p\n<project>\n<domain>`, everything else under "" (scanned for every
   * change). A pre-filter only: the matcher still decides, so publishing costs O(matching
   * subscribers + unindexed ones), not O(all subscribers).
   */
  readonly #index = new Map<string, Set<Subscription>>();
  readonly #replicas: ReplicaCache;
  readonly #journal: Journal;
  #synced = false;
  #watcher: ObjectWatcher<KubeObject> | undefined;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #started: Promise<void> | undefined;

  constructor(options: AppK8sClientOptions) {
    this.#client = options.client;
    const { slowConsumer, ...config } = options.config ?? {};
    this.config = { ...DEFAULT_APPS_CONFIG, ...config };
    this.policy = slowConsumer ?? "coalesce";
    const ns = options.namespace ?? "flyte";
    const list = typeof ns === "string" ? [ns] : ns;
    this.namespaces = list.includes("*") ? [] : list;
    this.#log = (options.logger ?? silentLogger).child({ component: "apps" });
    this.#watchOptions = options.watch;
    this.#journal = new Journal(options.resumeWindow ?? 10_000);
    this.#replicas = new ReplicaCache(options.client, options.replicasTtlMs ?? 30_000, this.#log, this.metrics, (ns, rev) => this.#onReplicas(ns, rev), (key) => this.#byRevision.has(key));
  }

  /**
   * Starts the watch (idempotent) and resolves once the initial sync is done.
   * Rejects with {@link KnativeNotInstalledError} or {@link AppsForbiddenError}
   * when the API server says so, before any retrying starts.
   */
  startWatching(signal?: AbortSignal): Promise<void> {
    if (!this.#started) {
      const started = this.#start(signal);
      this.#started = started;
      // A failed start (API server unreachable, Knative missing, forbidden) may be retried.
      started.catch(() => {
        if (this.#started === started) this.#started = undefined;
      });
    }
    return this.#started;
  }

  async #start(signal?: AbortSignal): Promise<void> {
    await this.#preflight(signal);
    this.#stop = new AbortController();
    const stop = this.#stop;
    signal?.addEventListener("abort", () => stop.abort(), { once: true });
    const parse = this.#watchOptions?.parse;
    this.#watcher = createWatcher<KubeObject>({
      // Never read: cut before JSON.parse from watch lines and (as items.*.…) list pages (B1, B2).
      prune: [["object", "metadata", "managedFields"], ["object", "spec"]],
      ...this.#watchOptions,
      parse: parse ? (obj) => slimKService(parse(obj)) : slimKService,
      client: this.#client,
      resource: KNATIVE_SERVICES,
      namespaces: this.namespaces,
      labelSelector: APP_MANAGED_SELECTOR,
      logger: this.#log,
    });
    // Revision lookups wait for the initial sync: thousands of GETs interleaved with the list pages
    // slowed the sync down, and their answers would only re-convert apps still being listed.
    this.#replicas.hold();
    let synced!: () => void;
    let failed!: (e: unknown) => void;
    const ready = new Promise<void>((resolve, reject) => ((synced = resolve), (failed = reject)));
    const watcher = this.#watcher;
    this.#loop = (async () => {
      try {
        for await (const event of watcher.run(stop.signal)) {
          if (event.type === "synced") {
            if (event.phase === "initial") {
              const rvs = event.resourceVersions ?? { [this.namespaces[0] ?? ""]: event.resourceVersion };
              for (const [ns, rv] of Object.entries(rvs)) this.#journal.reset(ns || "*", rv);
              this.#synced = true;
              this.#replicas.release();
              synced();
            } else {
              // A relist: the changes it produced were published; tokens from before it cannot be resumed.
              this.#journal.reset(event.namespace ?? this.namespaces[0] ?? "*", event.resourceVersion);
              const token = this.#journal.token();
              for (const sub of this.#subs.keys()) sub.mark("resync", token);
            }
            continue;
          }
          const stream = this.#streamOf(event.object);
          if (!(event.type === "deleted" && event.inferred)) this.#journal.advance(stream, event.object.metadata.resourceVersion ?? "");
          this.#apply(event.type === "deleted" ? undefined : event.object, objectKey(event.object), stream);
        }
        failed(new Error("stopped before the initial sync"));
      } catch (err) {
        failed(err);
        this.#log.error("app watch loop ended", { error: (err as Error).message });
      }
    })();
    await ready;
  }

  /** Stops the watch and ends every subscription. */
  async stopWatching(): Promise<void> {
    this.#stop?.abort();
    await this.#loop;
    for (const s of [...this.#subs.keys()]) s.close();
    this.#started = undefined;
    this.#loop = undefined;
    this.#synced = false;
  }

  /** True once the initial sync is done (and until `stopWatching`). */
  get synced(): boolean {
    return this.#synced;
  }

  /** Contact with the API server (healthy before `startWatching` is false). */
  health(): ReflectorHealth {
    return this.#watcher?.health() ?? { healthy: false, reason: "not watching", since: Date.now() };
  }

  /** Counters of the underlying watch (summed over namespaces), if watching. */
  watchMetrics(): ReturnType<ObjectWatcher<KubeObject>["metricsSnapshot"]> | undefined {
    return this.#watcher?.metricsSnapshot();
  }

  /** The resume token of the current watch position. */
  token(): string {
    return this.#journal.token();
  }

  /** Number of app changes held for resuming. */
  get journalSize(): number {
    return this.#journal.size;
  }

  /**
   * Waits (up to `timeoutMs`) until this client has applied everything up to
   * `token` — for a token from a replica that is slightly ahead. Resolves
   * whether or not it got there.
   */
  async catchUp(token: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (!this.#journal.canCatchUp(token)) return false; // malformed or foreign: answer at once (with a snapshot)
    const deadline = Date.now() + timeoutMs;
    while (!this.#journal.covers(token)) {
      if (Date.now() >= deadline || signal?.aborted) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }

  /**
   * Subscribes to app events. With `snapshot: true` the subscription first
   * yields a `createEvent` for every matching app (its `snapshotSize` says how
   * many), then live events: no gap, no duplicate.
   */
  subscribe(target: SubscribeTarget, options: SubscribeOptions = {}): Subscription {
    const match = matcher(target);
    const sub = new Subscription({
      policy: this.policy,
      bufferSize: this.config.watchBufferSize,
      logger: this.#log,
      onClose: (s) => {
        this.#subs.delete(s);
        const slot = this.#index.get(indexKey(target));
        if (slot?.delete(s) && slot.size === 0) this.#index.delete(indexKey(target));
        this.metrics.subscribers = this.#subs.size;
      },
    });
    // Everything below is synchronous with event delivery: the snapshot or the replay is exactly
    // the state before the next event, so there is no gap and no duplicate.
    let snapshot = options.snapshot ?? false;
    if (options.resume !== undefined) {
      const replay = this.#journal.since(options.resume, (c) => match(appOf(c.event).metadata?.id));
      if (replay.ok) {
        sub.preload(replay.changes, { snapshot: false, from: options.resume, token: this.#journal.token() });
        sub.start = { kind: "resumed", replayed: replay.changes.length };
        snapshot = false;
      } else {
        sub.start = { kind: "snapshot", resumeFailed: replay.reason };
        snapshot = true;
        this.metrics.starts.resumeFailed++;
      }
    }
    if (snapshot) {
      const items = [...this.#apps.values()].filter((k) => match(k.app.metadata?.id)).sort((a, b) => a.appKey.localeCompare(b.appKey));
      sub.preload(items.map((k) => ({ key: k.appKey, event: { createEvent: { app: k.app } } })), { token: this.#journal.token() });
      if (sub.start.kind !== "snapshot") sub.start = { kind: "snapshot" };
    }
    this.metrics.starts[sub.start.kind]++;
    this.#subs.set(sub, match);
    if (!sub.closed) {
      const key = indexKey(target);
      let slot = this.#index.get(key);
      if (!slot) this.#index.set(key, slot = new Set());
      slot.add(sub);
    }
    this.metrics.subscribers = this.#subs.size;
    return sub;
  }

  /** Ends a subscription (the seed's `Unsubscribe`); safe to call twice. */
  unsubscribe(_target: SubscribeTarget, subscription: Subscription): void {
    subscription.close();
  }

  /**
   * Flyte's `List`: managed KServices of the (first) namespace, filtered by
   * project/domain labels, `limit`/`token` passed to the API server.
   * Unconvertible items are skipped with a warning.
   */
  async list(project: string, domain: string, limit = 0, token = ""): Promise<{ apps: App[]; token: string }> {
    const selector = [APP_MANAGED_SELECTOR, project ? `flyte.org/project=${project}` : "", domain ? `flyte.org/domain=${domain}` : ""].filter(Boolean).join(",");
    const body = await this.#client.json({
      path: collectionPath(KNATIVE_SERVICES, this.namespaces[0]),
      query: { labelSelector: selector, limit: limit > 0 ? limit : undefined, continue: token || undefined },
    }) as { items?: KubeObject[]; metadata?: { continue?: string } };
    const apps: App[] = [];
    for (const item of body.items ?? []) {
      try {
        apps.push(this.#convert(item));
      } catch (err) {
        this.metrics.conversionErrors++;
        this.#log.warn(`Skipping KService ${item.metadata?.name}: failed to convert to app: ${(err as Error).message}`);
      }
    }
    return { apps, token: body.metadata?.continue ?? "" };
  }

  /**
   * Flyte's `GetApp`: the KService named by `KServiceName(id)` in the (first)
   * namespace; when watching all namespaces, looked up across them by name.
   */
  async getApp(id: Identifier): Promise<App> {
    const name = KServiceName(id);
    if (this.namespaces.length === 0) {
      const body = await this.#client.json({
        path: collectionPath(KNATIVE_SERVICES),
        query: { labelSelector: APP_MANAGED_SELECTOR, fieldSelector: `metadata.name=${name}` },
      }) as { items?: KubeObject[] };
      const apps = (body.items ?? []).map((o) => this.#convert(o)).filter((a) => appKey(a.metadata?.id).endsWith(`/${id.project}/${id.domain}/${id.name}`));
      if (apps.length === 0) throw new AppNotFoundError(notFoundText(name));
      return apps[0]!;
    }
    const res = await this.#client.request({ path: `${collectionPath(KNATIVE_SERVICES, this.namespaces[0])}/${encodeURIComponent(name)}` });
    if (res.status === 404) {
      const status = await res.json().catch(() => undefined) as { message?: unknown } | undefined;
      throw new AppNotFoundError(notFoundText(name, typeof status?.message === "string" ? status.message : undefined));
    }
    if (!res.ok) throw await errorFromResponse(res, `GET KService ${name}`);
    return this.#convert(await res.json() as KubeObject);
  }

  // ------------------------------------------------------------------ internals

  async #preflight(signal?: AbortSignal): Promise<void> {
    const namespaces = this.namespaces.length ? this.namespaces : [undefined];
    for (const ns of namespaces) {
      const res = await this.#client.request({ path: collectionPath(KNATIVE_SERVICES, ns), query: { limit: 1, labelSelector: APP_MANAGED_SELECTOR }, signal });
      if (res.ok) {
        await res.body?.cancel();
        continue;
      }
      const err = await errorFromResponse(res, `GET ${collectionPath(KNATIVE_SERVICES, ns)}`);
      if (err.code === 404) {
        throw new KnativeNotInstalledError(
          "Knative Serving is not installed: the API server has no services.serving.knative.dev (serving.knative.dev/v1) resource",
        );
      }
      if (err.code === 403) {
        throw new AppsForbiddenError(
          `not allowed to read Knative Services ${ns ? `in namespace "${ns}"` : "cluster-wide"}: appwatch needs get, list and watch on services.serving.knative.dev (and get on revisions.serving.knative.dev); see deploy/rbac.yaml. Server said: ${err.message}`,
        );
      }
      throw err;
    }
  }

  #convert(ksvc: KubeObject): App {
    const rev = (ksvc.status as { latestReadyRevisionName?: string } | undefined)?.latestReadyRevisionName;
    const replicas = rev ? this.#replicas.get(ksvc.metadata.namespace ?? "", rev) : undefined;
    return kserviceToApp(ksvc, this.config, { currentReplicas: replicas, logger: this.#log });
  }

  /** The journal stream of an object: its namespace when several are watched, else the one stream. */
  #streamOf(obj: KubeObject): string {
    if (this.namespaces.length > 1) return obj.metadata.namespace ?? "";
    return this.namespaces[0] ?? "*";
  }

  /**
   * One KService change (undefined = gone) → at most a delete and a create/update.
   * `stream` is set for changes from the watch (journaled, resumable), unset for
   * re-conversions after a Revision's replica count changed (live only).
   */
  #apply(ksvc: KubeObject | undefined, key: string, stream?: string): void {
    const prev = this.#apps.get(key);
    if (!ksvc) {
      if (!prev) return;
      this.#forget(key, prev);
      this.#publish({ deleteEvent: { app: prev.app } }, prev, stream);
      return;
    }
    let app: App;
    try {
      app = this.#convert(ksvc);
    } catch (err) {
      this.metrics.conversionErrors++;
      this.#log.warn("KService cannot be converted to an app; skipped", {
        ksvc: key,
        error: err instanceof AppConversionError ? err.message : String(err),
      });
      if (prev) {
        // It was an app and no longer is one: for subscribers, it is gone.
        this.#forget(key, prev);
        this.#publish({ deleteEvent: { app: prev.app } }, prev, stream);
      }
      return;
    }
    const next: Known = { ksvc, app, appKey: appKey(app.metadata?.id), revision: revisionOf(ksvc) };
    this.#apps.set(key, next);
    if (prev?.revision !== next.revision) {
      if (prev) this.#unindex(key, prev.revision);
      if (next.revision) {
        let keys = this.#byRevision.get(next.revision);
        if (!keys) this.#byRevision.set(next.revision, keys = new Set());
        keys.add(key);
      }
    }
    if (!prev) return this.#publish({ createEvent: { app } }, next, stream);
    if (prev.appKey !== next.appKey) {
      // The app-id annotation changed: a different app now lives in this KService.
      this.#publish({ deleteEvent: { app: prev.app } }, prev, stream);
      return this.#publish({ createEvent: { app } }, next, stream);
    }
    if (sameJson(prev.app, next.app)) {
      this.metrics.unchanged++;
      return;
    }
    this.#publish({ updateEvent: { updatedApp: app } }, next, stream);
  }

  #publish(event: WatchResponse, k: Known, stream: string | undefined): void {
    const kind = "createEvent" in event ? "create" : "updateEvent" in event ? "update" : "delete";
    this.metrics.events[kind]++;
    const change: AppChange = { key: k.appKey, event };
    if (stream !== undefined) {
      change.token = this.#journal.token();
      this.#journal.append(stream, change);
    }
    const id = k.app.metadata?.id;
    this.#pushTo(this.#index.get(""), id, change);
    if (id) {
      this.#pushTo(this.#index.get(`a\n${id.project ?? ""}\n${id.domain ?? ""}\n${id.name ?? ""}`), id, change);
      this.#pushTo(this.#index.get(`p\n${id.project ?? ""}\n${id.domain ?? ""}`), id, change);
    }
  }

  #pushTo(candidates: Set<Subscription> | undefined, id: Identifier | undefined, change: AppChange): void {
    if (!candidates) return;
    for (const sub of candidates) {
      if (this.#subs.get(sub)?.(id)) sub.push(change);
    }
  }

  #forget(key: string, prev: Known): void {
    this.#apps.delete(key);
    this.#unindex(key, prev.revision);
  }

  #unindex(key: string, revision: string): void {
    if (!revision) return;
    const keys = this.#byRevision.get(revision);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) {
      this.#byRevision.delete(revision);
      this.#replicas.forget(revision); // else one cache entry per revision ever seen, forever
    }
  }

  #onReplicas(namespace: string, revision: string): void {
    // Through the index: scanning every app per answered lookup made an initial sync of N apps O(N²).
    const keys = this.#byRevision.get(`${namespace}/${revision}`);
    if (!keys) return;
    for (const key of [...keys]) {
      const k = this.#apps.get(key);
      if (k) this.#apply(k.ksvc, key);
    }
  }
}

/**
 * `status.actualReplicas` of Revisions, fetched in the background: a lookup
 * never blocks the event stream (it answers from the cache, or undefined),
 * at most one request per revision per TTL, and a changed value re-converts
 * the apps that use the revision.
 */
class ReplicaCache {
  readonly #values = new Map<string, { value: number | undefined; at: number }>();
  readonly #inFlight = new Set<string>();
  readonly client: KubeClient;
  readonly ttlMs: number;
  readonly log: Logger;
  readonly metrics: AppClientMetrics;
  readonly onChange: (namespace: string, revision: string) => void;
  /** Whether some app still reads `namespace/revision`; answers for unused ones are not kept. */
  readonly isUsed: (key: string) => boolean;

  /** No app uses this revision any more: drop what is known or queued about it. */
  forget(key: string): void {
    this.#values.delete(key);
    this.#queued.delete(key);
  }

  constructor(
    client: KubeClient,
    ttlMs: number,
    log: Logger,
    metrics: AppClientMetrics,
    onChange: (namespace: string, revision: string) => void,
    isUsed: (key: string) => boolean = () => true,
  ) {
    this.isUsed = isUsed;
    this.client = client;
    this.ttlMs = ttlMs;
    this.log = log;
    this.metrics = metrics;
    this.onChange = onChange;
  }

  get(namespace: string, revision: string): number | undefined {
    const key = `${namespace}/${revision}`;
    const hit = this.#values.get(key);
    if ((!hit || Date.now() - hit.at > this.ttlMs) && !this.#inFlight.has(key) && !this.#queued.has(key)) {
      // At most MAX_IN_FLIGHT lookups at once: an initial sync of thousands of apps must not
      // fire thousands of GETs at the API server (or hold thousands of responses in memory).
      if (!this.#held && this.#inFlight.size < ReplicaCache.MAX_IN_FLIGHT) void this.#fetch(namespace, revision, key, hit?.value);
      else this.#queued.set(key, { namespace, revision });
    }
    return hit?.value;
  }

  #held = false;

  /** Queues lookups instead of starting them (until {@link release}). */
  hold(): void {
    this.#held = true;
  }

  /** Starts the queued lookups (at most MAX_IN_FLIGHT at once). Safe to call twice. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    while (this.#inFlight.size < ReplicaCache.MAX_IN_FLIGHT && this.#queued.size > 0) this.#next();
  }

  static readonly MAX_IN_FLIGHT = 8;
  readonly #queued = new Map<string, { namespace: string; revision: string }>();

  #next(): void {
    if (this.#held) return;
    const first = this.#queued.entries().next();
    if (first.done) return;
    const [key, { namespace, revision }] = first.value;
    this.#queued.delete(key);
    void this.#fetch(namespace, revision, key, this.#values.get(key)?.value);
  }

  async #fetch(namespace: string, revision: string, key: string, old: number | undefined): Promise<void> {
    this.#inFlight.add(key);
    this.metrics.revisionRequests++;
    let value: number | undefined;
    try {
      const rev = await this.client.json({ path: `${collectionPath(KNATIVE_REVISIONS, namespace)}/${encodeURIComponent(revision)}` }) as KubeObject;
      const n = (rev.status as { actualReplicas?: unknown } | undefined)?.actualReplicas;
      value = typeof n === "number" && n >= 0 ? Math.floor(n) : undefined;
    } catch (err) {
      this.log.debug("revision lookup failed; currentReplicas stays unset", { revision: key, error: err instanceof KubeApiError ? err.message : String(err) });
    } finally {
      this.#inFlight.delete(key);
    }
    if (this.isUsed(key)) {
      this.#values.set(key, { value, at: Date.now() });
      if (value !== old) this.onChange(namespace, revision);
    }
    this.#next();
  }
}
