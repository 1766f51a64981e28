/**
 * Everything a client can get wrong, and that the service survives it:
 * invalid queries (400 naming the key), a watch without upgrade or SSE
 * (426), bad WebSocket messages (1008), oversize ones (1009), missing or
 * wrong bearer tokens (401), a foreign Origin (403), too many streams from
 * one address (429). After each group the service still serves.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect as h2connect } from "node:http2";
import { rawConnect, RawWebSocket, refused, upgraded } from "./helpers/raw-ws.ts";
import { appEvents, http, type Json, metric, SseClient, startTestService, type TestService, waitFor, within, WsClient } from "./helpers/service.ts";

/** The service still answers: /healthz 200, and a new WebSocket gets its snapshot. */
async function stillServes(s: TestService, query = ""): Promise<void> {
  const health = await http(`${s.url}/healthz`);
  assert.equal(health.status, 200);
  const c = await WsClient.connect(`${s.wsUrl}/v1/watch${query}`);
  try {
    await c.synced();
    assert.equal(c.frames[0].start.mode, "snapshot");
    assert.equal(appEvents(c.frames).length, 6);
  } finally {
    c.close();
    await within(c.closed, "the check's socket to close");
  }
}

/** Opens a WebSocket that must be refused; resolves when it failed to open. */
async function refusedWs(url: string): Promise<void> {
  await assert.rejects(WsClient.connect(url), /WebSocket/);
}

/** One raw HTTP/2 POST (gRPC): the grpc-status from the trailers (or the headers, for a trailers-only answer). */
function rawH2Post(url: string, path: string, headers: Record<string, string>, body: Uint8Array): Promise<{ grpcStatus: string }> {
  return new Promise((resolve, reject) => {
    const session = h2connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    let status: unknown;
    req.on("response", (h) => (status = h["grpc-status"]));
    req.on("trailers", (t) => (status = t["grpc-status"] ?? status));
    req.on("data", () => {});
    req.on("end", () => {
      session.close();
      resolve({ grpcStatus: String(status) });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("bad input", () => {
  test("invalid queries answer 400 invalid_argument with a message naming the key", async () => {
    const s = await startTestService();
    try {
      const rows: { path: string; key: string; message?: RegExp }[] = [
        { path: "/v1/watch?bogus=1", key: "bogus", message: /bogus: is not a known parameter/ },
        { path: "/v1/watch?app=x", key: "app", message: /app needs project and domain/ },
        { path: "/v1/watch?project=p", key: "project", message: /project and domain go together/ },
        { path: "/v1/watch?domain=d", key: "domain", message: /project and domain go together/ },
        { path: "/v1/watch?project=p&domain=d&project=q", key: "project", message: /project: is repeated/ },
        { path: "/v1/watch?snapshot=maybe", key: "snapshot", message: /snapshot: must be true or false/ },
        { path: "/v1/watch?snapshot=", key: "snapshot" },
        { path: "/v1/watch?project=-bad-&domain=d", key: "project" },
        { path: "/v1/watch?org=", key: "org", message: /org: must not be empty/ },
        { path: "/v1/watch?resume=", key: "resume", message: /resume: must not be empty/ },
        { path: "/v1/apps?limit=-1", key: "limit", message: /limit: must be a non-negative integer/ },
        { path: "/v1/apps?limit=abc", key: "limit", message: /limit: must be a non-negative integer/ },
        { path: "/v1/apps?limit=100000", key: "limit", message: /limit: must be at most 10000/ },
        { path: "/v1/apps?limit=1&limit=2", key: "limit", message: /limit: is repeated/ },
        { path: "/v1/apps?resume=x", key: "resume", message: /resume: is not a known parameter/ },
        { path: "/v1/apps/p/d/n?bogus=1", key: "bogus", message: /bogus: is not a known parameter/ },
        { path: "/v1/apps/p/d/n?org=", key: "org" },
        // Any character is a name now (F14: identities are the cluster's), but not over 1,024 of them.
        { path: `/v1/apps/p/d/${"n".repeat(1025)}`, key: "name", message: /name: must be at most 1024 characters/ },
      ];
      for (const row of rows) {
        const res = await http(`${s.url}${row.path}`, { headers: { accept: "text/event-stream" } });
        assert.equal(res.status, 400, `${row.path}: ${res.text}`);
        assert.equal(res.body?.code, "invalid_argument", row.path);
        assert.ok(res.body.message.includes(row.key), `${row.path}: message ${JSON.stringify(res.body.message)} names ${row.key}`);
        if (row.message) assert.match(res.body.message, row.message, row.path);
        assert.ok(Array.isArray(res.body.issues) && res.body.issues.length > 0, `${row.path}: issues listed`);
      }
      // Over a WebSocket handshake the same query is refused before any upgrade.
      const raw = refused(await rawConnect(`${s.url}/v1/watch?bogus=1`));
      assert.equal(raw.status, 400);
      // With the JSON body naming the problem on every runtime (Node: written by adapters/node.ts).
      assert.equal(JSON.parse(raw.body).code, "invalid_argument");
      assert.match(JSON.parse(raw.body).message, /bogus/);
      await refusedWs(`${s.wsUrl}/v1/watch?project=p`);
      const m = (await http(`${s.url}/metrics`)).text;
      assert.match(m, /appwatch_connections_rejected_total\{reason="bad-query"\} [1-9]/);
      await stillServes(s);
    } finally {
      await s.stop();
    }
  });

  test("GET /v1/watch without a WebSocket upgrade or Accept: text/event-stream answers 426", async () => {
    const s = await startTestService();
    try {
      for (const accept of [undefined, "application/json", "*/*"]) {
        const res = await http(`${s.url}/v1/watch`, accept ? { headers: { accept } } : {});
        assert.equal(res.status, 426, `accept ${accept}`);
        assert.equal(res.body.code, "failed_precondition");
        assert.match(res.body.message, /WebSocket upgrade or Accept: text\/event-stream/);
      }
      // None of them took a per-client slot.
      await waitFor(() => s.api.metrics.wsConnections === 0, "no open streams");
      await stillServes(s);
    } finally {
      await s.stop();
    }
  });

  test("bad WebSocket messages close with 1008 and a reason; oversize ones with 1009; a ping gets a pong", async () => {
    const s = await startTestService({ maxMessageBytes: 4096 });
    try {
      const rows: { what: string; send: string | Uint8Array; code: number; reason: RegExp }[] = [
        { what: "not JSON", send: "hello", code: 1008, reason: /not JSON/ },
        { what: "JSON, unknown message", send: JSON.stringify({ subscribe: { project: "p" } }), code: 1008, reason: /unknown message/ },
        { what: "ping with an extra key", send: JSON.stringify({ ping: {}, extra: 1 }), code: 1008, reason: /unknown message/ },
        { what: "ping with a non-string id", send: JSON.stringify({ ping: { id: 5 } }), code: 1008, reason: /unknown message/ },
        { what: "JSON array", send: "[]", code: 1008, reason: /unknown message/ },
        { what: "binary", send: new Uint8Array([1, 2, 3]), code: 1008, reason: /binary/ },
        { what: "text over maxMessageBytes", send: JSON.stringify({ ping: { id: "x".repeat(5000) } }), code: 1009, reason: /over the 4096-byte limit/ },
        // Past the runtime's own payload cap (4 × maxMessageBytes, at least 64 KiB) the runtime closes, maybe without a reason.
        { what: "text far over the limit", send: "y".repeat(200_000), code: 1009, reason: /^/ },
        { what: "binary over maxMessageBytes", send: new Uint8Array(5000), code: 1009, reason: /over the 4096-byte limit/ },
      ];
      for (const row of rows) {
        const c = await WsClient.connect(`${s.wsUrl}/v1/watch`);
        await c.synced();
        c.send(row.send);
        const closed = await within(c.closed, `the close after ${row.what}`);
        assert.equal(closed.code, row.code, `${row.what}: ${JSON.stringify(closed)}`);
        assert.match(closed.reason, row.reason, `${row.what}: reason ${JSON.stringify(closed.reason)}`);
      }
      // A well-formed ping is answered (with and without an id), and the stream goes on.
      const c = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      try {
        await c.synced();
        c.send(JSON.stringify({ ping: { id: "p-1" } }));
        c.send(JSON.stringify({ ping: {} }));
        await c.until((f) => f.filter((x: Json) => x.pong).length === 2, "two pongs");
        assert.deepEqual(c.frames.filter((x: Json) => x.pong), [{ pong: { id: "p-1" } }, { pong: {} }]);
        assert.equal(c.closeInfo, undefined);
      } finally {
        c.close();
      }
      const m = (await http(`${s.url}/metrics`)).text;
      assert.match(m, /appwatch_ws_closes_total\{code="1008"\} 6/);
      await waitFor(() => s.api.metrics.wsConnections === 0, "every test socket to be closed");
      await stillServes(s);
    } finally {
      await s.stop();
    }
  });

  test("bearer auth: missing or wrong token 401 (with WWW-Authenticate); the right one works in the header, or as access_token on /v1/watch", async () => {
    const s = await startTestService({ authTokens: ["s3cret-token", "second-token"] });
    try {
      const attempts: Record<string, string>[] = [{}, { authorization: "Bearer wrong" }, { authorization: "Basic czNjcmV0LXRva2Vu" }, { authorization: "Bearer" }];
      for (const headers of attempts) {
        const res = await http(`${s.url}/v1/apps`, { headers });
        assert.equal(res.status, 401, JSON.stringify(headers));
        assert.equal(res.body.code, "unauthenticated");
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
      }
      assert.equal((await http(`${s.url}/v1/apps`, { headers: { authorization: "Bearer s3cret-token" } })).status, 200);
      assert.equal((await http(`${s.url}/v1/apps`, { headers: { authorization: "bearer second-token" } })).status, 200);
      assert.equal((await http(`${s.url}/v1/apps/llm/development/gradio-chat`)).status, 401);
      // Query tokens are for streams only (browsers cannot set headers there).
      assert.equal((await http(`${s.url}/v1/apps?access_token=s3cret-token`)).status, 401);
      // Health and metrics are not behind auth.
      assert.equal((await http(`${s.url}/healthz`)).status, 200);
      assert.equal((await http(`${s.url}/metrics`)).status, 200);

      assert.equal(refused(await rawConnect(`${s.url}/v1/watch`)).status, 401);
      assert.equal(refused(await rawConnect(`${s.url}/v1/watch?access_token=wrong`)).status, 401);
      await refusedWs(`${s.wsUrl}/v1/watch`);
      const header = upgraded(await rawConnect(`${s.url}/v1/watch`, { headers: { Authorization: "Bearer s3cret-token" } }));
      header.destroy();
      const sseNoAuth = await http(`${s.url}/v1/watch`, { headers: { accept: "text/event-stream" } });
      assert.equal(sseNoAuth.status, 401);
      const sse = await SseClient.connect(`${s.url}/v1/watch`, { authorization: "Bearer s3cret-token" });
      await sse.synced();
      sse.close();
      const sseQuery = await SseClient.connect(`${s.url}/v1/watch?access_token=second-token`);
      await sseQuery.synced();
      sseQuery.close();
      await stillServes(s, "?access_token=s3cret-token");
      const m = (await http(`${s.url}/metrics`)).text;
      assert.match(m, /appwatch_connections_rejected_total\{reason="auth"\} [1-9]/);
    } finally {
      await s.stop();
    }
  });

  test("Origin allow-list: another Origin 403; the allowed one and requests without Origin work", async () => {
    const s = await startTestService({ allowedOrigins: ["https://ok.example"] });
    try {
      const bad = await http(`${s.url}/v1/apps`, { headers: { origin: "https://evil.example" } });
      assert.equal(bad.status, 403);
      assert.equal(bad.body.code, "permission_denied");
      assert.match(bad.body.message, /evil\.example/);
      assert.equal((await http(`${s.url}/v1/apps`, { headers: { origin: "https://ok.example" } })).status, 200);
      assert.equal((await http(`${s.url}/v1/apps`)).status, 200);
      const sse = await http(`${s.url}/v1/watch`, { headers: { origin: "https://evil.example", accept: "text/event-stream" } });
      assert.equal(sse.status, 403);

      const ws = refused(await rawConnect(`${s.url}/v1/watch`, { headers: { Origin: "https://evil.example" } }));
      assert.equal(ws.status, 403);
      const allowed = upgraded(await rawConnect(`${s.url}/v1/watch`, { headers: { Origin: "https://ok.example" } }));
      allowed.destroy();
      await stillServes(s); // no Origin header
    } finally {
      await s.stop();
    }
  });

  test("Origin, one rule on every route: an empty Origin header is refused like a foreign one (REST, SSE, WebSocket, Connect, gRPC-Web, gRPC); without an allow-list it passes", async () => {
    // A present Origin header is checked against the allow-list whatever its value (src/service/access.ts).
    const rpc = (base: string, contentType: string, body: Uint8Array<ArrayBuffer> | string, origin: string) =>
      fetch(`${base}/flyteidl2.app.AppService/List`, { method: "POST", headers: { origin, "content-type": contentType }, body });
    const grpcWebFrame = new Uint8Array([0, 0, 0, 0, 0]); // an empty ListRequest in one gRPC-Web frame
    const sseStatus = async (url: string, origin: string) => {
      const res = await fetch(url, { headers: { origin, accept: "text/event-stream" } });
      await res.body?.cancel(); // an admitted stream never ends by itself
      return res.status;
    };
    const answers = async (s: TestService, origin: string) => {
      const ws = await rawConnect(`${s.url}/v1/watch`, { headers: { Origin: origin } });
      if (ws instanceof RawWebSocket) ws.destroy();
      const grpcWeb = await rpc(`${s.url}/internal`, "application/grpc-web+proto", grpcWebFrame, origin);
      // gRPC-Web's status: in the headers (trailers-only) or in the body's trailer frame.
      const grpcWebBody = new TextDecoder().decode(await grpcWeb.arrayBuffer());
      const grpc = await rawH2Post(s.grpcUrl!, "/flyteidl2.app.AppService/List", { "content-type": "application/grpc", te: "trailers", origin }, grpcWebFrame);
      const connect = await rpc(`${s.url}/internal`, "application/json", "{}", origin);
      return {
        rest: (await http(`${s.url}/v1/apps`, { headers: { origin } })).status,
        sse: await sseStatus(`${s.url}/v1/watch`, origin),
        ws: ws instanceof RawWebSocket ? 101 : ws.status,
        connect: `${connect.status} ${((await connect.json()) as { code?: string }).code ?? "ok"}`,
        grpcWeb: grpcWeb.headers.get("grpc-status") ?? /grpc-status:\s*(\d+)/i.exec(grpcWebBody)?.[1] ?? "no grpc-status",
        grpc: grpc.grpcStatus,
      };
    };
    const guarded = await startTestService({ allowedOrigins: ["https://ok.example"], grpcPort: 0 });
    try {
      const refusedAll = { rest: 403, sse: 403, ws: 403, connect: "403 permission_denied", grpcWeb: "7", grpc: "7" };
      assert.deepEqual(await answers(guarded, ""), refusedAll, "empty Origin with an allow-list");
      assert.deepEqual(await answers(guarded, "null"), refusedAll, "Origin: null with an allow-list");
      assert.deepEqual(await answers(guarded, "https://ok.example"), { rest: 200, sse: 200, ws: 101, connect: "200 ok", grpcWeb: "0", grpc: "0" }, "the allowed Origin");
      assert.equal(metric((await http(`${guarded.url}/metrics`)).text, "appwatch_connections_rejected_total", 'reason="origin"'), 12, "each refusal counted once");
    } finally {
      await guarded.stop();
    }
    const open = await startTestService({ grpcPort: 0 });
    try {
      assert.deepEqual(await answers(open, ""), { rest: 200, sse: 200, ws: 101, connect: "200 ok", grpcWeb: "0", grpc: "0" }, "empty Origin without an allow-list");
    } finally {
      await open.stop();
    }
  });

  test("per-client limit: the stream over maxConnectionsPerClient gets 429; closing one frees its slot", async () => {
    const s = await startTestService({ maxConnectionsPerClient: 2 });
    const open: { close(): void }[] = [];
    try {
      const a = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      const b = await SseClient.connect(`${s.url}/v1/watch`);
      open.push(a, b);
      await a.synced();
      await b.synced();
      const over = refused(await rawConnect(`${s.url}/v1/watch`));
      assert.equal(over.status, 429);
      assert.equal(JSON.parse(over.body).code, "resource_exhausted");
      const overSse = await http(`${s.url}/v1/watch`, { headers: { accept: "text/event-stream" } });
      assert.equal(overSse.status, 429);
      await refusedWs(`${s.wsUrl}/v1/watch`);
      // Plain requests are not streams: not limited.
      assert.equal((await http(`${s.url}/v1/apps`)).status, 200);

      a.close();
      await a.closed;
      await waitFor(() => s.api.metrics.wsConnections === 0, "the WebSocket slot to be released");
      const c = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      open.push(c);
      await c.synced();
      b.close();
      await waitFor(() => s.api.metrics.sseConnections === 0, "the SSE slot to be released", 10_000);
      c.close();
      await c.closed;
      await waitFor(() => s.api.metrics.wsConnections === 0, "the last slot to be released");
      // Refused upgrades did not leak slots: two streams fit again.
      const d = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      open.push(d);
      await d.synced();
      await stillServes(s);
      const m = (await http(`${s.url}/metrics`)).text;
      assert.match(m, /appwatch_connections_rejected_total\{reason="per-client-limit"\} [1-9]/);
    } finally {
      for (const c of open) c.close();
      await s.stop();
    }
  });
});
