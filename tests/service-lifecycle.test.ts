/**
 * The service's lifecycle: an orderly shutdown (WebSocket clients get 1001,
 * SSE streams end, the port closes), and readiness — /readyz is 503 until the
 * initial sync, flips to 503 while the API server cannot be reached, and
 * back to 200 when it returns (with the changes made meanwhile delivered).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger } from "../src/log.ts";
import { seedDemo, startSandbox } from "../src/sandbox/mod.ts";
import { createApp } from "../src/service/app.ts";
import { connectCluster, type RunningService, startService } from "../src/service/server.ts";
import { rawConnect, upgraded } from "./helpers/raw-ws.ts";
import { startRestartableSandbox, writeKubeconfig } from "./helpers/restartable-sandbox.ts";
import { eventLines, eventually, http, ksvc, metric, SseClient, startTestService, testSettings, within, WsClient } from "./helpers/service.ts";

async function readyz(url: string): Promise<{ status: number; body: { status: string; reason?: string } }> {
  const r = await http(`${url}/readyz`);
  return { status: r.status, body: r.body };
}

describe("service lifecycle", () => {
  test("stop(): WebSocket clients get 1001, SSE streams end, stop() resolves and the port no longer accepts", async () => {
    const s = await startTestService();
    let stopped = false;
    try {
      const ws = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      const ws2 = await WsClient.connect(`${s.wsUrl}/v1/watch?project=llm&domain=development`);
      const sse = await SseClient.connect(`${s.url}/v1/watch`);
      const raw = upgraded(await rawConnect(`${s.url}/v1/watch`));
      await ws.synced();
      await ws2.synced();
      await sse.synced();

      await within(s.stop(), "stop() to resolve", 20_000);
      stopped = true;
      for (const c of [ws, ws2]) {
        const closed = await within(c.closed, "the WebSocket close");
        assert.equal(closed.code, 1001);
        assert.match(closed.reason, /shutting down/);
      }
      const rawClose = await raw.closed(10_000);
      assert.equal(rawClose?.code, 1001, "the close frame went out before the connection was cut");
      await within(sse.done, "the SSE stream to end");
      assert.equal(sse.ended, true);
      await assert.rejects(fetch(`${s.url}/healthz`), "the port no longer accepts");
      await assert.rejects(WsClient.connect(`${s.wsUrl}/v1/watch`));
      // The sandbox went down with it.
      await assert.rejects(fetch(`${s.sandboxUrl}/apis/serving.knative.dev/v1/services`));
      assert.equal(s.api.metrics.wsConnections, 0);
      assert.equal(s.api.metrics.sseConnections, 0);
      await within(s.stop(), "a second stop() to resolve too");
    } finally {
      if (!stopped) await s.stop();
    }
  });

  test("/readyz is 503 until the initial sync (an app client not started yet), then 200; /healthz is 200 throughout", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const kube = new KubeClient({ server: sb.url });
    const apps = new AppK8sClient({ client: kube, namespace: "flyte" });
    try {
      seedDemo(sb.sandbox, { namespace: "flyte", count: 3 });
      const { app, metrics } = createApp({ client: apps });
      const get = async (path: string) => {
        const res = await app.fetch(new Request(`http://appwatch.test${path}`));
        return { status: res.status, body: await res.json() };
      };
      const before = await get("/readyz");
      assert.equal(before.status, 503);
      assert.equal(before.body.status, "not ready");
      assert.match(before.body.reason, /initial sync/);
      assert.equal((await get("/healthz")).status, 200);
      const m0 = await (await app.fetch(new Request("http://appwatch.test/metrics"))).text();
      assert.equal(metric(m0, "appwatch_watch_synced"), 0);
      assert.ok(metrics);

      await apps.startWatching();
      const after = await get("/readyz");
      assert.equal(after.status, 200);
      assert.deepEqual(after.body, { status: "ready" });
      const m1 = await (await app.fetch(new Request("http://appwatch.test/metrics"))).text();
      assert.equal(metric(m1, "appwatch_watch_synced"), 1);
      assert.equal(metric(m1, "appwatch_watch_healthy"), 1);
    } finally {
      await apps.stopWatching();
      await kube.close();
      await sb.close();
    }
  });

  test("the whole service against an API server that is down at start: /readyz 503 while it retries, 200 once it syncs", async () => {
    const rs = await startRestartableSandbox({ bookmarkIntervalMs: 0, serve: false });
    const kc = await writeKubeconfig(rs.url);
    let s: RunningService | undefined;
    try {
      seedDemo(rs.sandbox, { namespace: "flyte", count: 2 });
      s = await startService(testSettings(), { logger: createLogger({ level: "error", sink: () => {} }), cluster: await connectCluster({ kubeconfig: kc.path, namespaces: ["flyte"] }) });
      const down = await readyz(s.url);
      assert.equal(down.status, 503);
      assert.match(down.body.reason ?? "", /initial sync/);
      assert.equal((await http(`${s.url}/healthz`)).status, 200);
      await rs.serveAgain();
      await within(s.watching, "the initial sync once the API server is up", 30_000);
      assert.equal((await readyz(s.url)).status, 200);
    } finally {
      await s?.stop();
      await rs.close();
      await kc.cleanup();
    }
  });

  test("/readyz flips to 503 while the API server refuses connections and back to 200 when it returns; changes made meanwhile arrive", async () => {
    const rs = await startRestartableSandbox({ bookmarkIntervalMs: 0 });
    const kc = await writeKubeconfig(rs.url);
    let s: RunningService | undefined;
    let ws: WsClient | undefined;
    try {
      rs.sandbox.create("services", ksvc("flip", "dev", "before"));
      s = await startService(testSettings(), { logger: createLogger({ level: "error", sink: () => {} }), cluster: await connectCluster({ kubeconfig: kc.path, namespaces: ["flyte"] }) });
      await within(s.watching, "the initial sync");
      const url = s.url;
      assert.equal((await readyz(url)).status, 200);
      ws = await WsClient.connect(`${s.url.replace(/^http/, "ws")}/v1/watch`);
      await ws.synced();

      await rs.stopServing();
      await eventually(async () => (await readyz(url)).status === 503, "/readyz to turn 503 while the API server is down", 20_000);
      const down = await readyz(url);
      assert.equal(down.body.status, "not ready");
      assert.ok(down.body.reason, "the reason is given");
      assert.equal(metric((await http(`${url}/metrics`)).text, "appwatch_watch_healthy"), 0);
      assert.equal((await http(`${url}/healthz`)).status, 200, "liveness is not readiness");
      assert.equal(ws.closeInfo, undefined, "clients stay connected through the outage");
      rs.sandbox.create("services", ksvc("flip", "dev", "during"));

      await rs.serveAgain();
      await eventually(async () => (await readyz(url)).status === 200, "/readyz back to 200 after the API server returns", 30_000);
      await ws.events(2, 15_000);
      assert.deepEqual(eventLines(ws.frames), ["create flip/dev/before", "create flip/dev/during"]);
      assert.equal(metric((await http(`${url}/metrics`)).text, "appwatch_watch_healthy"), 1);
    } finally {
      ws?.close();
      await s?.stop();
      await rs.close();
      await kc.cleanup();
    }
  });

  test("a WebSocket peer that stops answering pings is closed; one that answers stays", async () => {
    const s = await startTestService({ pingSeconds: 1, heartbeatSeconds: 3600 });
    try {
      const live = upgraded(await rawConnect(`${s.url}/v1/watch?snapshot=false`));
      const dead = upgraded(await rawConnect(`${s.url}/v1/watch?snapshot=false`));
      dead.answerPings = false;
      // Deno pings at its idleTimeout, Bun after idleTimeout/2 of silence, Node every pingSeconds.
      await eventually(async () => dead.ended, "the silent peer to be closed", 30_000);
      assert.ok(dead.pings >= 1, "it was pinged first");
      assert.equal(live.ended, false, "the peer that answers pings is still connected");
      assert.ok(live.pings >= 1, "the live peer was pinged too");
      await eventually(async () => metric((await http(`${s.url}/metrics`)).text, "appwatch_ws_connections") === 1, "the closed socket to be counted out", 10_000);
      live.close(1000);
    } finally {
      await s.stop();
    }
  });
});
