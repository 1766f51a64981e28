/**
 * AppService's bad input is `invalid_argument`, never `internal`, over real HTTP: identities that
 * are not names (they would reach a Kubernetes label selector), garbage page tokens (ours after
 * the first sync, the API server's continue tokens before it), and binary bodies that do not
 * decode — with the real `@connectrpc/connect` clients (Connect JSON, Connect binary, gRPC-Web)
 * and with raw bytes, in each protocol's own error format.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { connect as h2connect } from "node:http2";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { AppService } from "../src/flyte/proto/app_service_pb.ts";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { createApp } from "../src/service/app.ts";
import { serveFetch } from "../src/serve.ts";
import { startSandboxCluster } from "../src/sandbox/mod.ts";
import { http, type Json, startTestService } from "./helpers/service.ts";

interface AppClient {
  list(req: Json): Promise<unknown>;
  get(req: Json): Promise<unknown>;
  watch(req: Json): AsyncIterable<unknown>;
}

const transports: Record<string, (baseUrl: string) => Transport> = {
  "Connect JSON": (baseUrl) => createConnectTransport({ baseUrl }),
  "Connect binary": (baseUrl) => createConnectTransport({ baseUrl, useBinaryFormat: true }),
  "gRPC-Web": (baseUrl) => createGrpcWebTransport({ baseUrl }),
};

async function rejects(p: Promise<unknown>, code: Code, message: RegExp, what: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(Code[e.code], Code[code], `${what}: ${e.message}`);
    assert.match(e.rawMessage, message, what);
    return;
  }
  assert.fail(`${what}: expected ${Code[code]}`);
}

async function drain(it: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of it) { /* the error is what counts */ }
}

/** Connect/gRPC-Web envelope: flags, big-endian length, data. */
function envelope(data: Uint8Array, flags = 0): Uint8Array {
  const out = new Uint8Array(5 + data.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, data.byteLength);
  out.set(data, 5);
  return out;
}

/** Bytes that are no protobuf message: an illegal tag (field 0) and a truncated varint. */
const GARBAGE = new Uint8Array([0x00, 0xff, 0xff, 0xff]);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Uint8Array;
}

const flat = (h: Record<string, unknown>): Record<string, string> => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));

/** One raw HTTP/2 POST (the gRPC listener speaks only HTTP/2). */
function h2Post(url: string, path: string, headers: Record<string, string>, body: Uint8Array): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = h2connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    const out: RawAnswer = { status: 0, headers: {}, trailers: {}, body: new Uint8Array(0) };
    const chunks: Uint8Array[] = [];
    req.on("response", (h) => {
      out.status = Number(h[":status"]);
      out.headers = flat(h);
    });
    req.on("trailers", (t) => (out.trailers = flat(t)));
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("end", () => {
      session.close();
      out.body = new Uint8Array(Buffer.concat(chunks));
      resolve(out);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function fetchPost(url: string, headers: Record<string, string>, body: Uint8Array): Promise<RawAnswer> {
  const res = await fetch(url, { method: "POST", headers, body: body as BodyInit });
  return { status: res.status, headers: Object.fromEntries(res.headers), trailers: {}, body: new Uint8Array(await res.arrayBuffer()) };
}

/** The error code of an answer in its protocol's own format ("ok" when none). */
function codeOf(contentType: string, res: RawAnswer): string {
  const grpcName = (n: string | undefined) => (n === undefined ? `no status (HTTP ${res.status})` : n === "0" ? "ok" : Code[Number(n)]!.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase()));
  if (contentType.startsWith("application/grpc-web")) {
    return grpcName(res.headers["grpc-status"] ?? new TextDecoder().decode(res.body).match(/grpc-status:\s*(\d+)/)?.[1]);
  }
  if (contentType.startsWith("application/grpc")) return grpcName(res.trailers["grpc-status"] ?? res.headers["grpc-status"]);
  if (contentType === "application/connect+proto") {
    // The end-stream frame (flag 2) is the last envelope of the body.
    for (let at = 0; at + 5 <= res.body.byteLength;) {
      const length = new DataView(res.body.buffer, res.body.byteOffset + at + 1, 4).getUint32(0);
      if (res.body[at] === 2) return (JSON.parse(new TextDecoder().decode(res.body.subarray(at + 5, at + 5 + length))) as { error?: { code: string } }).error?.code ?? "ok";
      at += 5 + length;
    }
    return `no end-stream frame (HTTP ${res.status})`;
  }
  if (res.status === 200) return "ok";
  return (JSON.parse(new TextDecoder().decode(res.body)) as { code: string }).code;
}

describe("AppService bad input is invalid_argument", () => {
  for (const kind of Object.keys(transports)) {
    test(`${kind}: identities that are not names, garbage tokens`, async () => {
      const s = await startTestService();
      try {
        const c = createClient(AppService, transports[kind]!(`${s.url}/internal`)) as unknown as AppClient;
        const rows: [string, () => Promise<unknown>, RegExp][] = [
          ["List project.name", () => c.list({ filterBy: { case: "project", value: { name: "a b" } } }), /^ListRequest\.project\.name: must be letters/],
          ["List project.domain", () => c.list({ filterBy: { case: "project", value: { name: "llm", domain: "pro,duction" } } }), /^ListRequest\.project\.domain: must be letters/],
          ["List project.organization", () => c.list({ filterBy: { case: "project", value: { name: "llm", organization: "x=y" } } }), /^ListRequest\.project\.organization: must be letters/],
          ["List token", () => c.list({ request: { token: "garbage!" } }), /page token is not valid/],
          ["List base64 token", () => c.list({ request: { token: "Z2FyYmFnZQ" } }), /page token is not valid/],
          ["Get appId.name", () => c.get({ identifier: { case: "appId", value: { project: "llm", domain: "production", name: "a b" } } }), /^appId\.name: must be letters/],
          ["Get appId.org", () => c.get({ identifier: { case: "appId", value: { org: "!", project: "llm", domain: "production", name: "vllm-llama" } } }), /^appId\.org: must be letters/],
          ["Watch appId.project", () => drain(c.watch({ target: { case: "appId", value: { project: "a b", domain: "d", name: "n" } } })), /^appId\.project: must be letters/],
          ["Watch project.name", () => drain(c.watch({ target: { case: "project", value: { name: "a\nb" } } })), /^project\.name: must be letters/],
          ["Watch org", () => drain(c.watch({ target: { case: "org", value: "a b" } })), /^org: must be letters/],
        ];
        for (const [what, call, message] of rows) await rejects(call(), Code.InvalidArgument, message, what);
        // Good requests still work.
        assert.equal(((await c.list({ filterBy: { case: "project", value: { name: "llm", domain: "production" } } })) as { apps: unknown[] }).apps.length, 1);
      } finally {
        await s.stop();
      }
    });
  }

  test("binary bodies that do not decode: 400 / end-stream / grpc-status 3 invalid_argument, naming the message type", async () => {
    const s = await startTestService();
    try {
      const post = (path: string, type: string, body: Uint8Array, headers: Record<string, string> = {}) =>
        fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": type, ...headers }, body: body as BodyInit });
      for (const path of ["/internal/flyteidl2.app.AppService/List", "/flyteidl2.app.AppService/Get"]) {
        const res = await post(path, "application/proto", GARBAGE);
        assert.equal(res.status, 400, path);
        const body = await res.json();
        assert.equal(body.code, "invalid_argument", path);
        assert.match(body.message, /^cannot decode message flyteidl2\.app\.(List|Get)Request from binary: /, path);
      }
      // A Connect stream: the error travels in the end-stream frame (flag 2).
      for (const [what, bytes] of [["garbage", envelope(GARBAGE)], ["a truncated envelope", envelope(new Uint8Array(8)).subarray(0, 9)]] as const) {
        const res = await post("/internal/flyteidl2.app.AppService/Watch", "application/connect+proto", bytes, { "connect-protocol-version": "1" });
        assert.equal(res.status, 200, what);
        const frame = new Uint8Array(await res.arrayBuffer());
        assert.equal(frame[0], 2, `${what}: end-stream frame`);
        const end = JSON.parse(new TextDecoder().decode(frame.subarray(5)));
        assert.equal(end.error.code, "invalid_argument", `${what}: ${JSON.stringify(end)}`);
      }
      // gRPC-Web: grpc-status 3 (INVALID_ARGUMENT), in the headers (trailers-only) or the trailer frame.
      const web = await post("/internal/flyteidl2.app.AppService/List", "application/grpc-web+proto", envelope(GARBAGE), { "x-grpc-web": "1" });
      const text = new TextDecoder().decode(new Uint8Array(await web.arrayBuffer()));
      const status = web.headers.get("grpc-status") ?? text.match(/grpc-status:\s*(\d+)/)?.[1];
      assert.equal(status, "3", `gRPC-Web: ${web.status} ${JSON.stringify(text)}`);
      assert.match(decodeURIComponent(web.headers.get("grpc-message") ?? text), /cannot decode message flyteidl2\.app\.ListRequest from binary/);
      // Connect GET with a binary message in the query: the same answer.
      const viaGet = await http(`${s.url}/internal/flyteidl2.app.AppService/List?connect=v1&encoding=proto&base64=1&message=${btoa(String.fromCharCode(...GARBAGE))}`);
      assert.equal(viaGet.status, 400, viaGet.text);
      assert.equal(viaGet.body.code, "invalid_argument");
      assert.match(viaGet.body.message, /^cannot decode message flyteidl2\.app\.ListRequest from binary: /);
      const goodGet = await http(`${s.url}/internal/flyteidl2.app.AppService/List?connect=v1&encoding=proto&base64=1&message=`);
      assert.equal(goodGet.status, 200, goodGet.text);
      // A well-formed binary message is served as before.
      const ok = await post("/internal/flyteidl2.app.AppService/List", "application/proto", new Uint8Array(0));
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      assert.equal((await http(`${s.url}/healthz`)).status, 200);
    } finally {
      await s.stop();
    }
  });

  test("the same answer on --grpc-port (gRPC, gRPC-Web, Connect over HTTP/2) and for a compressed flag with no encoding, on both ports", async () => {
    const s = await startTestService({ grpcPort: 0 });
    try {
      const LIST = "/internal/flyteidl2.app.AppService/List";
      const WATCH = "/flyteidl2.app.AppService/Watch";
      const compressed = envelope(new Uint8Array(0), 1); // flag 1, and no grpc-encoding / connect-content-encoding sent
      const rows: [string, string, string, Record<string, string>, Uint8Array][] = [
        ["gRPC garbage List", LIST, "application/grpc", { te: "trailers" }, envelope(GARBAGE)],
        ["gRPC garbage Watch", WATCH, "application/grpc+proto", { te: "trailers" }, envelope(GARBAGE)],
        ["gRPC compressed flag, no encoding", LIST, "application/grpc", { te: "trailers" }, compressed],
        ["gRPC compressed flag, identity", WATCH, "application/grpc", { te: "trailers", "grpc-encoding": "identity" }, compressed],
        ["gRPC-Web garbage", LIST, "application/grpc-web+proto", {}, envelope(GARBAGE)],
        ["gRPC-Web compressed flag, no encoding", LIST, "application/grpc-web+proto", {}, compressed],
        ["Connect stream garbage", WATCH, "application/connect+proto", { "connect-protocol-version": "1" }, envelope(GARBAGE)],
        ["Connect stream compressed flag, no encoding", WATCH, "application/connect+proto", { "connect-protocol-version": "1" }, compressed],
        ["Connect unary garbage", LIST, "application/proto", { "connect-protocol-version": "1" }, GARBAGE],
      ];
      const answers: Record<string, string> = {};
      const want: Record<string, string> = {};
      for (const [what, path, type, headers, body] of rows) {
        const ports = type === "application/grpc" || type === "application/grpc+proto" ? ["grpc"] : ["grpc", "main"];
        for (const port of ports) {
          const res = port === "grpc"
            ? await h2Post(s.grpcUrl!, path, { "content-type": type, ...headers }, body)
            : await fetchPost(`${s.url}${path}`, { "content-type": type, ...headers }, body);
          answers[`${port}: ${what}`] = codeOf(type, res);
          want[`${port}: ${what}`] = "invalid_argument";
        }
      }
      assert.deepEqual(answers, want);
      // Good binary requests are still served on the gRPC port.
      assert.equal(codeOf("application/grpc", await h2Post(s.grpcUrl!, LIST, { "content-type": "application/grpc", te: "trailers" }, envelope(new Uint8Array(0)))), "ok");
    } finally {
      await s.stop();
    }
  });

  test("before the first sync (List from the API server): a garbage continue token and a bad name are invalid_argument", async () => {
    const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
    // Never started: every List goes to the API server, as before the first sync.
    const apps = new AppK8sClient({ client: cluster.client, namespace: "flyte" });
    const { app } = createApp({ client: apps });
    const server = await serveFetch(app.fetch, { port: 0, hostname: "127.0.0.1" });
    try {
      const c = createClient(AppService, createConnectTransport({ baseUrl: `${server.url}/internal` })) as unknown as AppClient;
      const all = (await c.list({})) as { apps: unknown[] };
      assert.equal(all.apps.length, 6, "served from the API server");
      // org: filtered after the API server's page (the org is an annotation, not a label).
      const demoOrg = (await c.list({ filterBy: { case: "org", value: "demo-org" } })) as { apps: { metadata?: { id?: { org?: string } } }[] };
      assert.ok(demoOrg.apps.length > 0 && demoOrg.apps.length < 6 && demoOrg.apps.every((a) => a.metadata?.id?.org === "demo-org"), `demo-org: ${demoOrg.apps.length}`);
      await rejects(c.list({ request: { token: "garbage" } }), Code.InvalidArgument, /^failed to list KServices for \/: Kubernetes API 4\d\d/, "continue token");
      await rejects(c.list({ filterBy: { case: "project", value: { name: "a b" } } }), Code.InvalidArgument, /project\.name/, "name");
      const rest = await http(`${server.url}/v1/apps?token=garbage`);
      assert.equal(rest.status, 400, rest.text);
      assert.equal(rest.body.code, "invalid_argument");
    } finally {
      await server.close();
      await cluster.close();
    }
  });
});
