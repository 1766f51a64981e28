/**
 * Smoke test of the real-cluster harness (tests/cluster/cluster.ts) against a real kube-apiserver
 * v1.35 + etcd v3.6 built by scripts/build-kube.sh. Not part of `npm test` (not *.test.ts); run:
 *
 *   node --import tsx --test tests/cluster/smoke.cluster.ts
 *   npx deno test -A --no-check tests/cluster/smoke.cluster.ts
 *   npx bun test --timeout 300000 ./tests/cluster/smoke.cluster.ts
 *
 * Fails (does not skip) when the binaries are missing: run scripts/build-kube.sh first.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type RealCluster, realClusterAvailable, startRealCluster } from "./cluster.ts";

const NS = "flyte";
const KSVC = `/apis/serving.knative.dev/v1/namespaces/${NS}/services`;

function ksvc(name: string) {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: { name, namespace: NS, labels: { "flyte.org/app-managed": "true" } },
    spec: {
      template: { spec: { containers: [{ image: "ghcr.io/knative/helloworld-go:latest", env: [{ name: "TARGET", value: "World" }] }] } },
      traffic: [{ latestRevision: true, percent: 100 }],
    },
  };
}

interface WatchEvent {
  type: string;
  object: { kind?: string; apiVersion?: string; status?: string; message?: string; reason?: string; code?: number; metadata?: { name?: string } };
}

/** Reads a whole watch stream (the server closes it after an ERROR event) as events. */
async function readWatch(cluster: RealCluster, path: string, timeoutMs = 20_000): Promise<{ status: number; events: WatchEvent[]; retryAfter?: string | null; text: string }> {
  const res = await cluster.fetch(path, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, events: [], retryAfter: res.headers.get("retry-after"), text };
  const events = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as WatchEvent);
  return { status: res.status, events, text };
}

function assertExpired(result: { status: number; events: WatchEvent[] }, message: RegExp) {
  assert.equal(result.status, 200, "a watch that is too old still starts with HTTP 200");
  assert.equal(result.events.length, 1, `exactly one event: ${JSON.stringify(result.events)}`);
  const [event] = result.events;
  assert.equal(event?.type, "ERROR");
  assert.equal(event?.object.kind, "Status");
  assert.equal(event?.object.apiVersion, "v1");
  assert.equal(event?.object.status, "Failure");
  assert.equal(event?.object.code, 410);
  assert.equal(event?.object.reason, "Expired");
  assert.match(event?.object.message ?? "", message);
}

const available = realClusterAvailable();
if (!available.ok) throw new Error(`the real-cluster smoke test needs the binaries: ${available.reason}`);

describe("real kube-apiserver, --watch-cache=false (410 through etcd compaction)", () => {
  let cluster: RealCluster;
  before(async () => {
    cluster = await startRealCluster({ watchCache: false });
  });
  after(async () => {
    await cluster?.stop();
  });

  test("serves v1.35 with TLS verified against the harness CA and the admin token", async () => {
    const version = await cluster.request("GET", "/version");
    assert.equal(version.status, 200);
    assert.match(version.body.gitVersion, /^v1\.35\.\d+$/);
    const anonymous = await cluster.fetch("/api/v1/namespaces", { headers: { authorization: "Bearer wrong" } });
    await anonymous.body?.cancel();
    assert.equal(anonymous.status, 401);
    assert.ok(existsSync(cluster.kubeconfigPath));
  });

  test("creates the flyte namespace; applies deploy/ with a server-side dry run, then for real", async () => {
    const ns = await cluster.request("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    assert.equal(ns.status, 201, JSON.stringify(ns.body));

    const dry = await cluster.applyManifests(["deploy"], { dryRun: true });
    const kinds = dry.map((r) => `${r.kind}/${r.name}`);
    for (const want of ["Namespace/flyte", "CustomResourceDefinition/services.serving.knative.dev", "CustomResourceDefinition/revisions.serving.knative.dev", "ServiceAccount/appwatch", "Role/appwatch-reader", "RoleBinding/appwatch-reader"]) {
      assert.ok(kinds.includes(want), `${want} in ${kinds.join(", ")}`);
    }
    assert.equal((await cluster.request("GET", `/api/v1/namespaces/${NS}/serviceaccounts/appwatch`)).status, 404, "dry run created nothing");

    const real = await cluster.applyManifests(["deploy"]);
    assert.equal(real.find((r) => r.kind === "ServiceAccount")?.action, "created");
    assert.equal(real.find((r) => r.kind === "Namespace")?.action, "updated");
    assert.equal((await cluster.request("GET", `/api/v1/namespaces/${NS}/serviceaccounts/appwatch`)).status, 200);
    const role = await cluster.request("GET", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles/appwatch-reader`);
    assert.deepEqual(role.body.rules, [
      { apiGroups: ["serving.knative.dev"], resources: ["services"], verbs: ["get", "list", "watch"] },
      { apiGroups: ["serving.knative.dev"], resources: ["revisions"], verbs: ["list", "watch"] },
    ]);
  });

  test("creates a KService and reads it back unpruned; status goes through /status", async () => {
    const created = await cluster.request("POST", KSVC, ksvc("hello"));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.metadata.generation, 1);
    const got = await cluster.request("GET", `${KSVC}/hello`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.spec, ksvc("hello").spec, "spec preserved (x-kubernetes-preserve-unknown-fields)");
    const status = { observedGeneration: 1, url: "http://hello.flyte.example.com", conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:07Z" }] };
    const patched = await cluster.request("PATCH", `${KSVC}/hello/status`, { status }, { contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(patched.body.status, status);
    assert.equal(patched.body.metadata.generation, 1, "status writes do not bump generation");
    // Printer columns from the CRD, via the Table format kubectl uses.
    const table = await cluster.fetch(`${KSVC}`, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    const columns = ((await table.json()) as { columnDefinitions: { name: string }[] }).columnDefinitions.map((c) => c.name);
    assert.deepEqual(columns.slice(0, 6), ["Name", "URL", "LatestCreated", "LatestReady", "Ready", "Reason"]);
  });

  test("after compact(), a watch from an older resourceVersion gets an in-stream ERROR 410 Expired; a list gets HTTP 410", async () => {
    const old = (await cluster.request("GET", `${KSVC}/hello`)).body.metadata.resourceVersion as string;
    for (const t of ["1", "2"]) {
      const res = await cluster.request("PATCH", `${KSVC}/hello`, { metadata: { annotations: { t } } }, { contentType: "application/merge-patch+json" });
      assert.equal(res.status, 200);
    }
    // Before compaction, the same watch replays the two changes.
    const before = await cluster.fetch(`${KSVC}?watch=1&resourceVersion=${old}&timeoutSeconds=1`);
    const replay = (await before.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l) as WatchEvent);
    assert.deepEqual(replay.map((e) => e.type), ["MODIFIED", "MODIFIED"]);

    const rev = await cluster.compact();
    assert.ok(Number(rev) > Number(old), `compacted at ${rev} > ${old}`);
    const watch = await readWatch(cluster, `${KSVC}?watch=1&resourceVersion=${old}`);
    assertExpired(watch, /The resourceVersion for the provided watch is too old/);

    const list = await cluster.request("GET", `${KSVC}?resourceVersion=${old}&resourceVersionMatch=Exact`);
    assert.equal(list.status, 410, JSON.stringify(list.body));
    assert.equal(list.body.reason, "Expired");
  });

  test("a TokenRequest token for flyte/appwatch may list and watch KServices in flyte, and nothing else", async () => {
    const token = await cluster.serviceAccountToken(NS, "appwatch", 600);
    const review = await cluster.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }, { token });
    assert.equal(review.body.status?.userInfo?.username, `system:serviceaccount:${NS}:appwatch`);

    const list = await cluster.request("GET", KSVC, undefined, { token });
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(list.body.items.map((o: { metadata: { name: string } }) => o.metadata.name), ["hello"]);
    // Revisions: list and watch (the replica watch); reading one by name is not granted.
    assert.equal((await cluster.request("GET", `/apis/serving.knative.dev/v1/namespaces/${NS}/revisions`, undefined, { token })).status, 200);
    assert.equal((await cluster.request("GET", `/apis/serving.knative.dev/v1/namespaces/${NS}/revisions/no-such-revision`, undefined, { token })).status, 403);
    const watch = await cluster.fetch(`${KSVC}?watch=1&timeoutSeconds=1&resourceVersion=0`, { token });
    assert.equal(watch.status, 200);
    await watch.text();

    const pods = await cluster.request("GET", `/api/v1/namespaces/${NS}/pods`, undefined, { token });
    assert.equal(pods.status, 403);
    assert.equal(pods.body.reason, "Forbidden");
    assert.equal((await cluster.request("GET", "/apis/serving.knative.dev/v1/namespaces/default/services", undefined, { token })).status, 403);
    assert.equal((await cluster.request("GET", "/apis/serving.knative.dev/v1/services", undefined, { token })).status, 403);
    assert.equal((await cluster.request("POST", KSVC, ksvc("nope"), { token })).status, 403);
    assert.equal((await cluster.request("DELETE", `${KSVC}/hello`, undefined, { token })).status, 403);
  });

  test("restartApiserver() comes back ready on the same URL with the data intact", async () => {
    const url = cluster.url;
    await cluster.restartApiserver();
    assert.equal(cluster.url, url);
    const ready = await cluster.request("GET", "/readyz");
    assert.equal(ready.status, 200);
    const got = await cluster.request("GET", `${KSVC}/hello`);
    assert.equal(got.status, 200);
    assert.equal(got.body.metadata.annotations.t, "2");
  });

  test("stop() kills both processes and removes the temp dir; a second stop() is a no-op", async () => {
    const { dir, url } = cluster;
    await cluster.stop();
    await cluster.stop();
    assert.equal(existsSync(dir), false);
    await assert.rejects(fetch(`${url.replace("https:", "http:")}/readyz`, { signal: AbortSignal.timeout(2_000) }));
  });
});

describe("real kube-apiserver, default watch cache (410 from the cache window)", () => {
  let cluster: RealCluster;
  before(async () => {
    cluster = await startRealCluster();
    const ns = await cluster.request("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    assert.equal(ns.status, 201);
  });
  after(async () => {
    await cluster?.stop();
  });

  test("recipe A: a watch from resourceVersion=1 is older than the CRD's watch cache: ERROR 410 'too old resource version: 1 (N)'", async () => {
    const watch = await readWatch(cluster, `${KSVC}?watch=1&resourceVersion=1`);
    assertExpired(watch, /^too old resource version: 1 \(\d+\)$/);
  });

  test("recipe A': a resourceVersion from before an apiserver restart is older than the new cache window", async () => {
    const created = await cluster.request("POST", KSVC, ksvc("hello"));
    assert.equal(created.status, 201);
    const old = created.body.metadata.resourceVersion as string;
    // Within the window, the watch from that RV works (no events since; the timeout ends it).
    const fresh = await cluster.fetch(`${KSVC}?watch=1&resourceVersion=${old}&timeoutSeconds=1`);
    assert.equal(fresh.status, 200);
    assert.equal((await fresh.text()).trim(), "");
    const res = await cluster.request("PATCH", `${KSVC}/hello`, { metadata: { annotations: { t: "1" } } }, { contentType: "application/merge-patch+json" });
    assert.equal(res.status, 200);
    await cluster.restartApiserver();
    // /readyz is 200 before the CRD's watch cache has initialized: until then, watches get HTTP 429
    // "storage is (re)initializing" with Retry-After (ResilientWatchCacheInitialization). Honour it.
    let watch = await readWatch(cluster, `${KSVC}?watch=1&resourceVersion=${old}`);
    for (let i = 0; watch.status === 429 && i < 30; i++) {
      console.log(`# watch right after restart: HTTP 429, Retry-After ${watch.retryAfter}: ${watch.text.trim()}`);
      await new Promise((r) => setTimeout(r, 1000 * Number(watch.retryAfter ?? 1)));
      watch = await readWatch(cluster, `${KSVC}?watch=1&resourceVersion=${old}`);
    }
    assertExpired(watch, /^too old resource version: \d+ \(\d+\)$/);
  });
});
