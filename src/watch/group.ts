/**
 * Watching several namespaces: one reflector per namespace (RBAC is often
 * per namespace, so one cluster-wide watch is not an option), merged into one
 * ordered event stream. Each object is stored once, in its namespace's
 * reflector; the merge's store is a read-only view over them.
 * @module
 */
import { newReflectorMetrics, type ReflectorMetrics } from "./metrics.ts";
import { mux } from "./mux.ts";
import { Reflector, type ReflectorHealth, type ReflectorOptions } from "./reflector.ts";
import { compareResourceVersions } from "./resource-version.ts";
import type { StoreReader, StoreSnapshot } from "./store.ts";
import { type KubeObject, objectKey, type ReflectorEvent } from "./types.ts";

/** What every watcher offers: the event stream, a consistent snapshot, and counters. */
export interface ObjectWatcher<T extends KubeObject = KubeObject> {
  /** Lists and watches until `signal` aborts; see {@link Reflector.run}. */
  run(signal?: AbortSignal): AsyncGenerator<ReflectorEvent<T>, void, undefined>;
  /** The objects as of the last event yielded. */
  snapshot(): StoreSnapshot<T>;
  /**
   * The one store of the objects as of the last event yielded, read-only (a single namespace: its
   * reflector's store; several: the merge's). Written before each event is yielded.
   */
  readonly store: StoreReader<T>;
  /** True once every watched scope has completed its initial sync. */
  readonly synced: boolean;
  /** Counters (summed over namespaces). */
  metricsSnapshot(): ReflectorMetrics;
  /** Healthy when every namespace's reflector is; else the first failure. */
  health(): ReflectorHealth;
}

/** Options for {@link createWatcher}: the reflector's, with a namespace list. */
export type WatcherOptions<T extends KubeObject> = Omit<ReflectorOptions<T>, "namespace"> & {
  /** One namespace, several, or undefined / `[]` for all namespaces. */
  namespaces?: string | string[];
};

/** A watcher for one namespace, several, or all. */
export function createWatcher<T extends KubeObject>(options: WatcherOptions<T>): ObjectWatcher<T> {
  const list = typeof options.namespaces === "string" ? [options.namespaces] : [...new Set(options.namespaces ?? [])];
  if (list.length <= 1) {
    const r = new Reflector<T>({ ...options, namespace: list[0] });
    return {
      run: (signal) => r.run(signal),
      snapshot: () => r.snapshot(),
      store: r.store.reader,
      get synced() {
        return r.synced;
      },
      metricsSnapshot: () => structuredClone(r.metrics),
      health: () => r.health,
    };
  }
  return new ReflectorGroup<T>(list.map((namespace) => new Reflector<T>({ ...options, namespace })));
}

/**
 * What {@link ReflectorGroup} needs of each member: a {@link Reflector}, or a stand-in in tests
 * (a stand-in without `commit` writes its store itself).
 */
export type GroupMember<T extends KubeObject> = Pick<Reflector<T>, "run" | "namespace" | "store" | "health" | "metrics"> & { commit?(): void };

/** Several reflectors behind one stream and one store. */
export class ReflectorGroup<T extends KubeObject = KubeObject, R extends GroupMember<T> = Reflector<T>> implements ObjectWatcher<T> {
  readonly reflectors: readonly R[];
  /** Member by namespace: an object's key (`namespace/name`) names the store that holds it. */
  readonly #byNamespace: Map<string, R>;
  #synced = false;
  #resourceVersion = "";
  #running = false;
  /** The merged view: each member writes its own store only as the merge hands its event on (RunOptions.consumerCommits). */
  readonly store: StoreReader<T>;

  constructor(reflectors: R[]) {
    this.reflectors = reflectors;
    this.#byNamespace = new Map(reflectors.map((r) => [r.namespace ?? "", r]));
    const group = this;
    this.store = Object.freeze({
      get: (key: string) => group.#storeOf(key)?.get(key),
      has: (key: string) => group.#storeOf(key)?.has(key) ?? false,
      get size() {
        let n = 0;
        for (const r of group.reflectors) n += r.store.size;
        return n;
      },
      get resourceVersion() {
        return group.#resourceVersion;
      },
      get synced() {
        return group.#synced;
      },
      snapshot: () => group.snapshot(),
    });
  }

  get synced(): boolean {
    return this.#synced;
  }

  snapshot(): StoreSnapshot<T> {
    const items = this.reflectors.flatMap((r) => r.store.snapshot().items);
    items.sort((a, b) => {
      const ka = objectKey(a), kb = objectKey(b);
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
    return { items, resourceVersion: this.#resourceVersion, synced: this.#synced };
  }

  #storeOf(key: string): StoreReader<T> | undefined {
    const slash = key.indexOf("/");
    return this.#byNamespace.get(slash < 0 ? "" : key.slice(0, slash))?.store;
  }

  health(): ReflectorHealth {
    const bad = this.reflectors.find((r) => !r.health.healthy);
    if (!bad) return { healthy: true, since: Math.max(...this.reflectors.map((r) => r.health.since)) };
    const h = bad.health;
    return { ...h, reason: `namespace ${bad.namespace}: ${h.reason}` };
  }

  metricsSnapshot(): ReflectorMetrics {
    const sum = newReflectorMetrics();
    for (const r of this.reflectors) addMetrics(sum, r.metrics);
    return sum;
  }

  async *run(signal?: AbortSignal): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    if (this.#running) throw new Error("ReflectorGroup.run: already running");
    this.#running = true;
    const initialDone = new Map<number, string>(); // reflector → its initial list RV
    try {
      // mux, not Promise.race: a quiet namespace must cost nothing per event of a busy one,
      // and leaving the loop must abort the reflectors rather than wait for their next event.
      const sources = this.reflectors.map((r) => (s: AbortSignal) => r.run(s, { consumerCommits: true }));
      for await (const { index: i, value: event } of mux(sources, signal)) {
        const member = this.reflectors[i]!;
        // Taken: now its store may show it (the others' stores still lack their pending events).
        member.commit?.();
        const namespace = member.namespace;
        if (event.type === "synced") {
          if (!this.#synced) {
            initialDone.set(i, event.resourceVersion);
            if (initialDone.size === this.reflectors.length) {
              const rv = this.#maxResourceVersion();
              this.#resourceVersion = rv;
              this.#synced = true;
              const resourceVersions: Record<string, string> = {};
              for (const [j, listRv] of initialDone) resourceVersions[this.reflectors[j]!.namespace ?? ""] = listRv;
              yield { type: "synced", phase: "initial", resourceVersion: rv, resourceVersions };
            }
          } else {
            this.#resourceVersion = this.#maxResourceVersion();
            yield { ...event, phase: "resync", ...(namespace ? { namespace } : {}) };
          }
        } else {
          yield event;
        }
      }
    } finally {
      this.#running = false;
    }
  }

  #maxResourceVersion(): string {
    let max = "";
    for (const r of this.reflectors) {
      const rv = r.store.resourceVersion;
      if (!max || (compareResourceVersions(rv, max) ?? 0) > 0) max = rv;
    }
    return max;
  }
}

function addMetrics(sum: ReflectorMetrics, m: ReflectorMetrics): void {
  for (const key of Object.keys(m) as (keyof ReflectorMetrics)[]) {
    const value = m[key];
    if (typeof value === "number") {
      if (key === "lastEventTime") sum.lastEventTime = Math.max(sum.lastEventTime, value);
      else (sum as unknown as Record<string, number>)[key]! += value;
    } else if (typeof value === "object") {
      const target = sum[key] as unknown as Record<string, number>;
      for (const [k, n] of Object.entries(value as Record<string, number>)) target[k] = (target[k] ?? 0) + n;
    } else if (key === "lastResourceVersion" && (compareResourceVersions(m.lastResourceVersion, sum.lastResourceVersion) ?? 1) > 0) {
      sum.lastResourceVersion = m.lastResourceVersion;
    }
  }
}
