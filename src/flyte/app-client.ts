/**
 * `AppK8sClient`: Flyte's app watcher API in idiomatic TypeScript, as a thin facade over small
 * parts: the KService → App stream (`kservices.ts`), the hub of shown Apps, subscriptions and
 * resume tokens (`hub.ts`), replica counts from a Revision watch (`replicas.ts`), and List/Get
 * (`queries.ts`). It keeps the seed's shape (`startWatching`, `subscribe`/`unsubscribe`, `list`,
 * `getApp`) and fixes what Flyte's Go version gets wrong (see docs/flyte-compatibility.md).
 * @module
 */
import type { KubeClient } from "../kube/client.ts";
import { type Logger, silentLogger } from "../log.ts";
import { createWatcher, type ObjectWatcher } from "../watch/group.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { TimeSlice } from "../watch/slice.ts";
import type { ReflectorHealth } from "../watch/reflector.ts";
import { type KubeObject, objectKey, type ReflectorEvent } from "../watch/types.ts";
import { AppConverter } from "./convert.ts";
import { AppHub, type HubMetrics, type SubscribeOptions, type SubscribeTarget } from "./hub.ts";
import { KServiceApps, kserviceWatcherOptions, type KServiceWatchTuning, revisionOf } from "./kservices.ts";
import { type App, type AppsConfig, DEFAULT_APPS_CONFIG, type Identifier } from "./model.ts";
import { getApp, listApps, type QuerySource } from "./queries.ts";
import { preflight, revisionsReadable } from "./preflight.ts";
import { RevisionReplicas } from "./replicas.ts";
import type { SlowConsumerPolicy, Subscription } from "./subscriptions.ts";

export { appKey, type SubscribeOptions, type SubscribeTarget } from "./hub.ts";
export { APP_MANAGED_SELECTOR, AppNotFoundError, InvalidPageTokenError, notFoundText } from "./queries.ts";
export { AppsForbiddenError, KnativeNotInstalledError } from "./preflight.ts";

/** Options for {@link AppK8sClient}. */
export interface AppK8sClientOptions {
  client: KubeClient;
  /** Namespace(s) of the app KServices (default `"flyte"`); `"*"` or `[]` for all. */
  namespace?: string | string[];
  /** Flyte's `internalApps` keys, plus the slow-consumer policy (default `coalesce`). */
  config?: Partial<AppsConfig> & { slowConsumer?: SlowConsumerPolicy };
  logger?: Logger;
  /** Tuning of the underlying watches (timeouts, backoff, initial list mode). */
  watch?: KServiceWatchTuning;
  /** Watch Revisions for `currentReplicas` (default true; needs list and watch on revisions.serving.knative.dev). */
  replicas?: boolean;
  /** How many recent app changes are kept for resuming subscriptions (default 10,000). */
  resumeWindow?: number;
  /**
   * The cluster's name (`--cluster`): every App's `status.assignedCluster`, and part of every
   * resume token. None (the default): both stay as Flyte's data plane leaves them, empty.
   */
  cluster?: string;
  /** Time for both watches, the sync deadline and catch-up waits (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
  /**
   * How long the watch loops may work through a backlog of events before they give the event loop
   * a turn (default 4 ms): without one, no subscriber's socket is written until the whole backlog
   * is published, so the first event of a burst waits for the last.
   */
  sliceMs?: number;
}

/** Options of {@link AppK8sClient.startWatching}. */
export interface StartWatchingOptions {
  /**
   * The watch's lifetime: aborting it stops the watch, as {@link AppK8sClient.stopWatching} does.
   * The watch holds one abort listener on it, removed when the watch ends however it ends.
   */
  signal?: AbortSignal;
  /** Reject when the initial sync takes longer (the watch keeps running and keeps trying). */
  timeoutMs?: number;
}

/** Counters for the metrics endpoint. */
export interface AppClientMetrics extends HubMetrics {
  conversionErrors: number;
  /** Revision reads (the Revision watch lists and watches; kept for the metrics' shape). */
  revisionRequests: number;
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
  readonly #options: AppK8sClientOptions;
  /** The one KService → App converter: its spec and ingress memos live as long as this client. */
  readonly #converter: AppConverter;
  readonly #hub: AppHub;
  readonly #kservices: KServiceApps;
  #replicas: RevisionReplicas | undefined;
  #watcher: ObjectWatcher<KubeObject> | undefined;
  #synced = false;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #started: Promise<void> | undefined;
  /** Why the last {@link startWatching} failed (cleared when one succeeds). */
  #startError: string | undefined;
  readonly #clock: Clock;
  /** Shared by both watch loops: they run on one thread. */
  readonly #slice: TimeSlice;
  #stoppedAt: number;

  constructor(options: AppK8sClientOptions) {
    this.#client = options.client;
    this.#options = options;
    this.#clock = options.clock ?? options.watch?.clock ?? realClock;
    this.#stoppedAt = this.#clock.now();
    this.#slice = new TimeSlice(options.sliceMs ?? 4, this.#clock);
    const { slowConsumer, ...config } = options.config ?? {};
    this.config = { ...DEFAULT_APPS_CONFIG, ...config };
    this.#converter = new AppConverter(this.config, { cluster: options.cluster });
    this.policy = slowConsumer ?? "coalesce";
    const ns = options.namespace ?? "flyte";
    const list = typeof ns === "string" ? [ns] : ns;
    this.namespaces = list.includes("*") ? [] : list;
    this.#log = (options.logger ?? silentLogger).child({ component: "apps" });
    this.#hub = new AppHub({ policy: this.policy, bufferSize: this.config.watchBufferSize, resumeWindow: options.resumeWindow ?? 10_000, cluster: options.cluster, logger: this.#log, metrics: this.metrics, clock: this.#clock });
    this.#kservices = new KServiceApps({
      hub: this.#hub,
      converter: this.#converter,
      logger: this.#log,
      replicas: (revision) => this.#replicas?.get(revision),
      kservice: (key) => this.#watcher?.store.get(key),
      onConversionError: () => this.metrics.conversionErrors++,
    });
  }

  /**
   * Starts the watch (idempotent) and resolves once the initial sync is done. The watch then runs
   * until `signal` aborts or {@link stopWatching} — a `timeoutMs` only bounds the wait for the sync.
   * Rejects with {@link KnativeNotInstalledError} or {@link AppsForbiddenError} when the API server
   * says so, before any retrying starts. `startWatching(signal)` is `startWatching({ signal })`.
   */
  startWatching(options?: AbortSignal | StartWatchingOptions): Promise<void> {
    const { signal, timeoutMs } = options instanceof AbortSignal ? { signal: options, timeoutMs: undefined } : (options ?? {});
    if (!this.#started) {
      const started = this.#start(signal);
      this.#started = started;
      // A failed start (API server unreachable, Knative missing, forbidden) may be retried.
      started.then(() => (this.#startError = undefined), (err: unknown) => {
        this.#startError = err instanceof Error ? err.message : String(err);
        if (this.#started === started) this.#started = undefined;
      });
    }
    const ready = this.#started;
    if (timeoutMs === undefined) return ready;
    return new Promise<void>((resolve, reject) => {
      const fail = () => reject(new Error(`the initial sync of app KServices did not finish within ${timeoutMs} ms (the watch keeps trying)`));
      const timer = this.#clock.setTimeout(fail, timeoutMs, "sync-deadline");
      ready.then(resolve, reject).finally(() => this.#clock.clearTimeout(timer));
    });
  }

  /**
   * The caller's `lifetime` gets one abort listener, removed however the watch ends; requests take
   * our own signal (undici's listeners stay until GC). Deno keeps an `AbortSignal.timeout` timer
   * alive while its signal has a listener: one left kept the process up (issue 24, item 9a).
   */
  async #start(lifetime?: AbortSignal): Promise<void> {
    if (lifetime?.aborted) throw new Error("startWatching: the signal is already aborted");
    const stop = new AbortController();
    const follow = () => stop.abort(lifetime?.reason);
    const release = () => lifetime?.removeEventListener("abort", follow);
    lifetime?.addEventListener("abort", follow, { once: true });
    try {
      await this.#run(stop, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** {@link #start} once it follows the caller's signal: `stop` is the watch's lifetime, `release` lets the caller's signal go. */
  async #run(stop: AbortController, release: () => void): Promise<void> {
    await preflight(this.#client, this.namespaces, stop.signal);
    this.#stop = stop;
    const watch = { ...this.#options.watch, clock: this.#clock };
    if (this.#options.replicas !== false) this.#replicas = await this.#revisionWatch(stop.signal);
    const watcher = createWatcher<KubeObject>(kserviceWatcherOptions(this.#client, this.namespaces, watch, this.#log));
    this.#watcher = watcher;
    let synced!: () => void;
    let failed!: (e: unknown) => void;
    const ready = new Promise<void>((resolve, reject) => ((synced = resolve), (failed = reject)));
    const replicas = this.#replicas;
    // Revisions first: once they are listed, every KService's first App has its replica count.
    let revisionsListed!: () => void;
    const listed = new Promise<void>((resolve) => (revisionsListed = resolve));
    const loops: Promise<void>[] = replicas ? [this.#revisionLoop(replicas, stop.signal, revisionsListed)] : [];
    if (!replicas) revisionsListed();
    loops.push(listed.then(() => stop.signal.aborted ? undefined : this.#kserviceLoop(watcher, stop.signal, synced)));
    this.#loop = Promise.allSettled(loops).then(() => {
      release();
      // However the watch ended, nothing it held is current any more: say so everywhere.
      this.#ended();
      failed(new Error("the watch stopped before the initial sync"));
    });
    // Either loop ending ends both: a half-working watch is not a working one.
    for (const l of loops) l.finally(() => stop.abort()).catch(() => {});
    await ready;
  }

  async #kserviceLoop(watcher: ObjectWatcher<KubeObject>, signal: AbortSignal, synced: () => void): Promise<void> {
    try {
      for await (const event of watcher.run(signal)) {
        if (event.type === "synced") {
          const stream = event.namespace ?? this.namespaces[0] ?? "*";
          if (event.phase === "initial") {
            const rvs = event.resourceVersions ?? { [this.namespaces[0] ?? ""]: event.resourceVersion };
            this.#hub.synced(Object.fromEntries(Object.entries(rvs).map(([ns, rv]) => [ns || "*", rv])));
            this.#synced = true;
            synced();
          } else {
            this.#hub.relisted(stream, event.resourceVersion);
          }
          continue;
        }
        const stream = this.#streamOf(event.object);
        // A relist's diff is not at any watch position: no resume token; the `synced` marker after it has one.
        const resumable = !isRelistDiff(event);
        if (resumable && !(event.type === "deleted" && event.inferred)) this.#hub.advance(stream, event.object.metadata.resourceVersion ?? "");
        this.#kservices.apply(objectKey(event.object), event.type === "deleted" ? undefined : event.object, resumable ? stream : undefined);
        await this.#slice.spent();
      }
    } catch (err) {
      this.#log.error("app watch loop ended", { error: (err as Error).message });
      throw err;
    }
  }

  /**
   * Replica counts are not journaled: a resume token is a position of the KService watch, the
   * one position every replica agrees on (a Revision watch's position would make a token from a
   * replica restarted on the same cluster "too old" whenever any Revision changed). A replica
   * change is a live update; a client that resumes gets it with the app's next change or snapshot.
   */
  async #revisionLoop(replicas: RevisionReplicas, signal: AbortSignal, listed: () => void): Promise<void> {
    try {
      for await (const { event, changed } of replicas.run(signal)) {
        if (event.type === "synced") {
          if (event.phase === "initial") listed();
          continue;
        }
        this.metrics.revisionRequests++;
        if (changed && this.#kservices.uses(changed)) this.#kservices.revisionChanged(changed);
        await this.#slice.spent();
      }
    } catch (err) {
      this.#log.error("revision watch loop ended", { error: (err as Error).message });
      throw err;
    } finally {
      listed(); // never leave the start waiting on a watch that ended
    }
  }

  /**
   * Starts the Revision watch and waits for its initial sync, so the first App of every KService
   * already has its replica count. Without list/watch on revisions: a warning, and no counts.
   */
  async #revisionWatch(signal?: AbortSignal): Promise<RevisionReplicas | undefined> {
    if (!(await revisionsReadable(this.#client, this.namespaces, this.#log, signal))) return undefined;
    return new RevisionReplicas({ client: this.#client, namespaces: this.namespaces, logger: this.#log, watch: { ...stripParse(this.#options.watch ?? {}), clock: this.#clock } });
  }

  /** Stops the watch and ends every subscription. */
  async stopWatching(): Promise<void> {
    this.#stop?.abort();
    await this.#loop;
    this.#ended();
  }

  #ended(): void {
    this.#hub.clear();
    this.#kservices.clear();
    this.#started = undefined;
    this.#loop = undefined;
    this.#watcher = undefined;
    this.#replicas = undefined;
    if (this.#synced) this.#stoppedAt = this.#clock.now();
    this.#synced = false;
  }

  /** True once the initial sync is done, and while the watch runs (false again once it stops). */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * The last error of the watch, for clients told to wait (`/readyz`, a refused stream): the
   * failed request that keeps the initial sync from finishing (or the watch from being healthy
   * after it), e.g. `cannot reach the Kubernetes API at …: ECONNREFUSED`; undefined while healthy
   * or before any request has failed.
   */
  get lastWatchError(): string | undefined {
    const h = this.health();
    if (h.healthy) return undefined;
    // "not started" / "not watching" are states, not errors: then the last failed start says why.
    return h.reason !== undefined && !/(^|: )not (started|watching)$/.test(h.reason) ? h.reason : this.#startError;
  }

  /**
   * Contact with the API server for what clients get: the KService watch (every App, event and
   * resume position); not watching is unhealthy. Readiness follows this. The Revision watch, which
   * only feeds `currentReplicas`, reports on its own ({@link replicasHealth}).
   */
  health(): ReflectorHealth {
    return this.#watcher?.health() ?? { healthy: false, reason: "not watching", since: this.#stoppedAt };
  }

  /**
   * The Revision watch's contact with the API server (`reason` prefixed `revisions: `), or
   * undefined when there is none (replicas off, or Revisions not readable: then counts stay unset
   * from the start). While it is unhealthy, replica counts may be stale: degraded, not unready.
   */
  replicasHealth(): ReflectorHealth | undefined {
    const r = this.#replicas?.health();
    return r && !r.healthy ? { ...r, reason: `revisions: ${r.reason ?? "unhealthy"}` } : r;
  }

  /** Counters of the underlying KService watch (summed over namespaces), if watching. */
  watchMetrics(): ReturnType<ObjectWatcher<KubeObject>["metricsSnapshot"]> | undefined {
    return this.#watcher?.metricsSnapshot();
  }

  /** The resume token of the current watch position. */
  token(): string {
    return this.#hub.token();
  }

  /** How often the watch loops paused a backlog to give the event loop a turn (see `sliceMs`). */
  get loopYields(): number {
    return this.#slice.yields;
  }

  /** Number of app changes held for resuming. */
  get journalSize(): number {
    return this.#hub.journal.size;
  }

  /** Waits (up to `timeoutMs`) until this client has applied everything up to `token`; see {@link AppHub.catchUp}. */
  catchUp(token: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return this.#hub.catchUp(token, timeoutMs, signal);
  }

  /**
   * Subscribes to app events. With `snapshot: true` the subscription first yields a `createEvent`
   * for every matching app (its `snapshotSize` says how many), then live events: no gap, no duplicate.
   */
  subscribe(target: SubscribeTarget, options: SubscribeOptions = {}): Subscription {
    return this.#hub.subscribe(target, options);
  }

  /** Ends a subscription (the seed's `Unsubscribe`); safe to call twice. */
  unsubscribe(_target: SubscribeTarget, subscription: Subscription): void {
    subscription.close();
  }

  /**
   * Flyte's `List`: apps of a project and domain (by their app-id identity) across every watched
   * namespace, in KService order, `limit` per page and a `token` to continue; from the synced
   * watch, or the API server before the first sync. Unconvertible items are skipped with a warning.
   * `org`: only that org's apps (appwatch's; see `listApps`).
   */
  list(project: string, domain: string, limit = 0, token = "", org = ""): Promise<{ apps: App[]; token: string }> {
    return listApps(this.#queries(), project, domain, limit, token, org);
  }

  /** KServices whose project/domain labels disagree with their app-id (see `KServiceApps`). */
  get identityMismatches(): number {
    return this.#kservices.identityMismatches;
  }

  /** Flyte's `GetApp`: the app of that identity (any org unless `id.org` is set), or {@link AppNotFoundError}. */
  getApp(id: Identifier): Promise<App> {
    return getApp(this.#queries(), id);
  }

  #queries(): QuerySource {
    const self = this;
    return {
      hub: this.#hub,
      get synced() {
        return self.#synced;
      },
      client: this.#client,
      namespaces: this.namespaces,
      convert: (ksvc) => {
        const rev = revisionOf(ksvc);
        return this.#converter.convert(ksvc, { currentReplicas: rev ? this.#replicas?.get(rev) : undefined, logger: this.#log });
      },
      logger: this.#log,
      onConversionError: () => this.metrics.conversionErrors++,
    };
  }

  /** The journal stream of an object: its namespace when several are watched, else the one stream. */
  #streamOf(obj: KubeObject): string {
    if (this.namespaces.length > 1) return obj.metadata.namespace ?? "";
    return this.namespaces[0] ?? "*";
  }
}

/** An event of a relist's diff (the reflector marks them; see `ReflectorEvent`). */
function isRelistDiff(event: ReflectorEvent<KubeObject>): boolean {
  return event.type !== "synced" && event.relist === true;
}

/** The watch options without the KService-specific `parse`. */
function stripParse(watch: NonNullable<AppK8sClientOptions["watch"]>): NonNullable<AppK8sClientOptions["watch"]> {
  const { parse: _parse, prune: _prune, ...rest } = watch;
  return rest;
}

