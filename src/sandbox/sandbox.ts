/**
 * The {@link Sandbox}: an in-memory, Kubernetes-compatible API server for Knative `services`
 * and `revisions`, with a programmatic API for tests and fault hooks.
 * @module
 */
import type { Hono } from "hono";
import { type Logger, silentLogger } from "../log.ts";
import { type AppCore, createApp } from "./app.ts";
import { ContinueTokens } from "./continue.ts";
import { Faults } from "./faults.ts";
import { RESOURCE_NAMES } from "./resources.ts";
import { ObjectStore } from "./store.ts";
import type { OpenBody } from "./stream.ts";
import { TimerSet } from "./timers.ts";
import { realClock } from "../watch/clock.ts";
import type { FaultInjector, KubeObject, RequestRecord, SandboxOptions, SandboxResource } from "./types.ts";
import { WatchHub } from "./watch.ts";

const clone = <T>(v: T): T => structuredClone(v);

/** A Kubernetes-compatible API server for `serving.knative.dev/v1` services and revisions. */
export class Sandbox {
  /** The HTTP API; serve `app.fetch` (see {@link startSandbox}). */
  readonly app: Hono;
  /** Every HTTP request, in arrival order (recorded before authentication). */
  readonly requests: RequestRecord[] = [];
  readonly #faults = new Faults();
  readonly #store: ObjectStore;
  readonly #timers: TimerSet;
  readonly #hub: WatchHub;
  readonly #tokens: ContinueTokens;
  readonly #open = new Map<OpenBody, boolean>();
  readonly #logger: Logger;
  readonly #tooLargeWaitMs: number;
  #token: string | undefined;
  #disposed = false;

  constructor(options: SandboxOptions = {}) {
    const historyLimit = options.historyLimit ?? 1000;
    const clock = options.clock ?? realClock;
    this.#timers = new TimerSet(clock);
    this.#logger = options.logger ?? silentLogger;
    this.#token = options.token;
    this.#tooLargeWaitMs = options.tooLargeWaitMs ?? 3000;
    this.#store = new ObjectStore({ historyLimit, ...(options.initialResourceVersion !== undefined ? { initialRV: options.initialResourceVersion } : {}) });
    this.#tokens = new ContinueTokens(options.continueTtlMs ?? 300_000, clock);
    this.#hub = new WatchHub(this.#store, this.#timers, {
      historyLimit: this.#store.historyLimit,
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
      logger: this.#logger,
    });
    const core: AppCore = {
      store: this.#store,
      hub: this.#hub,
      tokens: this.#tokens,
      timers: this.#timers,
      faults: this.#faults,
      requests: this.requests,
      now: () => clock.now(),
      logger: this.#logger,
      watchList: options.watchList ?? true,
      leadingNewline: options.leadingNewline ?? false,
      token: () => this.#token,
      disposed: () => this.#disposed,
      register: (handle, watch) => {
        this.#open.set(handle, watch);
        return () => this.#open.delete(handle);
      },
      waitForRV: (rv) =>
        this.#disposed
          ? Promise.resolve(this.#store.rv >= rv)
          : this.#store.waitForRV(rv, (onTimeout) => this.#timers.set(onTimeout, this.#tooLargeWaitMs, "too-large-rv")),
      // kube-apiserver picks [minRequestTimeout, 2×minRequestTimeout) with the 1800 s default.
      defaultTimeoutMs: () => (1800 + Math.floor(Math.random() * 1800)) * 1000,
    };
    this.app = createApp(core);
  }

  /** Fault rules applied to matching HTTP requests. */
  get faults(): FaultInjector {
    return this.#faults;
  }

  /** The current global resourceVersion (one counter for all resources, like etcd). */
  get resourceVersion(): string {
    return String(this.#store.rv);
  }

  /** True after {@link dispose}. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** POST semantics: server-set uid, timestamps, generation 1 and RV; `status` is dropped. Throws KubeApiError. */
  create(resource: SandboxResource, obj: KubeObject): KubeObject {
    return clone(this.#store.create(resource, obj.metadata?.namespace ?? "default", clone(obj)));
  }

  /** PUT semantics; optimistic concurrency only when `metadata.resourceVersion` is set. Status is ignored. */
  update(resource: SandboxResource, obj: KubeObject): KubeObject {
    const ns = obj.metadata?.namespace ?? "default";
    return clone(this.#store.update(resource, ns, obj.metadata?.name ?? "", clone(obj), { subresource: "main" }));
  }

  /** PUT /status semantics: only status changes; no generation bump. */
  updateStatus(resource: SandboxResource, namespace: string, name: string, status: unknown): KubeObject {
    return clone(this.#store.update(resource, namespace, name, { status: clone(status) }, { subresource: "status" }));
  }

  /** JSON merge patch (RFC 7386) on the main resource (status ignored). */
  patch(resource: SandboxResource, namespace: string, name: string, mergePatch: unknown): KubeObject {
    return clone(this.#store.patch(resource, namespace, name, clone(mergePatch), "main"));
  }

  /** DELETE semantics: returns the deleted object stamped with the delete RV. */
  delete(resource: SandboxResource, namespace: string, name: string): KubeObject {
    return clone(this.#store.delete(resource, namespace, name));
  }

  get(resource: SandboxResource, namespace: string, name: string): KubeObject | undefined {
    const obj = this.#store.get(resource, namespace, name);
    return obj && clone(obj);
  }

  /** Current objects, sorted by namespace/name. */
  list(resource: SandboxResource, namespace?: string): KubeObject[] {
    const objects = this.#store.objects(resource);
    const out: KubeObject[] = [];
    for (const key of this.#store.sortedKeys(resource)) {
      const obj = objects.get(key)!;
      if (namespace === undefined || obj.metadata.namespace === namespace) out.push(clone(obj));
    }
    return out;
  }

  /**
   * Drops all history up to now: watches and Exact lists from any older RV get 410, and live
   * continue tokens expire. Open watches keep streaming (like a real compaction under the cacher).
   */
  compact(): void {
    this.#store.compact();
    this.#tokens.expireAll();
  }

  /** Every continue token issued so far answers 410 Expired (with an inconsistent continuation). */
  expireContinueTokens(): void {
    this.#tokens.expireAll();
  }

  /** Changes the accepted bearer token (undefined = no auth). */
  setToken(token: string | undefined): void {
    this.#token = token;
  }

  /** Watch responses currently open (fault streams included). */
  activeWatches(): number {
    let n = 0;
    for (const watch of this.#open.values()) if (watch) n++;
    return n;
  }

  /** Ends every open watch stream cleanly, as a server restart or timeout would. */
  closeWatches(): void {
    for (const [handle, watch] of [...this.#open]) if (watch) handle.end();
  }

  /**
   * Behaves like a kube-apiserver restart, as measured against a real one (docs/real-cluster.md):
   * every open stream ends; the new watch cache starts at the current RV, so a watch from any
   * older RV gets 410; and for `warmupMs` (default 1 s) lists and watches answer HTTP 429
   * "storage is (re)initializing" with `Retry-After: 1`.
   */
  restart(options: { warmupMs?: number } = {}): void {
    this.closeWatches();
    this.compact();
    const warmupMs = options.warmupMs ?? 1000;
    if (warmupMs <= 0) return;
    const action = { type: "status", code: 429, reason: "TooManyRequests", message: "storage is (re)initializing", retryAfterSeconds: 1 } as const;
    const rules = (["list", "watch"] as const).map((verb) => this.faults.add({ verb, times: Infinity, action }));
    this.#timers.set(() => rules.forEach((r) => r.remove()), warmupMs, "warmup");
  }

  /** Clears all timers and ends all streams. The sandbox answers no new watches afterwards. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const handle of [...this.#open.keys()]) handle.end();
    this.#hub.dispose();
    this.#store.releaseWaiters();
    this.#timers.close();
    this.#logger.debug("sandbox disposed", { resources: RESOURCE_NAMES });
  }

  /** Timers currently armed (for leak tests). */
  get pendingTimers(): number {
    return this.#timers.size;
  }
}
