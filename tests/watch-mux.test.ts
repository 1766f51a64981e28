/**
 * Merging several namespaces into one stream (`ReflectorGroup`): leaving the
 * loop returns even without a signal, and a quiet namespace costs nothing per
 * event of a busy one (no promise reactions pile up on its pending `next()`).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { KubeClient } from "../src/kube/client.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { createWatcher, ReflectorGroup } from "../src/watch/group.ts";
import { mux } from "../src/watch/mux.ts";
import { newReflectorMetrics } from "../src/watch/metrics.ts";
import type { ReflectorHealth } from "../src/watch/reflector.ts";
import { ObjectStore } from "../src/watch/store.ts";
import { KNATIVE_SERVICES, type KubeObject, objectKey, type ReflectorEvent } from "../src/watch/types.ts";
import { forceGc } from "./helpers/memory.ts";
import { waitFor } from "./helpers/run.ts";

/** Rejects after `ms` unless cleared: a failure guard, never a duration assertion. */
function guard(ms: number, what: string): { promise: Promise<never>; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms);
  });
  return { promise, clear: () => clearTimeout(timer) };
}

function ksvc(name: string, namespace: string, rv = "1"): KubeObject {
  return { apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name, namespace, uid: `uid-${name}`, resourceVersion: rv }, spec: {} };
}

/** Counts every `then` on promises of this class (including those derived by `then` itself). */
class CountingPromise<T> extends Promise<T> {
  static calls = 0;
  override then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    CountingPromise.calls++;
    return super.then(onfulfilled, onrejected);
  }
}

type Member = {
  namespace: string;
  store: ObjectStore<KubeObject>;
  metrics: ReturnType<typeof newReflectorMetrics>;
  health: ReflectorHealth;
  run(signal?: AbortSignal): AsyncGenerator<ReflectorEvent<KubeObject>, void, undefined>;
};

function member(namespace: string, run: (store: ObjectStore<KubeObject>, signal: AbortSignal | undefined) => AsyncGenerator<ReflectorEvent<KubeObject>, void, undefined>): Member {
  const store = new ObjectStore<KubeObject>();
  return { namespace, store, metrics: newReflectorMetrics(), health: { healthy: true, since: 0 }, run: (signal) => run(store, signal) };
}

/** A namespace that syncs, then stays silent: its one pending `next()` settles only when `signal` aborts. */
function quietSource(store: ObjectStore<KubeObject>, signal: AbortSignal | undefined): AsyncGenerator<ReflectorEvent<KubeObject>, void, undefined> {
  let synced = false;
  let silent: Promise<IteratorResult<ReflectorEvent<KubeObject>, void>> | undefined;
  const it = {
    next(): Promise<IteratorResult<ReflectorEvent<KubeObject>, void>> {
      if (!synced) {
        synced = true;
        store.setResourceVersion("1");
        return Promise.resolve({ done: false, value: { type: "synced", phase: "initial", resourceVersion: "1" } });
      }
      silent ??= new CountingPromise((resolve) => {
        if (signal?.aborted) return resolve({ done: true, value: undefined });
        signal?.addEventListener("abort", () => resolve({ done: true, value: undefined }), { once: true });
      });
      return silent;
    },
    return: () => Promise.resolve({ done: true as const, value: undefined }),
    throw: (e: unknown) => Promise.reject(e),
    [Symbol.asyncIterator]() {
      return it;
    },
  };
  return it as unknown as AsyncGenerator<ReflectorEvent<KubeObject>, void, undefined>;
}

async function* busySource(store: ObjectStore<KubeObject>, events: number): AsyncGenerator<ReflectorEvent<KubeObject>, void, undefined> {
  store.setResourceVersion("1");
  yield { type: "synced", phase: "initial", resourceVersion: "1" };
  let prev = ksvc("hot", "busy", "1");
  for (let i = 2; i < events + 2; i++) {
    const next = ksvc("hot", "busy", String(i));
    // A stand-in without commit() writes its own store (GroupMember).
    store.set(next);
    store.setResourceVersion(String(i));
    yield { type: "modified", object: next, previous: prev };
    prev = next;
  }
}

describe("multi-namespace merge", () => {
  test("break out of a multi-namespace run() with no signal returns, and leaves no watch open", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const client = new KubeClient({ server: sb.url });
    sb.sandbox.create("services", { apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name: "app", namespace: "a" }, spec: {} });
    const w = createWatcher({ client, resource: KNATIVE_SERVICES, namespaces: ["a", "b"], initialList: "paginated" });
    const g = guard(20_000, "still inside run() 20 s after the consumer left its loop");
    try {
      const seen: string[] = [];
      const loop = (async () => {
        for await (const e of w.run()) {
          seen.push(e.type);
          if (e.type === "synced") break; // both namespaces now sit in a quiet watch
        }
      })();
      await Promise.race([loop, g.promise]);
      assert.deepEqual(seen, ["added", "synced"]);
      await waitFor(() => sb.sandbox.activeWatches() === 0, "no watch left open on the server");
    } finally {
      g.clear();
      await sb.close();
    }
  });

  test("several namespaces: each object sits in one store (its namespace's reflector's), which never shows an event the merge has not handed on", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const client = new KubeClient({ server: sb.url });
    const svc = (ns: string, name: string) => ({ apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name, namespace: ns }, spec: {} });
    for (const ns of ["a", "b"]) for (let i = 0; i < 5; i++) sb.sandbox.create("services", svc(ns, `initial-${i}`));
    const group = createWatcher({ client, resource: KNATIVE_SERVICES, namespaces: ["a", "b"] }) as ReflectorGroup<KubeObject>;
    const stop = new AbortController();
    const seen = new Set<string>();
    try {
      for await (const e of group.run(stop.signal)) {
        if (e.type === "synced") {
          for (let i = 0; i < 5; i++) for (const ns of ["a", "b"]) sb.sandbox.create("services", svc(ns, `live-${i}`));
          continue;
        }
        const key = objectKey(e.object);
        seen.add(key);
        for (const r of group.reflectors) {
          for (const k of r.store.keys()) assert.ok(seen.has(k), `${k} is in namespace ${r.namespace}'s store before the merge handed it on`);
        }
        const member = group.reflectors.find((r) => r.namespace === e.object.metadata.namespace)!;
        assert.equal(group.store.get(key), member.store.get(key), "the merged view reads the member's store");
        assert.equal(group.store.get(key), e.object);
        assert.equal(group.store.size, seen.size);
        if (seen.size === 20) break;
      }
    } finally {
      stop.abort();
      await sb.close();
    }
    assert.equal(seen.size, 20);
    assert.deepEqual(group.snapshot().items.map(objectKey), [...seen].sort());
  });

  test("one store, read-only to others: each event's object is the store's own (no copy), written before the event is yielded", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const client = new KubeClient({ server: sb.url });
    const ksvc = (ns: string, name: string) => ({ apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name, namespace: ns }, spec: {} });
    sb.sandbox.create("services", ksvc("a", "one"));
    for (const namespaces of [["a"], ["a", "b"]]) {
      const w = createWatcher({ client, resource: KNATIVE_SERVICES, namespaces });
      const stop = new AbortController();
      try {
        assert.equal(Object.isFrozen(w.store), true, "the view cannot be extended");
        assert.equal("set" in w.store || "delete" in w.store, false, "the view has no writes");
        const checked: string[] = [];
        for await (const e of w.run(stop.signal)) {
          if (e.type === "synced") {
            if (checked.length === 1) sb.sandbox.create("services", ksvc(namespaces.at(-1)!, "two"));
            continue;
          }
          const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
          assert.equal(w.store.get(key), e.object, `${namespaces.length} namespace(s): ${key} is the store's own object`);
          checked.push(key);
          if (checked.length === 2) break;
        }
        assert.deepEqual(checked, ["a/one", `${namespaces.at(-1)}/two`]);
        assert.equal(w.store.size, 2);
        sb.sandbox.delete("services", namespaces.at(-1)!, "two");
      } finally {
        stop.abort();
      }
    }
    await sb.close();
  });

  test("a quiet namespace: 200,000 events through a busy one add no promise reactions and no heap", async () => {
    const N = 200_000;
    CountingPromise.calls = 0;
    const group = new ReflectorGroup<KubeObject, Member>([
      member("busy", (store) => busySource(store, N)),
      member("quiet", (store, signal) => quietSource(store, signal)),
    ]);
    const ac = new AbortController();
    let seen = 0;
    let before = 0;
    let after = 0;
    try {
      for await (const e of group.run(ac.signal)) {
        seen++;
        if (e.type === "synced") {
          forceGc();
          before = process.memoryUsage().heapUsed;
        }
        if (seen === N + 1) {
          forceGc();
          after = process.memoryUsage().heapUsed;
          break;
        }
      }
    } finally {
      ac.abort();
    }
    const growthMiB = (after - before) / 2 ** 20;
    console.log(`quiet-namespace merge: ${N} events, heap ${(before / 2 ** 20).toFixed(1)} → ${(after / 2 ** 20).toFixed(1)} MiB (growth ${growthMiB.toFixed(1)} MiB), then() calls on the quiet source's pending promise: ${CountingPromise.calls}`);
    assert.equal(seen, N + 1);
    // The structural bound: the quiet source's one pending promise is awaited once, not once per merged event.
    assert.ok(CountingPromise.calls <= 3, `then() called ${CountingPromise.calls} times on the quiet source's pending promise`);
    assert.ok(growthMiB < 32, `heap grew ${growthMiB.toFixed(1)} MiB over ${N} events`);
    assert.equal(group.snapshot().items.length, 1);
  });
});

describe("mux", () => {
  test("pulls each source one event at a time, in each source's order; a throwing source ends the merge after the others are returned", async () => {
    const pulled: string[] = [];
    const returned: string[] = [];
    const source = (name: string, n: number, fail = false) => async function* (signal: AbortSignal) {
      try {
        for (let i = 0; i < n; i++) {
          pulled.push(`${name}${i}`);
          yield `${name}${i}`;
        }
        if (fail) throw new Error(`${name} failed`);
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      } finally {
        returned.push(name);
      }
    };
    const got: string[] = [];
    await assert.rejects(async () => {
      for await (const { index, value } of mux([source("a", 3), source("b", 2, true)])) {
        got.push(value);
        // Back-pressure: no source runs more than one event ahead of what the consumer took.
        const ahead = pulled.filter((p) => p.startsWith(value[0]!)).length - got.filter((p) => p.startsWith(value[0]!)).length;
        assert.ok(ahead <= 1, `source ${index} ran ${ahead} events ahead`);
      }
    }, /b failed/);
    assert.deepEqual(got.filter((x) => x.startsWith("a")), ["a0", "a1", "a2"]);
    assert.deepEqual(got.filter((x) => x.startsWith("b")), ["b0", "b1"]);
    assert.deepEqual(returned.sort(), ["a", "b"], "every source was ended");
  });

  test("the caller's signal ends the merge; sources see the merge's own signal abort", async () => {
    const ac = new AbortController();
    let sourceSignal: AbortSignal | undefined;
    const it = mux([async function* (signal: AbortSignal) {
      sourceSignal = signal;
      yield 1;
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
    }], ac.signal);
    assert.deepEqual((await it.next()).value, { index: 0, value: 1 });
    const pending = it.next();
    ac.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.equal(sourceSignal?.aborted, true);
  });
});
