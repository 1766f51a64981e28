/**
 * Defects found from outside (issue 14), each failing on the code before the app-client split:
 * identity checked one way everywhere (the app-id annotation, never labels or colliding KService
 * names), duplicate KServices for one identity, List/Get from the synced watch, and a watch whose
 * lifetime is not its readiness.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient, AppNotFoundError } from "../src/flyte/app-client.ts";
import type { WatchResponse } from "../src/flyte/model.ts";
import type { Subscription } from "../src/flyte/subscriptions.ts";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger } from "../src/log.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import type { KubeObject } from "../src/watch/types.ts";
import { startRestartableSandbox } from "./helpers/restartable-sandbox.ts";
import { waitFor } from "./helpers/run.ts";
import { ksvc } from "./helpers/service.ts";

function collect(sub: Subscription) {
  const got: WatchResponse[] = [];
  const done = (async () => {
    for await (const e of sub) got.push(e);
  })();
  return { got, done };
}

const names = (events: WatchResponse[]) =>
  events.map((e) => {
    const kind = "createEvent" in e ? "create" : "updateEvent" in e ? "update" : "delete";
    const app = "createEvent" in e ? e.createEvent.app : "updateEvent" in e ? e.updateEvent.updatedApp : e.deleteEvent.app;
    const id = app.metadata!.id!;
    return `${kind} ${id.project}/${id.domain}/${id.name}`;
  });

async function setup(url: string, logs?: string[]) {
  const apps = new AppK8sClient({
    client: new KubeClient({ server: url }),
    namespace: "flyte",
    config: { baseDomain: "localhost", scheme: "http", ingressAppsPort: 30081, watchBufferSize: 100 },
    watch: { idleTimeoutMs: 2_000, backoff: { initialMs: 5, maxMs: 50 } },
    ...(logs ? { logger: createLogger({ level: "warn", sink: (l) => logs.push(l) }) } : {}),
  });
  return apps;
}

/** A KService named `name` whose app-id is `appId` (labels as given). */
function claiming(name: string, appId: string, labels: Record<string, string> = {}): KubeObject {
  const k = ksvc("x", "y", "z");
  k.metadata.name = name;
  k.metadata.annotations = { "flyte.org/app-id": appId };
  k.metadata.labels = { "flyte.org/app-managed": "true", ...labels };
  return k;
}

describe("one identity everywhere", () => {
  test("Get never returns another identity's app whose KService name collides (b-c/d/a vs c/d/a-b)", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = await setup(sb.url);
    try {
      // KServiceName("b-c/d/a") = "a-b-c-d" = KServiceName("c/d/a-b")
      sb.sandbox.create("services", ksvc("c", "d", "a-b"));
      const before = apps.getApp({ project: "b-c", domain: "d", name: "a" });
      await assert.rejects(before, AppNotFoundError, "before the sync (from the API server)");
      await apps.startWatching();
      await assert.rejects(apps.getApp({ project: "b-c", domain: "d", name: "a" }), AppNotFoundError, "after the sync (from the watch)");
      assert.equal((await apps.getApp({ project: "c", domain: "d", name: "a-b" })).metadata?.id?.name, "a-b");
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("List filters by the app-id identity, not by labels that disagree with it", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = await setup(sb.url);
    try {
      sb.sandbox.create("services", claiming("mislabelled", "real/dev/app", { "flyte.org/project": "label", "flyte.org/domain": "dev" }));
      await apps.startWatching();
      assert.deepEqual((await apps.list("real", "dev")).apps.map((a) => a.metadata?.id?.project), ["real"]);
      assert.deepEqual((await apps.list("label", "dev")).apps, []);
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("two KServices claiming one app-id are one app: deleting either keeps it for live clients, List and snapshots; a warning names them", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const logs: string[] = [];
    const apps = await setup(sb.url, logs);
    try {
      sb.sandbox.create("services", claiming("twin-a", "p/d/twin"));
      await apps.startWatching();
      const live = collect(apps.subscribe("", { snapshot: true }));
      sb.sandbox.create("services", claiming("twin-b", "p/d/twin"));
      await waitFor(() => logs.some((l) => l.includes("several KServices claim one app identity")), "the duplicate warning");
      sb.sandbox.delete("services", "flyte", "twin-a");
      // the app is still there (shown from twin-b now): at most an update, never a delete
      await waitFor(() => (apps.watchMetrics()?.emitted.deleted ?? 0) >= 1, "the delete of twin-a to be applied");
      assert.deepEqual(names(live.got).filter((n) => n.startsWith("delete")), []);
      assert.equal((await apps.list("p", "d")).apps.length, 1);
      const snap = collect(apps.subscribe("", { snapshot: true }));
      await waitFor(() => snap.got.length >= 1, "a new snapshot");
      assert.deepEqual(names(snap.got), ["create p/d/twin"]);
      sb.sandbox.delete("services", "flyte", "twin-b");
      await waitFor(() => live.got.some((e) => "deleteEvent" in e), "the app's delete once no KService claims it");
      // (an update in between is allowed: the app is shown from twin-b after twin-a went, and its status may differ)
      assert.deepEqual(names(live.got).filter((n) => !n.startsWith("update")), ["create p/d/twin", "delete p/d/twin"]);
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("List and Get answer from the synced watch: the API server going away does not fail them", async () => {
    const rs = await startRestartableSandbox({ bookmarkIntervalMs: 0 });
    const apps = await setup(rs.url);
    try {
      rs.sandbox.create("services", ksvc("p", "d", "a1"));
      rs.sandbox.create("services", ksvc("p", "d", "a2"));
      rs.sandbox.create("services", ksvc("p", "d", "a3"));
      await apps.startWatching();
      await rs.stopServing();
      const first = await apps.list("p", "d", 2, "");
      assert.equal(first.apps.length, 2);
      assert.ok(first.token, "a page token");
      const rest = await apps.list("p", "d", 2, first.token);
      assert.deepEqual([...first.apps, ...rest.apps].map((a) => a.metadata?.id?.name).sort(), ["a1", "a2", "a3"]);
      assert.equal(rest.token, "");
      assert.equal((await apps.getApp({ project: "p", domain: "d", name: "a2" })).metadata?.id?.name, "a2");
      await assert.rejects(apps.list("p", "d", 2, "garbage!"), { name: "InvalidPageTokenError" });
    } finally {
      await apps.stopWatching();
      await rs.close();
    }
  });

  test("the watch's lifetime is not its readiness: when the lifetime signal ends it, synced and health say so and subscriptions end", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = await setup(sb.url);
    try {
      sb.sandbox.create("services", ksvc("p", "d", "short"));
      const lifetime = new AbortController();
      await apps.startWatching({ signal: lifetime.signal, timeoutMs: 10_000 });
      assert.equal(apps.synced, true);
      const sub = collect(apps.subscribe(""));
      lifetime.abort();
      await sub.done; // ended, not silently stalled
      await waitFor(() => !apps.synced, "synced to turn false");
      assert.equal(apps.health().healthy, false);
      assert.match(apps.health().reason ?? "", /not watching/);
      // and it can be started again
      await apps.startWatching();
      assert.equal(apps.synced, true);
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });

  test("startWatching's timeout bounds the wait for the sync, not the watch", async () => {
    const rs = await startRestartableSandbox({ bookmarkIntervalMs: 0, serve: false });
    const apps = await setup(rs.url);
    try {
      // unreachable: the preflight fails at once; a reachable API server that is slow to list is the timeout's case
      await assert.rejects(apps.startWatching({ timeoutMs: 5_000 }));
      await rs.serveAgain();
      await apps.startWatching({ timeoutMs: 10_000 });
      assert.equal(apps.synced, true);
    } finally {
      await apps.stopWatching();
      await rs.close();
    }
  });
});
