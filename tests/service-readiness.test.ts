/**
 * Readiness follows what clients get: the KService watch (every App, every event, every resume
 * position). The Revision watch only feeds `currentReplicas`; when it fails, /readyz stays 200 and
 * says the replica counts are degraded (body `degraded.replicas`, metric
 * `appwatch_revision_watch_healthy 0`), so an outage of one resource never takes every replica of
 * appwatch out of its Service at once. Faults from the sandbox's injector, on a virtual clock: the
 * failed Revision watch waits for its backoff timer, which only the test moves.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { KubeClient } from "../src/kube/client.ts";
import { seedDemo, startSandbox } from "../src/sandbox/mod.ts";
import { createApp } from "../src/service/app.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { metric, waitFor, within } from "./helpers/service.ts";

describe("readiness and the Revision watch", () => {
  test("a failing Revision watch leaves /readyz 200 with replicas degraded; a failing KService watch makes it 503", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const clock = new VirtualClock(Date.now());
    const kube = new KubeClient({ server: sb.url });
    const apps = new AppK8sClient({ client: kube, namespace: "flyte", clock });
    try {
      seedDemo(sb.sandbox, { namespace: "flyte", count: 3 });
      const { app } = createApp({ client: apps, clock });
      const get = async (path: string) => {
        const res = await app.fetch(new Request(`http://appwatch.test${path}`));
        return { status: res.status, text: await res.text() };
      };
      const readyz = async () => {
        const r = await get("/readyz");
        return { status: r.status, body: JSON.parse(r.text) as { status: string; reason?: string; degraded?: { replicas?: { reason: string; since: string } } } };
      };
      await within(apps.startWatching(), "the initial sync");
      assert.deepEqual(await readyz(), { status: 200, body: { status: "ready" } });
      assert.equal(metric((await get("/metrics")).text, "appwatch_revision_watch_healthy"), 1);

      // Every Revision watch request is refused from now on (RBAC taken away, say); the open ones end.
      const refused = sb.sandbox.faults.add({ resource: "revisions", verb: "watch", times: Infinity, action: { type: "status", code: 403 } });
      sb.sandbox.closeWatches();
      // The refused watch backs off on the virtual clock: it stays failed until the test moves time.
      while (refused.used === 0) await clock.next("backoff");
      await waitFor(() => !apps.replicasHealth()!.healthy, "the Revision watch to report its failure");

      const degraded = await readyz();
      assert.equal(degraded.status, 200, `ready while the app data is current: ${JSON.stringify(degraded.body)}`);
      assert.equal(degraded.body.status, "ready");
      assert.match(degraded.body.degraded?.replicas?.reason ?? "", /403|forbidden/i, JSON.stringify(degraded.body));
      assert.ok(degraded.body.degraded?.replicas?.since, "since when");
      const m = (await get("/metrics")).text;
      assert.equal(metric(m, "appwatch_watch_healthy"), 1, "the KService watch is what readiness follows");
      assert.equal(metric(m, "appwatch_revision_watch_healthy"), 0, "the Revision watch's failure is visible on its own");
      assert.equal((await get("/v1/apps")).status, 200, "apps are served");

      // The Revision watch comes back once the fault is gone and its backoff ends.
      refused.remove();
      await waitFor(() => {
        clock.advance(1_000);
        return apps.replicasHealth()!.healthy;
      }, "the Revision watch to recover");
      assert.deepEqual(await readyz(), { status: 200, body: { status: "ready" } });
      assert.equal(metric((await get("/metrics")).text, "appwatch_revision_watch_healthy"), 1);

      // The KService watch failing is unready, as before.
      const ksvcRefused = sb.sandbox.faults.add({ resource: "services", verb: "watch", times: Infinity, action: { type: "status", code: 403 } });
      sb.sandbox.closeWatches();
      while (ksvcRefused.used === 0) await clock.next("backoff");
      await waitFor(() => !apps.health().healthy, "the KService watch to report its failure");
      const unready = await readyz();
      assert.equal(unready.status, 503);
      assert.match(unready.body.reason ?? "", /403|forbidden/i);
      ksvcRefused.remove();
    } finally {
      await apps.stopWatching();
      await kube.close();
      await sb.close();
    }
  });
});
