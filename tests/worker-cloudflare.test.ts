/**
 * The Cloudflare entry on workerd (miniflare from npm): the sandbox API server over plain HTTP on
 * loopback in this process, the Worker bundle (`scripts/build-worker.mjs`) with its Durable Object
 * bound to that URL, and a real WebSocket client through the Worker that sees the snapshot and the
 * live create / update / delete of a KService made through the sandbox's Kubernetes API. One
 * miniflare instance for the file (two Workers in it: a configured one and one without its URL).
 * Runs on Node, Deno and Bun alike (miniflare, a Node package, starts the workerd binary as a
 * child process; each runtime drives it and the sandbox from the test process).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningSandbox, seedDemo, startSandbox } from "../src/sandbox/mod.ts";
import { BOARD_JS } from "../src/service/board/client.gen.ts";
import { appEvents, eventually, http, type Json, ksvc, statusWithMessage, within, WsClient } from "./helpers/service.ts";

const TOKEN = "cf-test-kube-token";
const SERVICES = "/apis/serving.knative.dev/v1/namespaces/flyte/services";

interface Bundle {
  outfile: string;
  bytes: number;
  metafile: { inputs: Record<string, unknown> };
}

describe("Cloudflare Worker + Durable Object on workerd (miniflare)", () => {
  let sb: RunningSandbox;
  let dir: string;
  let bundle: Bundle;
  // deno-lint-ignore no-explicit-any
  let mf: any;
  let base: URL;
  const viaBinding: string[] = [];

  before(async () => {
    sb = await startSandbox({ token: TOKEN });
    seedDemo(sb.sandbox, { count: 3 });
    dir = mkdtempSync(join(tmpdir(), "appwatch-cf-"));
    // @ts-ignore: a plain .mjs build script without type declarations
    const { buildWorker } = await import("../scripts/build-worker.mjs");
    bundle = await buildWorker({ outfile: join(dir, "worker.js") }) as Bundle;
    const { Miniflare } = await import("miniflare");
    const modules = [{ type: "ESModule", path: bundle.outfile, contents: readFileSync(bundle.outfile, "utf8") }];
    const common = { modulesRoot: dir, modules, compatibilityDate: "2026-01-01", compatibilityFlags: ["enable_request_signal"], durableObjects: { APPWATCH: "AppwatchObject" } };
    mf = new Miniflare({
      host: "127.0.0.1",
      port: 0,
      workers: [
        { name: "appwatch", ...common, bindings: { APPWATCH_KUBE_API_URL: sb.url, APPWATCH_KUBE_TOKEN: TOKEN, APPWATCH_LOG_LEVEL: "warn", APPWATCH_BASE_DOMAIN: "apps.example.com" } },
        { name: "unconfigured", ...common, bindings: { APPWATCH_LOG_LEVEL: "warn" } },
        {
          // APPWATCH_KUBE_MTLS stands for an mTLS certificate binding (same shape: an object with fetch).
          name: "mtls",
          ...common,
          bindings: { APPWATCH_KUBE_API_URL: "https://k8s.invalid", APPWATCH_KUBE_TOKEN: TOKEN, APPWATCH_LOG_LEVEL: "error" },
          serviceBindings: {
            APPWATCH_KUBE_MTLS: async (req: Request) => {
              const url = new URL(req.url);
              viaBinding.push(url.pathname);
              return await fetch(sb.url + url.pathname + url.search, { method: req.method, headers: req.headers, body: req.body, duplex: "half" } as RequestInit);
            },
          },
        },
      ],
    });
    base = await mf.ready;
  });

  after(async () => {
    await mf?.dispose();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the bundle holds no node: built-in, Node server, kubeconfig reading or sandbox", () => {
    const inputs = Object.keys(bundle.metafile.inputs);
    assert.ok(inputs.includes("src/worker/cloudflare.ts"), "the entry is in the bundle");
    for (const path of inputs) {
      assert.doesNotMatch(path, /^node:|@hono\/node-server|node_modules\/(ws|undici)\/|connect-node|^src\/sandbox\/|^src\/kube\/(config|kubeconfig|credentials|exec|transport)\.ts$/, path);
    }
    assert.doesNotMatch(readFileSync(bundle.outfile, "utf8"), /from\s*["']node:|import\(\s*["']node:/);
  });

  test("a WebSocket through the Worker: snapshot, then live create, update and delete made through the sandbox API", async () => {
    // The Durable Object starts the watch on its first request; streams are admitted once it synced.
    await eventually(async () => (await http(new URL("/readyz", base).href)).status === 200, "the Durable Object's watch to sync", 30_000);
    const ws = await WsClient.connect(new URL("/v1/watch", base).href.replace(/^http/, "ws"));
    try {
      await ws.synced(15_000);
      assert.equal(ws.frames[0].start?.mode, "snapshot");
      assert.equal(ws.frames[0].start.apps, 3);
      assert.equal(appEvents(ws.frames).filter((f: Json) => f.createEvent).length, 3);

      const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
      const obj = ksvc("edge", "development", "cf-app");
      const name = obj.metadata.name!;
      const created = await http(sb.url + SERVICES, { method: "POST", headers: auth, body: JSON.stringify(obj) });
      assert.equal(created.status, 201, created.text);
      const onCreate = await ws.events(4, 15_000);
      const made = onCreate[3].createEvent.app;
      assert.equal(made.metadata.id.name, "cf-app");
      assert.equal(made.metadata.id.project, "edge");
      assert.match(made.status.ingress.publicUrl, /^https:\/\/.*\.apps\.example\.com$/);

      const current = await http(`${sb.url}${SERVICES}/${name}`, { headers: auth });
      const updated = await http(`${sb.url}${SERVICES}/${name}/status`, {
        method: "PUT",
        headers: auth,
        body: JSON.stringify({ ...current.body, status: statusWithMessage("served through workerd") }),
      });
      assert.equal(updated.status, 200, updated.text);
      const onUpdate = await ws.events(5, 15_000);
      assert.equal(onUpdate[4].updateEvent.updatedApp.metadata.id.name, "cf-app");
      assert.ok(JSON.stringify(onUpdate[4].updateEvent.updatedApp.status.conditions).includes("served through workerd"));
      assert.equal(typeof onUpdate[4].resume, "string", "live events carry resume tokens");

      const deleted = await http(`${sb.url}${SERVICES}/${name}`, { method: "DELETE", headers: auth });
      assert.equal(deleted.status, 200, deleted.text);
      const onDelete = await ws.events(6, 15_000);
      assert.equal(onDelete[5].deleteEvent.app.metadata.id.name, "cf-app");
    } finally {
      ws.close();
      await within(ws.closed, "the WebSocket to close");
    }
  });

  test("a resume token from one WebSocket gets exactly the missed change on the next, through the Worker", async () => {
    const wsUrl = new URL("/v1/watch", base).href.replace(/^http/, "ws");
    const first = await WsClient.connect(wsUrl);
    await first.synced(15_000);
    const token: string = first.frames.find((f: Json) => f.synced).synced.resume;
    first.close();
    await within(first.closed, "the first WebSocket to close");

    // An observer's createEvent is the signal that the Durable Object's watch has the change, so
    // the resume below cannot race the watch (it would replay nothing).
    const observer = await WsClient.connect(wsUrl);
    await observer.synced(15_000);
    const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const obj = ksvc("edge", "production", "missed");
    const created = await http(sb.url + SERVICES, { method: "POST", headers: auth, body: JSON.stringify(obj) });
    assert.equal(created.status, 201, created.text);
    await observer.until((f) => appEvents(f).some((x: Json) => x.createEvent?.app.metadata.id.name === "missed"), "the observer's createEvent of missed", 15_000);
    observer.close();
    await within(observer.closed, "the observer to close");

    const second = await WsClient.connect(`${wsUrl}?resume=${encodeURIComponent(token)}`);
    try {
      await second.until((f) => f.some((x: Json) => x.synced?.after === "resume"), "the end of the replay", 15_000);
      assert.equal(second.frames[0].start?.mode, "resumed");
      assert.equal(second.frames[0].start.replayed, 1);
      assert.deepEqual(appEvents(second.frames).map((f: Json) => f.createEvent?.app.metadata.id.name), ["missed"]);
    } finally {
      second.close();
      await within(second.closed, "the second WebSocket to close");
      await http(`${sb.url}${SERVICES}/${obj.metadata.name}`, { method: "DELETE", headers: auth });
    }
  });

  test("REST, readiness, metrics and the error shape through the Worker", async () => {
    const list = await http(new URL("/v1/apps?limit=2", base).href);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.apps.length, 2);
    assert.equal(typeof list.body.token, "string");

    const missing = await http(new URL("/v1/apps/edge/development/nope", base).href);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, "not_found");

    const bad = await http(new URL("/v1/apps?limit=abc", base).href);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "invalid_argument");

    const notWs = await http(new URL("/v1/watch", base).href);
    assert.equal(notWs.status, 426);

    const metrics = await http(new URL("/metrics", base).href);
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /appwatch_build_info\{[^}]*runtime="workerd"/);
  });

  test("the board through the Worker: the page and its script, src/service/board/client.js as is", async () => {
    const page = await http(new URL("/", base).href);
    assert.equal(page.status, 200);
    assert.match(page.text, /^<!doctype html>/i);
    const src = /<script type="module" src="([^"]+)"/.exec(page.text)?.[1];
    assert.ok(src, "the page names its script");
    const script = await http(new URL(src, base).href);
    assert.equal(script.status, 200);
    assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.equal(script.text, BOARD_JS);
  });

  test("SSE through the Worker: the snapshot ends with synced", async () => {
    const abort = new AbortController();
    const res = await fetch(new URL("/v1/watch?project=llm&domain=development", base), { headers: { accept: "text/event-stream" }, signal: abort.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = "";
    const decoder = new TextDecoder();
    try {
      await within((async () => {
        while (!text.includes("event: synced")) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`SSE ended early: ${text}`);
          text += decoder.decode(value, { stream: true });
        }
      })(), "the SSE synced event", 15_000);
      assert.match(text, /event: start\n/);
    } finally {
      abort.abort();
      await reader.cancel().catch(() => {});
    }
  });

  test("an SSE client that leaves is released (request.signal, the enable_request_signal flag): the gauge falls back to 0", async () => {
    const sseOpen = async () => Number(/^appwatch_sse_connections (\d+)$/m.exec((await http(new URL("/metrics", base).href)).text)?.[1] ?? "NaN");
    // Three rounds: before the fix every one kept its stream (and its client address's slot).
    for (let round = 0; round < 3; round++) {
      const abort = new AbortController();
      const res = await fetch(new URL("/v1/watch", base), { headers: { accept: "text/event-stream" }, signal: abort.signal });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      assert.equal((await reader.read()).done, false);
      abort.abort();
      await reader.cancel().catch(() => {});
    }
    let last = NaN;
    await eventually(async () => (last = await sseOpen()) === 0, () => `SSE streams still open after their clients left: ${last}`, 15_000);
  });

  test("with APPWATCH_KUBE_MTLS bound, every API request goes through that binding's fetch", async () => {
    const worker = await mf.getWorker("mtls");
    await eventually(async () => ((await worker.fetch("http://localhost/readyz")) as Response).status === 200, "the mTLS-bound watch to sync", 30_000);
    const res: Response = await worker.fetch("http://localhost/v1/apps");
    assert.equal(res.status, 200);
    assert.ok(viaBinding.some((p) => p.endsWith("/services")), `API paths via the binding: ${viaBinding.join(", ")}`);
  });

  test("a Worker without APPWATCH_KUBE_API_URL answers {code, message} and names the setting", async () => {
    const worker = await mf.getWorker("unconfigured");
    const res: Response = await worker.fetch("http://localhost/v1/apps");
    assert.equal(res.status, 500);
    const body = await res.json() as { code: string; message: string };
    assert.equal(body.code, "failed_precondition");
    assert.match(body.message, /APPWATCH_KUBE_API_URL is required/);
  });
});
