/**
 * AppK8sClient against the sandbox API server over real HTTP: the seed's
 * programs, subscription targets, snapshots, real-change filtering, slow
 * consumers, and the startup errors.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger } from "../src/log.ts";
import { AppK8sClient, AppNotFoundError, AppsForbiddenError, KnativeNotInstalledError } from "../src/flyte/app-client.ts";
import type { App, WatchResponse } from "../src/flyte/model.ts";
import { KServiceName } from "../src/flyte/naming.ts";
import type { Subscription } from "../src/flyte/subscriptions.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import type { KubeObject } from "../src/watch/types.ts";
import { waitFor } from "./helpers/run.ts";
import { ksvc } from "./helpers/service.ts";
import { startScripted, status } from "./helpers/scripted.ts";
import { Wakes } from "./helpers/wakes.ts";

const readyStatus = (rev: string) => ({
  latestReadyRevisionName: rev,
  conditions: [
    { type: "ConfigurationsReady", status: "True", lastTransitionTime: "2026-04-30T12:00:09Z" },
    { type: "Ready", status: "True", lastTransitionTime: "2026-04-30T12:00:10Z" },
    { type: "RoutesReady", status: "True", lastTransitionTime: "2026-04-30T12:00:10Z" },
  ],
});

function describeEvent(e: WatchResponse): string {
  const a: App = "createEvent" in e ? e.createEvent.app : "updateEvent" in e ? e.updateEvent.updatedApp : e.deleteEvent.app;
  const id = a.metadata?.id;
  const kind = "createEvent" in e ? "create" : "updateEvent" in e ? "update" : "delete";
  return `${kind} ${id?.project}/${id?.domain}/${id?.name}`;
}

/** Collects a subscription's events in the background; `until` re-checks its condition on each event. */
function collect(sub: Subscription) {
  const got: WatchResponse[] = [];
  const lines = () => got.map(describeEvent);
  const wakes = new Wakes(() => `; got ${lines().join(", ")}`);
  const done = (async () => {
    for await (const e of sub) {
      got.push(e);
      wakes.wake();
    }
  })();
  /** Resolves once `holds()`, checked now and after each event; fails after `timeoutMs` (against hangs). */
  const until = (holds: () => boolean, what: string, timeoutMs = 10_000) => wakes.until(holds, what, timeoutMs);
  return { got, done, lines, until };
}

async function setup(options: { watchBufferSize?: number; slowConsumer?: "coalesce" | "drop" | "disconnect"; logs?: string[] } = {}) {
  const sb = await startSandbox({ bookmarkIntervalMs: 0 });
  const client = new KubeClient({ server: sb.url });
  const logs = options.logs;
  const apps = new AppK8sClient({
    client,
    ...(logs ? { logger: createLogger({ level: "warn", sink: (line) => logs.push(line) }) } : {}),
    namespace: "flyte",
    config: { baseDomain: "localhost", scheme: "http", ingressAppsPort: 30081, watchBufferSize: options.watchBufferSize ?? 100, slowConsumer: options.slowConsumer },
    watch: { idleTimeoutMs: 2_000, backoff: { initialMs: 5, maxMs: 50 } },
  });
  return {
    sb,
    apps,
    async close() {
      await apps.stopWatching();
      await sb.close();
    },
  };
}

describe("AppK8sClient", () => {
  test("the seed's program: subscribe, then List for the baseline, then the event loop sees create/update/delete", async () => {
    const { sb, apps, close } = await setup();
    try {
      sb.sandbox.create("services", ksvc("proj", "dev", "existing"));
      await apps.startWatching();
      const sub = apps.subscribe("my-flyte-app");
      const { apps: snapshot, token } = await apps.list("proj", "dev", 0, "");
      assert.deepEqual(snapshot.map((a) => a.metadata?.id?.name), ["existing"]);
      assert.equal(token, "");
      const c = collect(sub);
      const name = KServiceName({ project: "proj", domain: "dev", name: "my-flyte-app" });
      sb.sandbox.create("services", ksvc("proj", "dev", "my-flyte-app"));
      sb.sandbox.updateStatus("services", "flyte", name, readyStatus(`${name}-00001`));
      sb.sandbox.delete("services", "flyte", name);
      await waitFor(() => c.got.length === 3, "three events");
      assert.deepEqual(c.lines(), ["create proj/dev/my-flyte-app", "update proj/dev/my-flyte-app", "delete proj/dev/my-flyte-app"]);
      const updated = c.got[1]!;
      assert.ok("updateEvent" in updated);
      assert.equal(updated.updateEvent.updatedApp.status?.conditions?.at(-1)?.deploymentStatus, "DEPLOYMENT_STATUS_ACTIVE");
      assert.equal(updated.updateEvent.updatedApp.status?.ingress?.publicUrl, "http://my-flyte-app-proj-dev.localhost:30081");
      apps.unsubscribe("my-flyte-app", sub);
      await c.done;
    } finally {
      await close();
    }
  });

  test("the seed's complete WatchApps: subscribe(name), snapshot via List(\"\", \"\", 0, \"\"), then stream", async () => {
    const { sb, apps, close } = await setup();
    try {
      for (const [p, n] of [["proj", "web"], ["other", "web"], ["proj", "api"]] as const) sb.sandbox.create("services", ksvc(p, "dev", n));
      await apps.startWatching();
      // 1. Subscribe
      const ch = apps.subscribe("web");
      // 2. Snapshot (the seed's simplified form: every app in the namespace, filtered by name)
      const { apps: snapshot } = await apps.list("", "", 0, "");
      const seen = snapshot.filter((a) => a.metadata?.id?.name === "web").map((a) => `snapshot ${a.metadata?.id?.project}`);
      // 3. Stream
      const c = collect(ch);
      sb.sandbox.create("services", ksvc("third", "dev", "web"));
      await waitFor(() => c.got.length === 1, "live event");
      apps.unsubscribe("web", ch);
      await c.done;
      assert.deepEqual([...seen, ...c.lines()], ["snapshot other", "snapshot proj", "create third/dev/web"]);
    } finally {
      await close();
    }
  });

  test("namespace scoping: apps in other namespaces are neither listed nor watched", async () => {
    const { sb, apps, close } = await setup();
    try {
      await apps.startWatching();
      const c = collect(apps.subscribe(""));
      sb.sandbox.create("services", ksvc("proj", "dev", "elsewhere", { ns: "other" }));
      sb.sandbox.create("services", ksvc("proj", "dev", "here"));
      // "here" is the signal: a watch that also saw "other" (one stream, events in resourceVersion
      // order) would have delivered "elsewhere", created first, before it. No grace period needed.
      await c.until(() => c.lines().includes("create proj/dev/here"), "the event of \"here\"");
      assert.deepEqual(c.lines(), ["create proj/dev/here"]);
      assert.deepEqual((await apps.list("proj", "dev")).apps.map((a) => a.metadata?.id?.name), ["here"]);
    } finally {
      await close();
    }
  });

  test("identity targets are isolated (same name, two projects); a bare name gets both; project and org targets; \"\" gets all", async () => {
    const { sb, apps, close } = await setup();
    try {
      await apps.startWatching();
      const exact = collect(apps.subscribe({ project: "proj-a", domain: "dev", name: "x" }));
      const bare = collect(apps.subscribe("x"));
      const project = collect(apps.subscribe({ project: "proj-b", domain: "dev" }));
      const org = collect(apps.subscribe({ org: "acme" }));
      const all = collect(apps.subscribe(""));
      sb.sandbox.create("services", ksvc("proj-a", "dev", "x"));
      sb.sandbox.create("services", ksvc("proj-b", "dev", "x"));
      sb.sandbox.create("services", ksvc("proj-b", "dev", "y", { org: "acme" }));
      await waitFor(() => all.got.length === 3, "all three");
      assert.deepEqual(exact.lines(), ["create proj-a/dev/x"]);
      assert.deepEqual(bare.lines(), ["create proj-a/dev/x", "create proj-b/dev/x"]);
      assert.deepEqual(project.lines(), ["create proj-b/dev/x", "create proj-b/dev/y"]);
      assert.deepEqual(org.lines(), ["create proj-b/dev/y"]);
    } finally {
      await close();
    }
  });

  test("snapshot: createEvents for every matching app first (snapshotSize tells where it ends), then live events, no gap and no duplicate", async () => {
    const { sb, apps, close } = await setup();
    try {
      for (const n of ["a", "b", "c"]) sb.sandbox.create("services", ksvc("proj", "dev", n));
      sb.sandbox.create("services", ksvc("other", "dev", "z"));
      await apps.startWatching();
      const sub = apps.subscribe({ project: "proj", domain: "dev" }, { snapshot: true });
      assert.equal(sub.snapshotSize, 3);
      const c = collect(sub);
      sb.sandbox.create("services", ksvc("proj", "dev", "d"));
      sb.sandbox.delete("services", "flyte", KServiceName({ project: "proj", domain: "dev", name: "a" }));
      await waitFor(() => c.got.length === 5, "snapshot + 2 live");
      assert.deepEqual(c.lines(), ["create proj/dev/a", "create proj/dev/b", "create proj/dev/c", "create proj/dev/d", "delete proj/dev/a"]);
    } finally {
      await close();
    }
  });

  test("only real changes: a KService change that does not change the App sends nothing; leaving the selector is a delete", async () => {
    const { sb, apps, close } = await setup();
    try {
      await apps.startWatching();
      const c = collect(apps.subscribe(""));
      const name = KServiceName({ project: "proj", domain: "dev", name: "app" });
      sb.sandbox.create("services", ksvc("proj", "dev", "app"));
      await waitFor(() => c.got.length === 1, "create");
      sb.sandbox.patch("services", "flyte", name, { spec: { template: { spec: { containers: [{ image: "app:v2" }] } } } });
      await waitFor(() => apps.metrics.unchanged === 1, "the image change was seen");
      sb.sandbox.patch("services", "flyte", name, { metadata: { labels: { "flyte.org/app-managed": "false" } } });
      await waitFor(() => c.got.length === 2, "delete");
      sb.sandbox.patch("services", "flyte", name, { metadata: { labels: { "flyte.org/app-managed": "true" } } });
      await waitFor(() => c.got.length === 3, "create again");
      assert.deepEqual(c.lines(), ["create proj/dev/app", "delete proj/dev/app", "create proj/dev/app"]);
    } finally {
      await close();
    }
  });

  test("a KService without flyte.org/app-id is counted and logged, never silently dropped", async () => {
    const logs: string[] = [];
    const { sb, apps, close } = await setup({ logs });
    try {
      await apps.startWatching();
      const bad = ksvc("proj", "dev", "bad");
      delete bad.metadata.annotations!["flyte.org/app-id"];
      sb.sandbox.create("services", bad);
      await waitFor(() => apps.metrics.conversionErrors === 1, "counted");
      const warnings = logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.msg === "KService cannot be converted to an app; skipped");
      assert.equal(warnings.length, 1, `logged once: ${logs.join("\n")}`);
      assert.equal(warnings[0]!.level, "warn");
      assert.match(String(warnings[0]!.ksvc), /^flyte\/bad-/, "the warning names the KService");
    } finally {
      await close();
    }
  });

  test("currentReplicas comes from a Revision watch: in the first App already, and an update when Knative scales without any KService change", async () => {
    const { sb, apps, close } = await setup();
    try {
      const name = KServiceName({ project: "proj", domain: "dev", name: "scaled" });
      sb.sandbox.create("revisions", { apiVersion: "serving.knative.dev/v1", kind: "Revision", metadata: { name: `${name}-00001`, namespace: "flyte" }, spec: {} });
      sb.sandbox.updateStatus("revisions", "flyte", `${name}-00001`, { actualReplicas: 3 });
      sb.sandbox.create("services", ksvc("proj", "dev", "scaled"));
      sb.sandbox.updateStatus("services", "flyte", name, readyStatus(`${name}-00001`));
      await apps.startWatching();
      const c = collect(apps.subscribe("scaled", { snapshot: true }));
      await waitFor(() => c.got.length >= 1, "the snapshot");
      assert.equal("createEvent" in c.got[0]! && c.got[0].createEvent.app.status?.currentReplicas, 3, "the snapshot has the replica count");
      // Knative scales: only the Revision changes
      const token = apps.token();
      sb.sandbox.updateStatus("revisions", "flyte", `${name}-00001`, { actualReplicas: 5 });
      await waitFor(() => c.got.some((e) => "updateEvent" in e && e.updateEvent.updatedApp.status?.currentReplicas === 5), "the scale-up");
      // a negative count wraps as in Go's uint32(int32); a Revision of another app changes nothing here
      sb.sandbox.updateStatus("revisions", "flyte", `${name}-00001`, { actualReplicas: -1 });
      await waitFor(() => c.got.some((e) => "updateEvent" in e && e.updateEvent.updatedApp.status?.currentReplicas === 4294967295), "the wrapped count");
      sb.sandbox.create("revisions", { apiVersion: "serving.knative.dev/v1", kind: "Revision", metadata: { name: "other-00001", namespace: "flyte" }, spec: {} });
      // replica changes are live updates, not journaled: a resume token stays a KService position
      // every replica agrees on (docs/flyte-compatibility.md), so a resume right after them replays nothing
      const resumed = apps.subscribe("scaled", { resume: token });
      assert.deepEqual(resumed.start, { kind: "resumed", replayed: 0 });
      resumed.close();
      assert.equal(apps.health().healthy, true);
    } finally {
      await close();
    }
  });

  test("stopWatching ends every subscription; getApp finds an app or throws a typed not-found error", async () => {
    const { sb, apps, close } = await setup();
    try {
      sb.sandbox.create("services", ksvc("proj", "dev", "here"));
      await apps.startWatching();
      await apps.startWatching(); // idempotent
      const got = await apps.getApp({ project: "proj", domain: "dev", name: "here" });
      assert.equal(got.metadata?.id?.name, "here");
      assert.equal(got.metadata?.id?.org, "flyte");
      await assert.rejects(apps.getApp({ project: "proj", domain: "dev", name: "nope" }), {
        name: "AppNotFoundError",
        message: 'KService nope-proj-dev not found: services.serving.knative.dev "nope-proj-dev" not found',
      });
      // Flyte's Deploy names the object with Go's strings.ToLower ("İ" → "i", where JS gives "i̇"):
      // Get of that identity computes the same name and finds it
      const turkish = ksvc("İstanbul", "dev", "app");
      assert.equal(turkish.metadata!.name, "app-istanbul-dev");
      const all = collect(apps.subscribe(""));
      sb.sandbox.create("services", turkish);
      await waitFor(() => all.got.some((e) => "createEvent" in e && e.createEvent.app.metadata?.id?.project === "İstanbul"), "the İstanbul app");
      assert.deepEqual((await apps.getApp({ project: "İstanbul", domain: "dev", name: "app" })).metadata?.id, { org: "flyte", project: "İstanbul", domain: "dev", name: "app" });
      const c = collect(apps.subscribe(""));
      await apps.stopWatching();
      await c.done; // ended, not hanging
    } finally {
      await close();
    }
  });

  test("startWatching rejects clearly when Knative is not installed (404) or RBAC forbids it (403)", async () => {
    const server = await startScripted();
    try {
      server.next(status(404, "NotFound", { message: "the server could not find the requested resource" }));
      const a = new AppK8sClient({ client: new KubeClient({ server: server.url }) });
      await assert.rejects(a.startWatching(), (e: unknown) => e instanceof KnativeNotInstalledError && /Knative Serving is not installed/.test(e.message));
      server.next(status(403, "Forbidden", { message: 'services.serving.knative.dev is forbidden: User "x" cannot list resource "services"' }));
      const b = new AppK8sClient({ client: new KubeClient({ server: server.url }) });
      await assert.rejects(b.startWatching(), (e: unknown) => e instanceof AppsForbiddenError && /needs get, list and watch on services.serving.knative.dev/.test(e.message));
    } finally {
      await server.close();
    }
  });

  test("a consumer that throws affects no other subscriber and not the watch", async () => {
    const { sb, apps, close } = await setup();
    try {
      await apps.startWatching();
      const bad = apps.subscribe("");
      const badLoop = (async () => {
        for await (const _ of bad) throw new Error("consumer bug");
      })();
      const good = collect(apps.subscribe(""));
      sb.sandbox.create("services", ksvc("proj", "dev", "one"));
      await assert.rejects(badLoop, /consumer bug/);
      assert.equal(bad.closed, true, "leaving the loop ends that subscription only");
      sb.sandbox.create("services", ksvc("proj", "dev", "two"));
      await waitFor(() => good.got.length === 2, "the other subscriber keeps getting events");
      assert.equal(apps.metrics.subscribers, 1);
    } finally {
      await close();
    }
  });

  test("watching all namespaces: events from every namespace; getApp finds an app wherever it lives", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = new AppK8sClient({ client: new KubeClient({ server: sb.url }), namespace: "*" });
    try {
      sb.sandbox.create("services", ksvc("proj", "dev", "a", { ns: "team-1" }));
      await apps.startWatching();
      const c = collect(apps.subscribe("", { snapshot: true }));
      sb.sandbox.create("services", ksvc("proj", "dev", "b", { ns: "team-2" }));
      await waitFor(() => c.got.length === 2, "both namespaces");
      assert.equal((await apps.getApp({ project: "proj", domain: "dev", name: "b" })).status?.k8sMetadata?.namespace, "team-2");
      await assert.rejects(apps.getApp({ project: "proj", domain: "dev", name: "zz" }), AppNotFoundError);
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("a slow subscriber under drop is counted; the fast one gets everything; the watch is never slowed", async () => {
    const lines: string[] = [];
    const sb = await startSandbox({ bookmarkIntervalMs: 0, historyLimit: 10_000 });
    const apps = new AppK8sClient({
      client: new KubeClient({ server: sb.url }),
      config: { watchBufferSize: 10, slowConsumer: "drop" },
      logger: createLogger({ level: "warn", sink: (l) => lines.push(l) }),
    });
    try {
      await apps.startWatching();
      const stalled = apps.subscribe(""); // never read
      const fast = collect(apps.subscribe(""));
      for (let i = 0; i < 200; i++) sb.sandbox.create("services", ksvc("proj", "dev", `app-${i}`));
      await waitFor(() => fast.got.length === 200, "fast subscriber got all 200", 20_000);
      assert.equal(stalled.stats().dropped, 190);
      assert.ok(lines.some((l) => l.includes("subscriber channel full, dropping update for app: app-")));
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("byte-level prune of list pages and watch lines (the default) changes no App: the same snapshot and events as without pruning", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const fixture = JSON.parse(readFileSync(new URL("./fixtures/flyte/ready-kservice.json", import.meta.url), "utf8")) as KubeObject;
    for (let i = 0; i < 11; i++) {
      const o = structuredClone(fixture);
      o.metadata = { name: `${fixture.metadata.name}-${i}`, namespace: "flyte", labels: o.metadata.labels, annotations: o.metadata.annotations };
      o.metadata.annotations = { ...o.metadata.annotations, "flyte.org/app-id": `proj/dev/myapp-${i}`, note: `"spec": ] } ${i}` };
      o.spec = { template: { spec: { containers: [{ image: `app:v${i}`, env: [{ name: "X", value: "]}\"" }] }] } }, traffic: [{ percent: 100 }] };
      sb.sandbox.create("services", o);
    }
    for (const n of ["a", "b", "c", "d"]) sb.sandbox.create("services", ksvc("proj", "dev", n));
    const make = (prune: boolean) =>
      new AppK8sClient({
        client: new KubeClient({ server: sb.url }),
        namespace: "flyte",
        config: { baseDomain: "localhost", scheme: "http", ingressAppsPort: 30081, watchBufferSize: 100 },
        watch: { initialList: "paginated", pageSize: 4, idleTimeoutMs: 2_000, backoff: { initialMs: 5, maxMs: 50 }, ...(prune ? {} : { prune: [] }) },
      });
    const pruned = make(true);
    const full = make(false);
    try {
      await Promise.all([pruned.startWatching(), full.startWatching()]);
      const a = pruned.subscribe("", { snapshot: true });
      const b = full.subscribe("", { snapshot: true });
      assert.equal(a.snapshotSize, 15);
      assert.equal(b.snapshotSize, 15);
      const ca = collect(a);
      const cb = collect(b);
      await waitFor(() => ca.got.length === 15 && cb.got.length === 15, "both snapshots");
      assert.deepEqual(ca.got, cb.got);
      // Live: a status change, a spec change (no App change), a new app, a delete.
      const name = `${fixture.metadata.name}-3`;
      sb.sandbox.updateStatus("services", "flyte", name, readyStatus(`${name}-00002`));
      sb.sandbox.patch("services", "flyte", name, { spec: { template: { spec: { containers: [{ image: "app:v9" }] } } } });
      sb.sandbox.create("services", ksvc("proj", "dev", "e"));
      sb.sandbox.delete("services", "flyte", KServiceName({ project: "proj", domain: "dev", name: "a" }));
      await waitFor(() => ca.got.length === 18 && cb.got.length === 18, "three live events each");
      assert.deepEqual(ca.got, cb.got);
      assert.deepEqual(ca.lines().slice(15), ["update proj/dev/myapp-3", "create proj/dev/e", "delete proj/dev/a"]);
    } finally {
      await pruned.stopWatching();
      await full.stopWatching();
      await sb.close();
    }
  });
});
