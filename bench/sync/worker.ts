/**
 * One initial-sync measurement in a fresh process (started by
 * `bench/sync/sync.bench.ts`): loads only what its variant needs, forces a GC,
 * notes RSS, resets the peak-RSS counter (VmHWM), syncs SYNC_OBJECTS objects
 * from the server at SYNC_URL, and prints one JSON line {@link WorkerResult}.
 *
 * SYNC_CPU_PROFILE=<file> (Node): also write a CPU profile of the sync phase.
 *
 * Variants (SYNC_VARIANT):
 * - `bare`: nothing; the runtime's own RSS (same command line, same helper module);
 * - `plain`: `fetch` + `JSON.parse` per 500-item page into a `Map` (peer-baseline.md's reference);
 * - `reflector`: appwatch `Reflector` (paginated list, 500 per page) until `synced`;
 * - `reflector-prune`: the same with `prune: [object.metadata.managedFields, object.spec]`:
 *   byte-level pruning of every list page (`items.*.…`) before it is decoded and parsed;
 * - `reflector-pruned`: the same as `reflector` with a `parse` that deletes `metadata.managedFields`
 *   and `spec` after `JSON.parse` (the earlier analysis variant: retained memory without them);
 * - `appclient`: `AppK8sClient.startWatching()`, the product path: its Revision watch (listed
 *   first) + the KService Reflector + Flyte `App` conversion + the hub (Apps, journal);
 * - `client-node`: `@kubernetes/client-node` `makeInformer` (1.4.0 on Node; 2.0.1, the npm alias
 *   `@kubernetes/client-node-2`, on Deno and Bun) with a `listFn` that pages by 500 through
 *   `CustomObjectsApi.listNamespacedCustomObject`; synced when `start()` resolves;
 * - `client-node-rev`: the same plus a second informer on the namespace's Revisions, started
 *   (and synced) first: the objects `AppK8sClient` holds (B7).
 * @module
 */
import process from "node:process";
import { fullGc, heapUsed, procMemory, resetPeak, runtime } from "../lib/common.ts";

export interface WorkerResult {
  variant: string;
  objects: number;
  /** ms from the start of the sync to a complete store. */
  syncMs: number;
  /** RSS after imports and a GC, before the sync. */
  rssBefore: number;
  /** Peak RSS since process start, before the sync (imports included). */
  hwmBeforeSync: number;
  /** Peak RSS during the sync (VmHWM after a reset), absolute. */
  peakRss: number;
  /** Whether the peak counter could be reset (else peakRss includes the imports). */
  peakReset: boolean;
  /** RSS after the sync and a forced GC, with the store alive. */
  retainedRss: number;
  heapBefore?: number;
  heapRetained?: number;
  /** process.memoryUsage() after the final GC: off-heap memory the engine knows of, and ArrayBuffers (B7: RSS − heap). */
  external?: number;
  arrayBuffers?: number;
  /** appclient: ms until every app's Revision lookup was done, and the peak RSS up to then. */
  settledMs?: number;
  settledPeakRss?: number;
  revisionRequests?: number;
  /** client-node variants: the package version used (1.4.0 on Node, 2.0.1 on Deno and Bun). */
  clientNode?: string;
}

const variant = process.env.SYNC_VARIANT ?? "bare";
const url = process.env.SYNC_URL ?? "";
const N = Number(process.env.SYNC_OBJECTS ?? 0);
const NS = "bench";
const SELECTOR = "flyte.org/app-managed=true";
let clientNodeVersion: string | undefined;

/** The client the product uses: `createKubeClient` (Node: npm undici Agent; Deno/Bun: their fetch). */
async function productionClient(): Promise<import("../../src/kube/client.ts").KubeClient> {
  const { createKubeClient } = await import("../../src/kube/connect.ts");
  return await createKubeClient({ server: url, namespace: NS, tls: { insecureSkipVerify: false }, auth: { type: "none" }, source: "bench" });
}

/** One small request through the contender's own HTTP stack, before the timer (lazy loading, connection). */
async function warmKube(client: import("../../src/kube/client.ts").KubeClient): Promise<void> {
  const res = await client.request({ path: "/meta" });
  await res.text();
}

function check(what: string, got: number): void {
  if (got !== N) throw new Error(`${variant}: ${what} holds ${got} objects, expected ${N}`);
}

async function main(): Promise<WorkerResult> {
  let run: () => Promise<void>;
  let after: (() => Promise<Partial<WorkerResult>>) | undefined;
  let keep: unknown;
  const ac = new AbortController();

  switch (variant) {
    case "bare":
      run = () => Promise.resolve();
      break;
    case "plain": {
      const { BENCH_PATH } = await import("../lib/data.ts");
      await (await fetch(`${url}/meta`)).text();
      run = async () => {
        const map = new Map<string, unknown>();
        let cont = "";
        do {
          const res = await fetch(`${url}${BENCH_PATH}?labelSelector=${encodeURIComponent(SELECTOR)}&limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ""}`);
          const page = JSON.parse(await res.text()) as { items: { metadata: { namespace: string; name: string } }[]; metadata: { continue?: string } };
          for (const o of page.items) map.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
          cont = page.metadata.continue ?? "";
        } while (cont);
        check("map", map.size);
        keep = map;
      };
      break;
    }
    case "reflector":
    case "reflector-prune":
    case "reflector-pruned": {
      const { Reflector } = await import("../../src/watch/reflector.ts");
      const { KNATIVE_SERVICES } = await import("../../src/watch/types.ts");
      type Obj = import("../../src/watch/types.ts").KubeObject;
      const kube = await productionClient();
      await warmKube(kube);
      const reflector = new Reflector<Obj>({
        client: kube,
        resource: KNATIVE_SERVICES,
        namespace: NS,
        labelSelector: SELECTOR,
        initialList: "paginated",
        ...(variant === "reflector-prune" ? { prune: [["object", "metadata", "managedFields"], ["object", "spec"]] } : {}),
        ...(variant === "reflector-pruned"
          ? {
            parse: (o: Obj) => {
              delete o.metadata.managedFields;
              delete o.spec;
              return o;
            },
          }
          : {}),
      });
      keep = reflector;
      run = async () => {
        const it = reflector.run(ac.signal);
        for await (const ev of it) if (ev.type === "synced") break;
        check("store", reflector.store.size);
      };
      break;
    }
    case "appclient": {
      const { AppK8sClient } = await import("../../src/flyte/app-client.ts");
      const kube = await productionClient();
      await warmKube(kube);
      const client = new AppK8sClient({ client: kube, namespace: NS, watch: { initialList: "paginated" }, ...(process.env.SYNC_RESUME_WINDOW ? { resumeWindow: Number(process.env.SYNC_RESUME_WINDOW) } : {}) });
      keep = client;
      run = async () => {
        await client.startWatching(ac.signal);
        check("apps", client.metrics.events.create);
      };
      after = async () => {
        const t0 = performance.now();
        const deadline = t0 + 120_000;
        while (client.metrics.revisionRequests < N && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, 50)); // the last lookups' re-conversions
        return { settledMs: performance.now() - t0, revisionRequests: client.metrics.revisionRequests };
      };
      break;
    }
    case "client-node":
    case "client-node-rev": {
      // Node 20: 1.4.0 (2.0.1 needs Node ≥ 22.19 and fails at import); Deno and Bun: 2.0.1.
      const name = runtime === "node" ? "@kubernetes/client-node" : "@kubernetes/client-node-2"; // a variable: keeps 2.0.1's types out of tsc
      const k8s = (await import(name)) as typeof import("@kubernetes/client-node");
      clientNodeVersion = runtime === "node" ? "1.4.0" : "2.0.1";
      const { BENCH_PATH } = await import("../lib/data.ts");
      const kc = new k8s.KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "c", server: url, skipTLSVerify: true }],
        users: [{ name: "u" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      const api = kc.makeApiClient(k8s.CustomObjectsApi);
      type Obj = import("@kubernetes/client-node").KubernetesObject;
      const listFnOf = (plural: string, labelSelector: string | undefined) => async (): Promise<import("@kubernetes/client-node").KubernetesListObject<Obj>> => {
        const items: Obj[] = [];
        let cont: string | undefined;
        let rv: string | undefined;
        do {
          const page = await api.listNamespacedCustomObject({
            group: "serving.knative.dev",
            version: "v1",
            namespace: NS,
            plural,
            labelSelector,
            limit: 500,
            _continue: cont,
          }) as { items: Obj[]; metadata?: { continue?: string; resourceVersion?: string } };
          for (const o of page.items) items.push(o);
          rv ??= page.metadata?.resourceVersion;
          cont = page.metadata?.continue || undefined;
        } while (cont);
        return { apiVersion: "v1", kind: "List", items, metadata: { resourceVersion: rv } };
      };
      await api.listNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace: NS, plural: "services", limit: 1 });
      const informer = k8s.makeInformer<Obj>(kc, BENCH_PATH, listFnOf("services", SELECTOR), SELECTOR);
      informer.on("error", () => {}); // the bench stops it; a late error must not crash the process
      // The same objects as AppK8sClient: a Revision informer too (all Revisions of the namespace, listed first).
      const revisions = variant === "client-node-rev" ? k8s.makeInformer<Obj>(kc, BENCH_PATH.replace(/services$/, "revisions"), listFnOf("revisions", undefined)) : undefined;
      revisions?.on("error", () => {});
      keep = [informer, revisions];
      run = async () => {
        if (revisions) {
          await revisions.start();
          check("revision informer cache", revisions.list().length);
        }
        await informer.start();
        check("informer cache", informer.list().length);
      };
      after = async () => {
        await informer.stop();
        await revisions?.stop();
        return {};
      };
      break;
    }
    default:
      throw new Error(`unknown SYNC_VARIANT ${variant}`);
  }

  fullGc();
  const before = procMemory();
  const heapBefore = heapUsed();
  const peakReset = resetPeak();
  const profile = process.env.SYNC_CPU_PROFILE ? await startProfile() : undefined;
  const t0 = performance.now();
  await run();
  const syncMs = performance.now() - t0;
  if (profile) await profile(process.env.SYNC_CPU_PROFILE!);
  const peakRss = procMemory().hwm;
  let extra: Partial<WorkerResult> = {};
  if (after && variant === "appclient" && process.env.SYNC_NO_SETTLE !== "1") {
    extra = await after();
    extra.settledPeakRss = procMemory().hwm;
  }
  fullGc();
  const retainedRss = procMemory().rss;
  const heapRetained = heapUsed();
  let offHeap: { external?: number; arrayBuffers?: number } = {};
  try {
    const mu = process.memoryUsage();
    offHeap = { external: mu.external, arrayBuffers: mu.arrayBuffers };
  } catch { /* not reported */ }
  if (after && variant !== "appclient") await after();
  ac.abort();
  void keep;
  return {
    variant,
    objects: N,
    syncMs,
    ...offHeap,
    rssBefore: before.rss,
    hwmBeforeSync: before.hwm,
    peakRss,
    peakReset,
    retainedRss,
    heapBefore,
    heapRetained,
    ...(clientNodeVersion ? { clientNode: clientNodeVersion } : {}),
    ...extra,
  };
}

/**
 * SYNC_CPU_PROFILE=<file> (Node only): a V8 CPU profile of the sync phase alone (from just
 * before the first request to the complete store), written as a `.cpuprofile`.
 */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const { Session } = await import("node:inspector/promises");
  const { writeFileSync } = await import("node:fs");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  return async (file) => {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

try {
  const r = await main();
  process.stdout.write(JSON.stringify(r) + "\n");
  process.exit(0);
} catch (err) {
  console.error(`sync worker ${variant}: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
}
