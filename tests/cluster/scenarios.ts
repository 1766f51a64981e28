/**
 * Integration scenarios, written once, run against the sandbox (in the
 * default suite) and against a real kube-apiserver + etcd (the cluster suite).
 * Everything goes through HTTP: the watcher's requests and the test's writes.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { KubeClient } from "../../src/kube/client.ts";
import { createLogger } from "../../src/log.ts";
import { seededRandom } from "../../src/prng.ts";
import { Reflector, type ReflectorOptions } from "../../src/watch/reflector.ts";
import { KNATIVE_SERVICES, type KubeObject } from "../../src/watch/types.ts";
import { fingerprint, strictReplay } from "../helpers/replay.ts";
import { delay, start, summary } from "../helpers/run.ts";
import { startTcpProxy } from "./tcp-proxy.ts";
import type { Target, TargetOptions } from "./targets.ts";

const SELECTOR = "flyte.org/app-managed=true";
const API = "/apis/serving.knative.dev/v1";

export type MakeTarget = (options?: TargetOptions) => Promise<Target>;

function ksvc(name: string, ns: string, managed = true, image = "app:v1"): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: { name, namespace: ns, labels: { "flyte.org/app-managed": String(managed) }, annotations: { "flyte.org/app-id": `proj/dev/${name}` } },
    spec: { template: { spec: { containers: [{ image }] } } },
  };
}

/** Admin writes through the API. */
function api(t: Target) {
  // Retries 429/503 (a restarting kube-apiserver answers "storage is (re)initializing").
  const ok = async (what: string, call: () => Promise<{ status: number; body: any }>) => {
    for (let attempt = 0; ; attempt++) {
      const r = await call();
      if ((r.status === 429 || r.status === 503) && attempt < 60) {
        await delay(250);
        continue;
      }
      if (r.status >= 300) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.body)?.slice(0, 300)}`);
      return r.body as KubeObject;
    }
  };
  const path = (ns: string, name?: string, sub?: string) => `${API}/namespaces/${ns}/services${name ? `/${name}` : ""}${sub ? `/${sub}` : ""}`;
  return {
    create: (o: KubeObject) => ok(`create ${o.metadata.name}`, () => t.request("POST", path(o.metadata.namespace!), o)),
    patch: (ns: string, name: string, patch: unknown) => ok(`patch ${name}`, () => t.request("PATCH", path(ns, name), patch, "application/merge-patch+json")),
    patchStatus: (ns: string, name: string, status: unknown) =>
      ok(`patch status ${name}`, () => t.request("PATCH", path(ns, name, "status"), { status }, "application/merge-patch+json")),
    delete: (ns: string, name: string) => ok(`delete ${name}`, () => t.request("DELETE", path(ns, name))),
    list: async (ns: string) => {
      const body = await ok(`list ${ns}`, () => t.request("GET", `${path(ns)}?labelSelector=${encodeURIComponent(SELECTOR)}`));
      return (body as unknown as { items: KubeObject[] }).items;
    },
  };
}

/** Creates many objects with a few requests in flight at once. */
async function createMany(t: Target, objects: KubeObject[], concurrency = 8): Promise<void> {
  const a = api(t);
  let i = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (i < objects.length) await a.create(objects[i++]!);
  }));
}

function reflector(client: KubeClient, namespace: string, options: Partial<ReflectorOptions<KubeObject>> = {}) {
  return new Reflector({
    client,
    resource: KNATIVE_SERVICES,
    namespace,
    labelSelector: SELECTOR,
    idleTimeoutMs: 2_000,
    backoff: { initialMs: 20, maxMs: 500 },
    ...(process.env.APPWATCH_TEST_DEBUG ? { logger: createLogger({ level: "debug" }) } : {}),
    ...options,
  });
}

const strip = (lines: string[]) => lines.map((l) => l.replace(/@\d+/, ""));
let nsCounter = 0;
const freshNs = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++nsCounter}`;

/** Registers every scenario for one kind of server. */
export function defineScenarios(label: string, makeTarget: MakeTarget, kind: "sandbox" | "real"): void {
  describe(`${label}: watch scenarios`, () => {
    let t: Target;
    before(async () => {
      t = await makeTarget();
    });
    after(async () => {
      await t?.stop();
    });

    test("create, update, status update, label out of and back into the selector, delete: each the right event", async () => {
      const ns = freshNs("life");
      await t.ensureNamespace(ns);
      const a = api(t);
      const r = reflector(await t.client(), ns, { initialList: "auto" });
      const run = start(r);
      try {
        await run.waitFor(() => r.synced, "initial sync", 30_000);
        await a.create(ksvc("app", ns));
        await run.waitFor(() => r.store.size === 1, "added");
        await a.patch(ns, "app", { spec: { template: { spec: { containers: [{ image: "app:v2" }] } } } });
        await run.waitFor(() => r.store.get(`${ns}/app`)?.metadata.generation === 2, "spec update");
        await a.patchStatus(ns, "app", { observedGeneration: 2, conditions: [{ type: "Ready", status: "True" }] });
        await run.waitFor(() => (r.store.get(`${ns}/app`)?.status as { observedGeneration?: number } | undefined)?.observedGeneration === 2, "status update");
        await a.patch(ns, "app", { metadata: { labels: { "flyte.org/app-managed": "false" } } });
        await run.waitFor(() => r.store.size === 0, "left the selector");
        await a.patch(ns, "app", { metadata: { labels: { "flyte.org/app-managed": "true" } } });
        await run.waitFor(() => r.store.size === 1, "back in the selector");
        await a.delete(ns, "app");
        await run.waitFor(() => r.store.size === 0, "deleted");
        assert.deepEqual(strip(summary(run.events)), [
          "synced initial",
          `added ${ns}/app`,
          `modified ${ns}/app`,
          `modified ${ns}/app`,
          `deleted ${ns}/app`,
          `added ${ns}/app`,
          `deleted ${ns}/app`,
        ]);
        const st = run.events[3]!;
        assert.equal(st.type === "modified" && st.object.metadata.generation, 2, "a status update does not bump generation");
        strictReplay(run.events);
      } finally {
        await run.stop();
      }
    });

    test("pagination with real continue tokens: 1,200 KServices, limit 500 → 3 pages, one consistent snapshot", async () => {
      const ns = freshNs("pages");
      await t.ensureNamespace(ns);
      await createMany(t, Array.from({ length: 1200 }, (_, i) => ksvc(`app-${String(i).padStart(4, "0")}`, ns)));
      const r = reflector(await t.client(), ns, { initialList: "paginated", pageSize: 500 });
      const run = start(r);
      try {
        await run.waitFor(() => r.synced, "sync", 60_000);
        assert.equal(r.metrics.listPages, 3);
        assert.equal(r.store.size, 1200);
        assert.equal(run.events.filter((e) => e.type === "added").length, 1200);
        assert.deepEqual(fingerprint(r.store.values()), fingerprint(await api(t).list(ns)));
      } finally {
        await run.stop();
      }
    });

    test("bookmarks arrive and advance the resume resourceVersion", async () => {
      const ns = freshNs("bm");
      const other = freshNs("bm-other");
      await t.ensureNamespace(ns);
      await t.ensureNamespace(other);
      await api(t).create(ksvc("quiet", ns));
      // A short server-side timeout: kube-apiserver sends a bookmark ~2 s before it.
      const r = reflector(await t.client(), ns, { initialList: "paginated", watchTimeoutSeconds: { min: 4, max: 5 }, idleTimeoutMs: 8_000 });
      const run = start(r);
      try {
        await run.waitFor(() => r.synced, "sync", 30_000);
        const syncRv = BigInt(r.resumeResourceVersion!);
        // Writes elsewhere move the server's resourceVersion; only bookmarks can tell our watcher.
        for (let i = 0; i < 3; i++) await api(t).create(ksvc(`noise-${i}`, other));
        await run.waitFor(() => r.metrics.events.bookmark >= 1 && BigInt(r.resumeResourceVersion!) > syncRv, "a bookmark with a newer RV", 20_000);
        assert.equal(run.events.filter((e) => e.type !== "synced").length, 1, "bookmarks are never emitted");
      } finally {
        await run.stop();
      }
    });

    test("a restart of the API server mid-stream: the watcher resumes or relists and loses nothing", async () => {
      const ns = freshNs("restart");
      await t.ensureNamespace(ns);
      const a = api(t);
      for (const n of ["a", "b", "c"]) await a.create(ksvc(n, ns));
      const r = reflector(await t.client(), ns, { initialList: "auto" });
      const run = start(r);
      try {
        await run.waitFor(() => r.synced && r.store.size === 3, "sync", 30_000);
        await a.patch(ns, "a", { spec: { template: { spec: { containers: [{ image: "app:v2" }] } } } });
        await t.restart();
        await a.delete(ns, "b");
        await a.create(ksvc("d", ns));
        await converged(r, () => a.list(ns), 60_000);
        strictReplay(run.events);
      } finally {
        await run.stop();
      }
    });

    for (const initialList of ["streaming", "paginated"] as const) {
      test(`${initialList} initial list converges`, async () => {
        const ns = freshNs(`il-${initialList}`);
        await t.ensureNamespace(ns);
        await createMany(t, Array.from({ length: 30 }, (_, i) => ksvc(`app-${i}`, ns, i % 5 !== 0)));
        const r = reflector(await t.client(), ns, { initialList });
        const run = start(r);
        try {
          await run.waitFor(() => r.synced, "sync", 30_000);
          assert.deepEqual(fingerprint(r.store.values()), fingerprint(await api(t).list(ns)));
          if (initialList === "streaming") assert.equal(r.metrics.streamingLists, 1);
          else assert.equal(r.metrics.listPages, 1);
        } finally {
          await run.stop();
        }
      });
    }

    test("TCP fault proxy (cuts, stalls, slow drip) under a random workload: the convergence property holds", async () => {
      const ns = freshNs("chaos");
      await t.ensureNamespace(ns);
      const target = new URL(t.url);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
      const proxied = `${target.protocol}//127.0.0.1:${proxy.port}`;
      const a = api(t);
      const rnd = seededRandom(kind === "real" ? 4242 : 2424);
      for (let i = 0; i < 10; i++) await a.create(ksvc(`app-${i}`, ns, rnd() < 0.8));
      const r = reflector(await t.client({ server: proxied }), ns, { initialList: "auto", idleTimeoutMs: 700, random: rnd });
      const run = start(r);
      let next = 10;
      try {
        await run.waitFor(() => r.synced, "sync", 30_000);
        for (let step = 0; step < 120; step++) {
          const names = (await a.list(ns)).map((o) => o.metadata.name!);
          const op = rnd();
          if (op < 0.3 || names.length === 0) await a.create(ksvc(`app-${next++}`, ns, rnd() < 0.8));
          else {
            const name = names[Math.floor(rnd() * names.length)]!;
            if (op < 0.55) await a.patch(ns, name, { spec: { template: { spec: { containers: [{ image: `app:${step}` }] } } } });
            else if (op < 0.7) await a.patchStatus(ns, name, { observedGeneration: step });
            else if (op < 0.85) await a.patch(ns, name, { metadata: { labels: { "flyte.org/app-managed": String(rnd() < 0.5) } } });
            else await a.delete(ns, name);
          }
          const f = rnd();
          if (f < 0.06) proxy.cutAll();
          else if (f < 0.09) {
            proxy.stall(true);
            await delay(300 + Math.floor(rnd() * 900)); // sometimes past the idle budget
            proxy.stall(false);
          } else if (f < 0.11) {
            proxy.drip({ bytes: 16, everyMs: 5 });
            await delay(200);
            proxy.drip(undefined);
          }
          if (rnd() < 0.3) await delay(Math.floor(rnd() * 20));
        }
        proxy.stall(false);
        proxy.drip(undefined);
        const expected = await converged(r, () => a.list(ns), 60_000);
        assert.deepEqual(fingerprint(strictReplay(run.events).values()), expected, "replay from empty reproduces the server state");
        assert.ok(proxy.accepted > 1, "the proxy really forced reconnects");
      } finally {
        await run.stop();
        await proxy.close();
      }
    });
  });
}

/** Waits until the reflector's store equals the server's state (polled through the API). */
async function converged(r: Reflector<KubeObject>, server: () => Promise<KubeObject[]>, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let want: string[] = [];
  for (;;) {
    want = fingerprint(await server());
    if (r.synced && same(fingerprint(r.store.values()), want)) return want;
    if (Date.now() > deadline) {
      throw new Error(`store did not converge in ${timeoutMs} ms\nstore:  ${fingerprint(r.store.values()).join(" ")}\nserver: ${want.join(" ")}`);
    }
    await delay(100);
  }
}

function same(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
