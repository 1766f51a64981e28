/**
 * The appwatch HTTP API end to end, in process on the sandbox: WebSocket and
 * SSE watch (snapshot, then live create / update-only-on-change / delete) for
 * every target kind with identity isolation, the list and get routes, health
 * and metrics, and the same App JSON over every transport.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  appEvents,
  appOf,
  eventLines,
  http,
  type Json,
  ksvc,
  ksvcName,
  messagesOf,
  metric,
  SseClient,
  startTestService,
  statusWithMessage,
  waitFor,
  withoutResume,
  WsClient,
} from "./helpers/service.ts";

/** The snapshot part of a stream: the createEvents between `start` and the first `synced`. */
function snapshotOf(frames: Json[]): Json[] {
  const end = frames.findIndex((f) => f.synced);
  assert.ok(end > 0, "the stream has a synced frame");
  return frames.slice(1, end);
}

function idOf(app: Json): string {
  const id = app.metadata.id;
  return `${id.org}/${id.project}/${id.domain}/${id.name}`;
}

describe("appwatch API", () => {
  test("WebSocket: start, snapshot, synced; then live create, update only when the App changed, delete — each with a resume token", async () => {
    const s = await startTestService();
    let c: WsClient | undefined;
    try {
      c = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      await c.synced();
      const start = c.frames[0];
      assert.deepEqual(start, { start: { mode: "snapshot", apps: 6 } });
      const snapshot = snapshotOf(c.frames);
      assert.equal(snapshot.length, 6);
      assert.ok(snapshot.every((f) => f.createEvent && typeof f.resume !== "string"), "snapshot items are createEvents (the synced frame carries the token)");
      const synced = c.frames[7];
      assert.equal(synced.synced.after, "snapshot");
      assert.equal(typeof synced.synced.resume, "string");

      const name = ksvcName("live", "dev", "x");
      s.sb.create("services", ksvc("live", "dev", "x"));
      await c.events(7);
      s.sb.updateStatus("services", "flyte", name, statusWithMessage("first"));
      await c.events(8);
      // A KService change that leaves the App as it was (the image is not part of an App): no frame.
      const unchanged = s.apps.metrics.unchanged;
      s.sb.patch("services", "flyte", name, { spec: { template: { spec: { containers: [{ image: "app:v2" }] } } } });
      await waitFor(() => s.apps.metrics.unchanged > unchanged, "the image change to be seen");
      s.sb.updateStatus("services", "flyte", name, statusWithMessage("second"));
      s.sb.delete("services", "flyte", name);
      await c.events(10);
      const live = c.frames.slice(8);
      assert.deepEqual(eventLines(live), ["create live/dev/x", "update live/dev/x", "update live/dev/x", "delete live/dev/x"]);
      assert.deepEqual(messagesOf(live[1].updateEvent.updatedApp).filter((m) => m === "first" || m === "second"), ["first"]);
      assert.deepEqual(messagesOf(live[2].updateEvent.updatedApp).filter((m) => m === "first" || m === "second"), ["second"]);
      const tokens = live.map((f) => f.resume);
      assert.ok(tokens.every((t) => typeof t === "string" && t.length > 0), "every live event carries a resume token");
      assert.equal(new Set(tokens).size, tokens.length, "each event has its own token");
      assert.equal(c.frames.length, 12, `no other frames: ${c.describe().join(" | ")}`);
    } finally {
      c?.close();
      await s.stop();
    }
  });

  test("targets: exact app, project, org and everything; the same app name in two projects stays isolated", async () => {
    const s = await startTestService();
    const clients: WsClient[] = [];
    try {
      const open = async (query: string) => {
        const c = await WsClient.connect(`${s.wsUrl}/v1/watch${query}`);
        clients.push(c);
        if (query.includes("snapshot=false")) await c.until((f) => f.length > 0, "the start frame");
        else await c.synced();
        return c;
      };
      const all = await open("");
      const exact = await open("?project=proj-a&domain=dev&app=x");
      const project = await open("?project=proj-b&domain=dev");
      const org = await open("?org=acme");
      const demoProject = await open("?project=flytesnacks&domain=development");
      const demoOrg = await open("?org=demo-org");
      const live = await open("?snapshot=false");

      // Snapshots follow the target too.
      const allApps = snapshotOf(all.frames).map((f) => f.createEvent.app);
      assert.deepEqual(snapshotOf(demoProject.frames).map((f) => idOf(f.createEvent.app)), allApps.filter((a) => a.metadata.id.project === "flytesnacks" && a.metadata.id.domain === "development").map(idOf));
      const demoOrgIds = allApps.filter((a) => a.metadata.id.org === "demo-org").map(idOf).sort();
      assert.ok(demoOrgIds.length > 0 && demoOrgIds.length < allApps.length);
      assert.deepEqual(snapshotOf(demoOrg.frames).map((f) => idOf(f.createEvent.app)).sort(), demoOrgIds);
      assert.deepEqual(exact.frames[0], { start: { mode: "snapshot", apps: 0 } });
      assert.deepEqual(live.frames, [{ start: { mode: "live" } }], "snapshot=false: no snapshot, no synced marker");

      s.sb.create("services", ksvc("proj-a", "dev", "x"));
      s.sb.create("services", ksvc("proj-b", "dev", "x"));
      s.sb.create("services", ksvc("proj-b", "dev", "y", { org: "acme" }));
      s.sb.updateStatus("services", "flyte", ksvcName("proj-b", "dev", "x"), statusWithMessage("b changed"));
      s.sb.delete("services", "flyte", ksvcName("proj-a", "dev", "x"));
      await all.events(6 + 5);
      await live.events(5);
      await exact.events(2);
      await project.events(3);
      await org.events(1);
      assert.deepEqual(eventLines(all.frames).slice(6), ["create proj-a/dev/x", "create proj-b/dev/x", "create proj-b/dev/y", "update proj-b/dev/x", "delete proj-a/dev/x"]);
      assert.deepEqual(eventLines(live.frames), eventLines(all.frames).slice(6));
      assert.deepEqual(eventLines(exact.frames), ["create proj-a/dev/x", "delete proj-a/dev/x"]);
      assert.deepEqual(eventLines(project.frames), ["create proj-b/dev/x", "create proj-b/dev/y", "update proj-b/dev/x"]);
      assert.deepEqual(eventLines(org.frames), ["create proj-b/dev/y"]);
      assert.equal(appOf(org.frames.at(-1)).metadata.id.org, "acme");
      assert.deepEqual(eventLines(demoProject.frames).length, snapshotOf(demoProject.frames).length, "no live event outside the target");
      assert.deepEqual(eventLines(demoOrg.frames).length, demoOrgIds.length);
    } finally {
      for (const c of clients) c.close();
      await s.stop();
    }
  });

  test("SSE gives the same frames as a WebSocket: event names, ids = resume tokens, JSON data", async () => {
    const s = await startTestService();
    let ws: WsClient | undefined;
    let sse: SseClient | undefined;
    try {
      ws = await WsClient.connect(`${s.wsUrl}/v1/watch?project=sse&domain=dev`);
      sse = await SseClient.connect(`${s.url}/v1/watch?project=sse&domain=dev`);
      assert.match(sse.response.headers.get("content-type") ?? "", /^text\/event-stream/);
      await ws.synced();
      await sse.synced();
      s.sb.create("services", ksvc("sse", "dev", "a"));
      s.sb.create("services", ksvc("sse", "dev", "b"));
      s.sb.updateStatus("services", "flyte", ksvcName("sse", "dev", "a"), statusWithMessage("ready now"));
      s.sb.delete("services", "flyte", ksvcName("sse", "dev", "b"));
      await ws.events(4);
      await sse.events(4);
      const wsFrames = ws.frames.filter((f) => !f.heartbeat);
      const sseMessages = sse.messages.filter((m) => m.event !== "heartbeat");
      assert.deepEqual(sseMessages.map((m) => m.data), wsFrames, "identical frames");
      assert.deepEqual(sseMessages.map((m) => m.event), ["start", "synced", "createEvent", "createEvent", "updateEvent", "deleteEvent"]);
      for (const m of sseMessages) {
        const token = m.data.resume ?? m.data.synced?.resume;
        assert.equal(m.id, token, `${m.event}: id is the frame's resume token`);
      }
    } finally {
      ws?.close();
      sse?.close();
      await s.stop();
    }
  });

  test("GET /v1/apps lists (project/domain filter, limit + token pages), GET one app, 404 for a missing one", async () => {
    const s = await startTestService();
    try {
      const all = await http(`${s.url}/v1/apps`);
      assert.equal(all.status, 200);
      assert.match(all.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(all.body.apps.length, 6);
      assert.equal(all.body.token, undefined, "no token on the last page (proto3 JSON omits empty fields)");

      const ids: string[] = [];
      let token = "";
      let pages = 0;
      do {
        const page = await http(`${s.url}/v1/apps?limit=4${token ? `&token=${encodeURIComponent(token)}` : ""}`);
        assert.equal(page.status, 200);
        assert.ok(page.body.apps.length <= 4);
        ids.push(...page.body.apps.map(idOf));
        token = page.body.token ?? "";
        pages++;
      } while (token && pages < 10);
      assert.equal(pages, 2);
      assert.deepEqual(ids.sort(), all.body.apps.map(idOf).sort(), "pages cover every app once");

      const llm = await http(`${s.url}/v1/apps?project=llm&domain=development`);
      assert.deepEqual(llm.body.apps.map(idOf), ["flyte/llm/development/gradio-chat"]);
      const none = await http(`${s.url}/v1/apps?project=nothing&domain=here`);
      assert.deepEqual(none.body, {}, "an empty list is {}");

      const one = await http(`${s.url}/v1/apps/llm/development/gradio-chat`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, llm.body.apps[0]);
      const withOrg = await http(`${s.url}/v1/apps/flytesnacks/development/streamlit-hello?org=demo-org`);
      assert.equal(withOrg.status, 200);
      const wrongOrg = await http(`${s.url}/v1/apps/flytesnacks/development/streamlit-hello?org=other`);
      assert.equal(wrongOrg.status, 404);
      const missing = await http(`${s.url}/v1/apps/llm/development/nope`);
      assert.equal(missing.status, 404);
      assert.equal(missing.body.code, "not_found");
      assert.match(missing.body.message, /not found/);
    } finally {
      await s.stop();
    }
  });

  test("a live event's frame reaches every subscriber whole: encoded once and shared (SSE bytes per frame, Node's bytes per broadcast), never consumed by the first", async () => {
    const s = await startTestService();
    const sses: SseClient[] = [];
    const wss: WsClient[] = [];
    try {
      for (let i = 0; i < 3; i++) sses.push(await SseClient.connect(`${s.url}/v1/watch`));
      for (let i = 0; i < 3; i++) wss.push(await WsClient.connect(`${s.wsUrl}/v1/watch`));
      for (const c of [...sses, ...wss]) await c.synced();
      for (let i = 0; i < 5; i++) s.sb.create("services", ksvc("shared", "dev", `app-${i}`));
      for (const c of [...sses, ...wss]) await c.events(11);
      const live = (frames: Json[]) => appEvents(frames).slice(6).map((f) => JSON.stringify(f));
      const first = live(sses[0]!.frames);
      assert.equal(first.length, 5);
      assert.deepEqual(first.map((f) => JSON.parse(f).createEvent.app.metadata.id.name), ["app-0", "app-1", "app-2", "app-3", "app-4"]);
      for (const c of [...sses, ...wss]) assert.deepEqual(live(c.frames), first);
    } finally {
      for (const c of [...sses, ...wss]) c.close();
      await s.stop();
    }
  });

  test("the same App JSON over WebSocket, SSE, GET /v1/apps and GET one app", async () => {
    const s = await startTestService();
    let ws: WsClient | undefined;
    let sse: SseClient | undefined;
    try {
      ws = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      sse = await SseClient.connect(`${s.url}/v1/watch`);
      await ws.synced();
      await sse.synced();
      const byId = (apps: Json[]) => new Map(apps.map((a) => [idOf(a), a]));
      const fromWs = byId(snapshotOf(ws.frames).map((f) => f.createEvent.app));
      const fromSse = byId(snapshotOf(sse.frames).map((f) => f.createEvent.app));
      const fromList = byId((await http(`${s.url}/v1/apps`)).body.apps);
      assert.equal(fromWs.size, 6);
      assert.deepEqual(fromSse, fromWs);
      assert.deepEqual(fromList, fromWs);
      for (const app of fromWs.values()) {
        const { project, domain, name } = app.metadata.id;
        const got = await http(`${s.url}/v1/apps/${project}/${domain}/${name}`);
        assert.deepEqual(got.body, app, `GET ${project}/${domain}/${name}`);
      }
      // A live event's App is the same as what GET answers afterwards.
      s.sb.create("services", ksvc("same", "dev", "z"));
      await ws.events(7);
      await sse.events(7);
      const created = appEvents(ws.frames).at(-1);
      assert.deepEqual(withoutResume(appEvents(sse.frames).at(-1)), withoutResume(created));
      assert.deepEqual((await http(`${s.url}/v1/apps/same/dev/z`)).body, created.createEvent.app);
    } finally {
      ws?.close();
      sse?.close();
      await s.stop();
    }
  });

  test("/healthz, /readyz and /metrics with the documented families", async () => {
    const s = await startTestService();
    let ws: WsClient | undefined;
    try {
      const health = await http(`${s.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: "ok" });
      const ready = await http(`${s.url}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.body, { status: "ready" });

      ws = await WsClient.connect(`${s.wsUrl}/v1/watch?project=llm&domain=development`);
      await ws.synced();
      await http(`${s.url}/v1/apps`);
      const res = await http(`${s.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
      const m = res.text;
      for (
        const family of [
          "appwatch_ws_connections",
          "appwatch_sse_connections",
          "appwatch_subscribers",
          "appwatch_frames_sent_total",
          "appwatch_http_requests_total",
          "appwatch_build_info",
          "appwatch_reflector_relists_total",
          "appwatch_events_dropped_total",
          "appwatch_events_coalesced_total",
          "appwatch_backpressure_waits_total",
          "appwatch_frames_dropped_by_runtime_total",
          "appwatch_watch_synced",
          "appwatch_watch_healthy",
        ]
      ) {
        assert.match(m, new RegExp(`^# HELP ${family} `, "m"), `${family} has HELP`);
        assert.match(m, new RegExp(`^# TYPE ${family} (counter|gauge)$`, "m"), `${family} has TYPE`);
      }
      assert.equal(metric(m, "appwatch_ws_connections"), 1);
      assert.equal(metric(m, "appwatch_subscribers", 'target="project"'), 1);
      assert.equal(metric(m, "appwatch_frames_sent_total", 'kind="start"'), 1);
      assert.equal(metric(m, "appwatch_frames_sent_total", 'kind="createEvent"'), 1);
      assert.equal(metric(m, "appwatch_frames_sent_total", 'kind="synced"'), 1);
      assert.ok((metric(m, "appwatch_http_requests_total", 'route="/healthz",status="200"') ?? 0) >= 1);
      assert.ok((metric(m, "appwatch_http_requests_total", 'route="/v1/apps",status="200"') ?? 0) >= 1);
      assert.equal(metric(m, "appwatch_reflector_relists_total"), 0);
      assert.equal(metric(m, "appwatch_watch_synced"), 1);
      assert.equal(metric(m, "appwatch_events_dropped_total", 'policy="coalesce"'), 0);
      const build = m.split("\n").find((l) => l.startsWith("appwatch_build_info{"));
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      const runtime = g.Deno ? "deno" : g.Bun ? "bun" : "node";
      assert.match(build ?? "", new RegExp(`runtime="${runtime}"`));
      assert.match(build ?? "", / 1$/);

      ws.close();
      await ws.closed;
      await waitFor(() => s.api.metrics.wsConnections === 0, "the connection to be counted as closed");
      const after = (await http(`${s.url}/metrics`)).text;
      assert.equal(metric(after, "appwatch_ws_connections"), 0);
      assert.equal(metric(after, "appwatch_subscribers", 'target="project"'), 0);
    } finally {
      ws?.close();
      await s.stop();
    }
  });
});
