/**
 * Flyte's AppService over Connect and gRPC-Web, end to end on the sandbox, with the real
 * `@connectrpc/connect` client (fetch transports: Connect JSON, Connect binary, gRPC-Web) on
 * each runtime; raw HTTP requests that check the envelope bytes and the unary error bodies;
 * the same App JSON over Connect, WebSocket and `GET /v1/apps`; and the bad paths (bad
 * targets and arguments, malformed bodies, auth, origin, limits, shutdown).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type DescMessage, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  AppService,
  GetResponseSchema,
  ListResponseSchema,
  WatchResponseSchema,
} from "../src/flyte/proto/app_service_pb.ts";
import { appEvents, appOf, http, type Json, ksvc, ksvcName, metric, startTestService, statusWithMessage, type TestService, waitFor, WsClient } from "./helpers/service.ts";

/** The client's view of AppService (its descriptors are built at run time, so the client is typed by hand). */
interface AppClient {
  list(req: Json): Promise<unknown>;
  get(req: Json): Promise<unknown>;
  watch(req: Json, options?: { signal?: AbortSignal }): AsyncIterable<unknown>;
  create(req: Json): Promise<unknown>;
  delete(req: Json): Promise<unknown>;
  updateStatus(req: Json): Promise<unknown>;
}

const transports: Record<string, (baseUrl: string, headers?: Record<string, string>) => Transport> = {
  "Connect JSON": (baseUrl, headers) => createConnectTransport({ baseUrl, interceptors: withHeaders(headers) }),
  "Connect binary": (baseUrl, headers) => createConnectTransport({ baseUrl, useBinaryFormat: true, interceptors: withHeaders(headers) }),
  "gRPC-Web": (baseUrl, headers) => createGrpcWebTransport({ baseUrl, interceptors: withHeaders(headers) }),
};

function withHeaders(headers: Record<string, string> | undefined) {
  if (!headers) return [];
  return [(next: (req: { header: Headers }) => Promise<unknown>) => (req: { header: Headers }) => {
    for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
    return next(req);
  }] as never;
}

function appClient(s: TestService, kind: string, prefix = "/internal", headers?: Record<string, string>): AppClient {
  return createClient(AppService, transports[kind]!(`${s.url}${prefix}`, headers)) as unknown as AppClient;
}

const json = (schema: DescMessage, msg: unknown): Json => toJson(schema, msg as never);

/** Reads a Connect Watch in the background, keeping each message as proto3 JSON. */
class ConnectWatch {
  readonly messages: Json[] = [];
  error: ConnectError | undefined;
  ended = false;
  readonly done: Promise<void>;
  readonly #abort = new AbortController();

  constructor(client: AppClient, request: Json) {
    this.done = (async () => {
      try {
        for await (const m of client.watch(request, { signal: this.#abort.signal })) this.messages.push(json(WatchResponseSchema, m));
      } catch (err) {
        this.error = ConnectError.from(err);
      } finally {
        this.ended = true;
      }
    })();
  }

  until(n: number, what: string): Promise<void> {
    return waitFor(() => this.messages.length >= n || this.ended, () => `${what}: ${n} messages (got ${this.messages.length}, ended ${this.ended}, ${this.error})`).then(() => {
      assert.ok(this.messages.length >= n, `${what}: stream ended early with ${this.error}`);
    });
  }

  /**
   * Aborts the call. Deno's fetch can leave the aborted body's read pending forever when several
   * in-process streams are aborted (a client-side quirk, docs/flyte-compatibility.md): the wait
   * is bounded so that quirk cannot hang the suite; the server side is asserted elsewhere.
   */
  async close(): Promise<void> {
    this.#abort.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.done, new Promise<void>((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
  }
}

function ids(messages: Json[]): string[] {
  return messages.map((m) => {
    const kind = Object.keys(m)[0]!;
    const id = appOf(m)!.metadata.id;
    return `${kind} ${id.org}/${id.project}/${id.domain}/${id.name}`;
  });
}

async function rejects(p: Promise<unknown>, code: Code, message?: RegExp): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(Code[e.code], Code[code], `code of: ${e.message}`);
    if (message) assert.match(e.rawMessage, message);
    return e;
  }
  assert.fail(`expected ${Code[code]}`);
}

async function collect(it: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const m of it) out.push(m);
  return out;
}

for (const kind of Object.keys(transports)) {
  describe(`AppService over ${kind}`, () => {
    test("List: all apps, a project filter, and limit + token pages; Get: found, not found, bad arguments", async () => {
      const s = await startTestService();
      try {
        const c = appClient(s, kind);
        const all = json(ListResponseSchema, await c.list({}));
        assert.equal(all.apps.length, 6);
        assert.equal(all.token, undefined, "one page: no token");

        const snacks = json(ListResponseSchema, await c.list({ filterBy: { case: "project", value: { name: "flytesnacks", domain: "development" } } }));
        assert.deepEqual(snacks.apps.map((a: Json) => a.metadata.id.name), ["streamlit-hello"]);

        const seen: string[] = [];
        let token = "";
        let pages = 0;
        do {
          const page = json(ListResponseSchema, await c.list({ request: { limit: 4, token } }));
          seen.push(...page.apps.map((a: Json) => a.metadata.id.name));
          token = page.token ?? "";
          pages++;
        } while (token !== "");
        assert.equal(pages, 2);
        assert.deepEqual(seen.sort(), all.apps.map((a: Json) => a.metadata.id.name).sort());

        const first = all.apps[0].metadata.id;
        const got = json(GetResponseSchema, await c.get({ identifier: { case: "appId", value: first } }));
        assert.deepEqual(got.app, all.apps[0]);

        await rejects(c.get({ identifier: { case: "appId", value: { ...first, name: "nope" } } }), Code.NotFound, /not found/);
        await rejects(c.get({ identifier: { case: "appId", value: { ...first, org: "another-org" } } }), Code.NotFound, /another-org/);
        await rejects(c.get({}), Code.InvalidArgument, /^app_id is required$/);
        await rejects(c.get({ identifier: { case: "ingress", value: { publicUrl: "http://x" } } }), Code.InvalidArgument, /app_id is required/);
        await rejects(c.get({ identifier: { case: "appId", value: { project: "p", domain: "d" } } }), Code.InvalidArgument, /appId\.name/);
        // org (Flyte's data plane: unimplemented): that org's apps, as REST's ?org= and the Watch's org target.
        const demoOrg = json(ListResponseSchema, await c.list({ filterBy: { case: "org", value: "demo-org" } }));
        const restOrg = (await http(`${s.url}/v1/apps?org=demo-org`)).body;
        assert.ok(demoOrg.apps.length > 0 && demoOrg.apps.length < all.apps.length, `a part of the apps: ${demoOrg.apps.length} of ${all.apps.length}`);
        assert.ok(demoOrg.apps.every((a: Json) => a.metadata.id.org === "demo-org"));
        assert.deepEqual(demoOrg.apps, restOrg.apps);
        assert.deepEqual(all.apps.filter((a: Json) => a.metadata.id.org === "demo-org"), demoOrg.apps);
        assert.deepEqual(json(ListResponseSchema, await c.list({ filterBy: { case: "org", value: "nobody" } })), {});
        await rejects(c.list({ filterBy: { case: "org", value: "" } }), Code.InvalidArgument, /^org: must not be empty$/);
        // An unnamed cluster (no --cluster-name) is no cluster_id's: tests/service-cluster-name.test.ts has the named one.
        await rejects(c.list({ filterBy: { case: "clusterId", value: { name: "c" } } }), Code.NotFound, /no cluster "c" here: .*has no name/);
        await rejects(c.create({}), Code.Unimplemented, /read-only/);
        await rejects(c.delete({}), Code.Unimplemented, /read-only/);
        await rejects(c.updateStatus({}), Code.Unimplemented);
      } finally {
        await s.stop();
      }
    });

    test("Watch appId: snapshot as createEvents, then live update and delete of exactly that app (same name elsewhere does not leak)", async () => {
      const s = await startTestService();
      const c = appClient(s, kind);
      const w = new ConnectWatch(c, { target: { case: "appId", value: { project: "team", domain: "dev", name: "svc" } } });
      try {
        s.sb.create("services", ksvc("team", "dev", "svc"));
        await w.until(1, "the live create");
        // Same name in another project and another domain: Flyte's name-only match would leak these.
        s.sb.create("services", ksvc("other", "dev", "svc"));
        s.sb.create("services", ksvc("team", "prod", "svc"));
        s.sb.updateStatus("services", "flyte", ksvcName("team", "dev", "svc"), statusWithMessage("ready now"));
        await w.until(2, "the update");
        s.sb.delete("services", "flyte", ksvcName("team", "dev", "svc"));
        await w.until(3, "the delete");
        assert.deepEqual(ids(w.messages), ["createEvent flyte/team/dev/svc", "updateEvent flyte/team/dev/svc", "deleteEvent flyte/team/dev/svc"]);
        assert.equal(w.messages[1].updateEvent.oldApp, undefined, "oldApp is never set, as in Flyte");

        // A second watcher of an existing app starts with its snapshot.
        const again = new ConnectWatch(c, { target: { case: "appId", value: { org: "demo-org", project: "flytesnacks", domain: "development", name: "streamlit-hello" } } });
        await again.until(1, "the snapshot");
        assert.deepEqual(ids(again.messages), ["createEvent demo-org/flytesnacks/development/streamlit-hello"]);
        await again.close();
        assert.equal(w.ended, false, "the stream stays open");
      } finally {
        await s.stop(); // the server first: its end-stream frame ends the client's read
        await w.close();
      }
    });

    test("Watch project, org and no target; clusterId and bad targets are refused with the right code", async () => {
      const s = await startTestService();
      const c = appClient(s, kind);
      const project = new ConnectWatch(c, { target: { case: "project", value: { name: "llm", domain: "production" } } });
      const wholeProject = new ConnectWatch(c, { target: { case: "project", value: { name: "llm" } } });
      const org = new ConnectWatch(c, { target: { case: "org", value: "demo-org" } });
      const all = new ConnectWatch(c, {});
      try {
        await project.until(1, "project snapshot");
        await wholeProject.until(2, "whole-project snapshot");
        await org.until(4, "org snapshot");
        await all.until(6, "all-apps snapshot");
        assert.deepEqual(ids(project.messages), ["createEvent flyte/llm/production/vllm-llama"]);
        assert.deepEqual(ids(wholeProject.messages).sort(), ["createEvent flyte/llm/development/gradio-chat", "createEvent flyte/llm/production/vllm-llama"]);
        assert.ok(ids(org.messages).every((l) => l.startsWith("createEvent demo-org/")), ids(org.messages).join());

        s.sb.create("services", ksvc("llm", "production", "new-model"));
        await project.until(2, "project live create");
        await wholeProject.until(3, "whole-project live create");
        await all.until(7, "all-apps live create");
        assert.equal(ids(project.messages)[1], "createEvent flyte/llm/production/new-model");
        assert.equal(org.messages.length, 4, "an app of org flyte does not reach the demo-org watcher");

        await rejects(collect(c.watch({ target: { case: "clusterId", value: { name: "c1" } } })), Code.NotFound, /no cluster "c1" here/);
        await rejects(collect(c.watch({ target: { case: "org", value: "" } })), Code.InvalidArgument, /org/);
        await rejects(collect(c.watch({ target: { case: "appId", value: { project: "p", name: "n" } } })), Code.InvalidArgument, /appId\.domain/);
        await rejects(collect(c.watch({ target: { case: "project", value: { domain: "d" } } })), Code.InvalidArgument, /project\.name/);
      } finally {
        // Server first: on Deno, aborting several in-process fetch streams at once can leave a read pending.
        await s.stop();
        await Promise.all([project.close(), wholeProject.close(), org.close(), all.close()]);
      }
    });
  });
}

describe("AppService over gRPC (HTTP/2 cleartext, --grpc-port)", () => {
  test("List, Get and Watch over gRPC at both path prefixes, the same Apps as Connect, `unavailable` on shutdown", async () => {
    const s = await startTestService({ grpcPort: 0 });
    let stopped = false;
    try {
      assert.match(s.grpcUrl ?? "", /^http:\/\/127\.0\.0\.1:\d+$/);
      const viaConnect = json(ListResponseSchema, await appClient(s, "Connect binary").list({}));
      for (const prefix of ["/internal", ""]) {
        const c = createClient(AppService, createGrpcTransport({ baseUrl: `${s.grpcUrl}${prefix}` })) as unknown as AppClient;
        assert.deepEqual(json(ListResponseSchema, await c.list({})), viaConnect, `gRPC List at '${prefix}/'`);
        await rejects(c.get({}), Code.InvalidArgument, /app_id is required/);
      }
      const c = createClient(AppService, createGrpcTransport({ baseUrl: `${s.grpcUrl}/internal` })) as unknown as AppClient;
      const w = new ConnectWatch(c, { target: { case: "project", value: { name: "grpc", domain: "dev" } } });
      s.sb.create("services", ksvc("grpc", "dev", "h2"));
      await w.until(1, "a live create over gRPC");
      assert.deepEqual(ids(w.messages), ["createEvent flyte/grpc/dev/h2"]);
      await s.stop();
      stopped = true;
      await w.done;
      assert.equal(w.error?.code, Code.Unavailable, String(w.error));
    } finally {
      if (!stopped) await s.stop();
    }
  });
});

describe("AppService: raw HTTP, cross-checks and limits", () => {
  test("Connect streaming envelopes: data frames (flag 0) of WatchResponse JSON, then an end-stream frame (flag 2) with the error", async () => {
    const s = await startTestService();
    try {
      const body = envelope(0, JSON.stringify({ appId: { project: "flytesnacks", domain: "development", name: "streamlit-hello" } }));
      const abort = new AbortController();
      const res = await fetch(`${s.url}/internal/flyteidl2.app.AppService/Watch`, {
        method: "POST",
        headers: { "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body,
        signal: abort.signal,
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/connect+json");
      const reader = res.body!.getReader();
      const frames = new EnvelopeReader(reader);
      const first = await frames.next();
      assert.equal(first.flags, 0);
      const msg = JSON.parse(first.text);
      assert.deepEqual(Object.keys(msg), ["createEvent"]);
      assert.equal(msg.createEvent.app.metadata.id.name, "streamlit-hello");
      // Shutdown ends the stream with an end-stream frame carrying `unavailable`.
      const stopping = s.stop();
      const last = await frames.next();
      assert.equal(last.flags, 2, "end-stream flag");
      assert.equal(JSON.parse(last.text).error.code, "unavailable");
      await stopping;
      abort.abort();

      const s2 = await startTestService();
      try {
        const bad = await fetch(`${s2.url}/internal/flyteidl2.app.AppService/Watch`, {
          method: "POST",
          headers: { "content-type": "application/connect+json" },
          body: envelope(0, JSON.stringify({ clusterId: { name: "x" } })),
        });
        const end = await new EnvelopeReader(bad.body!.getReader()).next();
        assert.equal(end.flags, 2);
        assert.equal(JSON.parse(end.text).error.code, "not_found");

        const garbage = await fetch(`${s2.url}/internal/flyteidl2.app.AppService/Watch`, {
          method: "POST",
          headers: { "content-type": "application/connect+json" },
          body: envelope(0, "{not json"),
        });
        const endG = await new EnvelopeReader(garbage.body!.getReader()).next();
        assert.equal(JSON.parse(endG.text).error.code, "invalid_argument");

        const unknownField = await fetch(`${s2.url}/internal/flyteidl2.app.AppService/Watch`, {
          method: "POST",
          headers: { "content-type": "application/connect+json" },
          body: envelope(0, JSON.stringify({ appId: { project: "flytesnacks", domain: "development", name: "streamlit-hello", bogus: 2 }, bogus: 1 })),
        });
        const readerU = unknownField.body!.getReader();
        const firstU = await new EnvelopeReader(readerU).next();
        assert.equal(firstU.flags, 0, `unknown fields are discarded, as connect-go's JSON codec does: ${firstU.text}`);
        assert.equal(JSON.parse(firstU.text).createEvent.app.metadata.id.name, "streamlit-hello");
        await readerU.cancel();
      } finally {
        await s2.stop();
      }
    } finally {
      await s.stop();
    }
  });

  test("unary JSON: errors as {code, message} with Connect's HTTP status; GET for the read RPCs; both path prefixes", async () => {
    const s = await startTestService();
    try {
      const post = (path: string, body: unknown) =>
        http(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const notFound = await post("/internal/flyteidl2.app.AppService/Get", { appId: { project: "p", domain: "d", name: "missing" } });
      assert.equal(notFound.status, 404);
      assert.equal(notFound.body.code, "not_found");
      // Flyte's text: its own words, then the Kubernetes NotFound it wraps
      assert.equal(notFound.body.message, 'KService missing-p-d not found: services.serving.knative.dev "missing-p-d" not found');
      const invalid = await post("/internal/flyteidl2.app.AppService/Get", {});
      assert.deepEqual([invalid.status, invalid.body], [400, { code: "invalid_argument", message: "app_id is required" }]);
      const unimpl = await post("/flyteidl2.app.AppService/Create", {});
      assert.deepEqual([unimpl.status, unimpl.body.code], [501, "unimplemented"]);
      const otherCluster = await post("/flyteidl2.app.AppService/List", { clusterId: { name: "x" } });
      assert.deepEqual([otherCluster.status, otherCluster.body.code], [404, "not_found"]);
      const ok = await post("/flyteidl2.app.AppService/List", { project: { name: "llm", domain: "production" } });
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body.apps.map((a: Json) => a.metadata.id.name), ["vllm-llama"]);
      // Flyte's data plane: the artifact filter falls through to "every app"; include_total_count is not
      // honoured (no totalCount); unknown fields are discarded
      const all = await post("/flyteidl2.app.AppService/List", {});
      const byArtifact = await post("/flyteidl2.app.AppService/List", { artifact: { project: "p", name: "model", version: "v1" }, includeTotalCount: true });
      assert.equal(byArtifact.status, 200, byArtifact.text);
      assert.equal(byArtifact.body.apps.length, 6);
      assert.deepEqual(byArtifact.body, all.body);
      assert.equal(byArtifact.body.totalCount, undefined);
      const unknown = await post("/flyteidl2.app.AppService/List", { project: { name: "llm", domain: "production", bogus: 1 }, bogus: true });
      assert.deepEqual([unknown.status, unknown.body], [200, ok.body]);
      const snake = await post("/internal/flyteidl2.app.AppService/Get", { app_id: { project: "llm", domain: "production", name: "vllm-llama" } });
      assert.equal(snake.status, 200, "snake_case field names are accepted, as protojson does");
      // proto3 JSON as protojson reads it: null is the default, a uint32 is a number or a decimal
      // string, and a oneof takes at most one member (this is the parsing production runs).
      const nulls = await post("/flyteidl2.app.AppService/List", { project: { name: "llm", domain: "production", organization: null }, request: null });
      assert.deepEqual([nulls.status, nulls.body], [200, ok.body], nulls.text);
      const limitText = await post("/flyteidl2.app.AppService/List", { request: { limit: "1" } });
      const limitNumber = await post("/flyteidl2.app.AppService/List", { request: { limit: 1 } });
      assert.equal(limitText.status, 200, limitText.text);
      assert.equal(limitNumber.body.apps.length, 1);
      assert.deepEqual(limitText.body, limitNumber.body);
      const badLimit = await post("/flyteidl2.app.AppService/List", { request: { limit: 1.5 } });
      assert.equal(badLimit.body.code, "invalid_argument", badLimit.text);
      const twoMembers = await post("/flyteidl2.app.AppService/List", { org: "x", project: { name: "llm", domain: "production" } });
      assert.equal(twoMembers.body.code, "invalid_argument", twoMembers.text);

      const message = encodeURIComponent(JSON.stringify({ project: { name: "llm", domain: "production" } }));
      const viaGet = await http(`${s.url}/internal/flyteidl2.app.AppService/List?connect=v1&encoding=json&message=${message}`);
      assert.equal(viaGet.status, 200, viaGet.text);
      assert.deepEqual(viaGet.body, ok.body);

      const noMethod = await post("/internal/flyteidl2.app.AppService/Nope", {});
      assert.equal(noMethod.status, 404);
      const wrongType = await http(`${s.url}/internal/flyteidl2.app.AppService/List`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
      assert.equal(wrongType.status, 415);
      const bigName = "x".repeat(10_000);
      const tooBig = await post("/internal/flyteidl2.app.AppService/Get", { appId: { project: "p", domain: "d", name: bigName } });
      assert.equal(tooBig.body.code, "resource_exhausted", "a request over --max-message-bytes is refused");

      const metrics = await http(`${s.url}/metrics`);
      assert.ok((metric(metrics.text, "appwatch_http_requests_total", 'route="/flyteidl2.app.AppService/Get",status="404"') ?? 0) >= 1, "requests are counted per RPC");
    } finally {
      await s.stop();
    }
  });

  test("the same cluster state gives the same App JSON over Connect (JSON and binary), WebSocket and GET /v1/apps", async () => {
    const s = await startTestService();
    let ws: WsClient | undefined;
    try {
      s.sb.updateStatus("services", "flyte", ksvcName("llm", "production", "vllm-llama"), statusWithMessage("ready", "True"));
      await waitFor(() => s.apps.metrics.events.update > 0, "the status update");
      ws = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      await ws.synced();
      const byWs = new Map(appEvents(ws.frames).map((f) => [appOf(f)!.metadata.id.name, appOf(f)]));
      const rest = (await http(`${s.url}/v1/apps`)).body.apps as Json[];
      for (const kind of ["Connect JSON", "Connect binary"]) {
        const c = appClient(s, kind);
        const listed = json(ListResponseSchema, await c.list({})).apps as Json[];
        const watched = new ConnectWatch(c, {});
        await watched.until(6, "snapshot");
        await watched.close();
        const byConnectWatch = new Map(watched.messages.map((m) => [m.createEvent.app.metadata.id.name, m.createEvent.app]));
        assert.equal(listed.length, 6);
        for (const app of listed) {
          const name = app.metadata.id.name;
          assert.deepEqual(app, rest.find((a) => a.metadata.id.name === name), `${kind} List vs GET /v1/apps: ${name}`);
          assert.deepEqual(byConnectWatch.get(name), byWs.get(name), `${kind} Watch vs WebSocket: ${name}`);
          const got = json(GetResponseSchema, await c.get({ identifier: { case: "appId", value: app.metadata.id } }));
          assert.deepEqual(got.app, app, `${kind} Get vs List: ${name}`);
        }
      }
    } finally {
      ws?.close();
      await s.stop();
    }
  });

  test("a Watch client that stops reading: the server coalesces instead of buffering, and the client converges to the latest state", async () => {
    const s = await startTestService({ watchBufferSize: 16 });
    try {
      const name = ksvcName("slow", "dev", "reader");
      s.sb.create("services", ksvc("slow", "dev", "reader"));
      await waitFor(() => s.apps.metrics.events.create >= 7, "the app exists");
      const res = await fetch(`${s.url}/internal/flyteidl2.app.AppService/Watch`, {
        method: "POST",
        headers: { "content-type": "application/connect+json" },
        body: envelope(0, JSON.stringify({ appId: { project: "slow", domain: "dev", name: "reader" } })),
      });
      const frames = new EnvelopeReader(res.body!.getReader());
      assert.equal(JSON.parse((await frames.next()).text).createEvent.app.metadata.id.name, "reader");
      // The reader now stops; 3,000 changes of ~4 KB Apps (12 MB) go by.
      const pad = "x".repeat(4000);
      const base = s.apps.metrics.events.update;
      for (let i = 1; i <= 3000; i++) {
        s.sb.updateStatus("services", "flyte", name, statusWithMessage(`step ${i} ${pad}`));
        // In steps the watch keeps up with (a burst would overflow the sandbox's watch and relist: one event).
        if (i % 100 === 0) await waitFor(() => s.apps.metrics.events.update >= base + i, () => `the watch saw change ${i}: ${JSON.stringify(s.apps.metrics)}`, 30_000);
      }
      const m = await http(`${s.url}/metrics`);
      // How many frames the sockets and the client's fetch absorb before the stream blocks depends on
      // the runtime and the load (Bun's fetch reads ahead: 886 coalesced of 3,000 in a loaded CI run,
      // where "> 1000" failed), so the rule is that coalescing happened at all, not how much.
      assert.ok((metric(m.text, "appwatch_events_coalesced_total") ?? 0) > 0, `the slow stream was coalesced: ${metric(m.text, "appwatch_events_coalesced_total")}`);
      // Reading again: the stream ends on the latest state, with far fewer than 3,000 frames.
      let last = "";
      let n = 0;
      while (!last.includes(`step 3000 `)) {
        const f = await frames.next();
        assert.equal(f.flags, 0, `a data frame: ${f.text.slice(0, 200)}`);
        last = JSON.parse(f.text).updateEvent.updatedApp.status.conditions.map((c: Json) => c.message).join(" ");
        n++;
      }
      assert.ok(n < 3000, `${n} frames, not one per change`);
      await frames.reader.cancel();
    } finally {
      await s.stop();
    }
  });

  test("auth and Origin apply to the RPCs; the per-client stream limit covers Connect streams; the gauge counts them", async () => {
    const s = await startTestService({ authTokens: ["s3cret"], allowedOrigins: ["https://ok.example"], maxConnectionsPerClient: 2 });
    const streams: ConnectWatch[] = [];
    try {
      const anon = appClient(s, "Connect JSON");
      await rejects(anon.list({}), Code.Unauthenticated, /bearer token is required/);
      await rejects(collect(appClient(s, "gRPC-Web", "/internal", { authorization: "Bearer wrong" }).watch({})), Code.Unauthenticated, /not valid/);
      const authed = appClient(s, "Connect binary", "/internal", { authorization: "Bearer s3cret" });
      assert.equal(json(ListResponseSchema, await authed.list({})).apps.length, 6);
      await rejects(appClient(s, "Connect JSON", "/internal", { authorization: "Bearer s3cret", origin: "https://evil.example" }).list({}), Code.PermissionDenied, /origin/);

      streams.push(new ConnectWatch(authed, {}));
      await streams[0]!.until(6, "snapshot");
      // The second stream is raw, so that the client can walk away from it by cancelling the body.
      const raw = await fetch(`${s.url}/internal/flyteidl2.app.AppService/Watch`, {
        method: "POST",
        headers: { "content-type": "application/connect+json", authorization: "Bearer s3cret" },
        body: envelope(0, "{}"),
      });
      const rawFrames = new EnvelopeReader(raw.body!.getReader());
      assert.equal((await rawFrames.next()).flags, 0);
      const third = new ConnectWatch(authed, {});
      await third.done;
      assert.equal(third.error?.code, Code.ResourceExhausted, String(third.error));
      const m = await http(`${s.url}/metrics`, { headers: { authorization: "Bearer s3cret" } });
      assert.equal(metric(m.text, "appwatch_connect_streams"), 2);
      await rawFrames.reader.cancel();
      await waitFor(() => s.api.metrics.connectStreams === 1, "the abandoned stream is counted down");
      const fourth = new ConnectWatch(authed, {});
      streams.push(fourth);
      await fourth.until(6, "a stream after a slot was freed");
    } finally {
      // Server first: on Deno, aborting an in-process fetch stream can leave its read pending.
      await s.stop();
      await Promise.all(streams.map((w) => w.close()));
    }
  });
});

function envelope(flags: number, text: string): Uint8Array<ArrayBuffer> {
  const data = new TextEncoder().encode(text);
  const out = new Uint8Array(5 + data.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, data.length);
  out.set(data, 5);
  return out;
}

/** Reads `[flags:1][length:4 BE][data]` envelopes off a response body. */
class EnvelopeReader {
  #buf = new Uint8Array(0);
  readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  constructor(reader: ReadableStreamDefaultReader<Uint8Array>) {
    this.reader = reader;
  }

  async next(): Promise<{ flags: number; text: string }> {
    while (true) {
      if (this.#buf.length >= 5) {
        const len = new DataView(this.#buf.buffer, this.#buf.byteOffset).getUint32(1);
        if (this.#buf.length >= 5 + len) {
          const flags = this.#buf[0]!;
          const text = new TextDecoder().decode(this.#buf.subarray(5, 5 + len));
          this.#buf = this.#buf.slice(5 + len);
          return { flags, text };
        }
      }
      const { value, done } = await this.reader.read();
      if (done) throw new Error(`stream ended with ${this.#buf.length} bytes of a partial envelope`);
      const next = new Uint8Array(this.#buf.length + value.length);
      next.set(this.#buf);
      next.set(value, this.#buf.length);
      this.#buf = next;
    }
  }
}
