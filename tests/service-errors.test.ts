/**
 * The one error contract over real HTTP: every error of every non-Connect route is JSON
 * `{"code","message"}` with the right status — unknown routes 404, a known path with a wrong
 * method 405 with `Allow`, bad queries 400 naming the key — and query parsing treats every key
 * alike (prototype names, empty names, repeats on every route that reads a query).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { createLogger } from "../src/log.ts";
import { startSandboxCluster } from "../src/sandbox/mod.ts";
import { serveFetch } from "../src/serve.ts";
import { createApp } from "../src/service/app.ts";
import { http, metric, startTestService, type TestService } from "./helpers/service.ts";

async function withService(fn: (s: TestService) => Promise<void>): Promise<void> {
  const s = await startTestService();
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
}

/** The answer is the contract's JSON with this status and code. */
function assertError(res: { status: number; body: unknown; text: string; headers: Headers }, status: number, code: string, what: string): void {
  assert.equal(res.status, status, `${what}: ${res.text}`);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, `${what}: content-type`);
  const body = res.body as { code?: unknown; message?: unknown };
  assert.equal(body?.code, code, `${what}: ${res.text}`);
  assert.equal(typeof body.message, "string", what);
  assert.ok((body.message as string).length > 0, what);
}

describe("error contract", () => {
  test("unknown routes answer 404 not_found as JSON, whatever the method", async () => {
    await withService(async (s) => {
      for (const [method, path] of [
        ["GET", "/nope"],
        ["GET", "/v1/nope"],
        ["GET", "/v1/apps/p/d"],
        ["GET", "/v1/apps/p/d/n/extra"],
        ["GET", "/board/missing.js"],
        ["GET", "/healthz/x"],
        ["POST", "/nope"],
        ["DELETE", "/v1/nope"],
        ["GET", "/flyteidl2.app.AppService"],
      ] as const) {
        const res = await http(`${s.url}${path}`, { method });
        assertError(res, 404, "not_found", `${method} ${path}`);
        assert.match(res.body.message, new RegExp(`${method} ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`), `${method} ${path}: names the request`);
      }
      const head = await fetch(`${s.url}/nope`, { method: "HEAD" });
      assert.equal(head.status, 404);
      await head.body?.cancel();
      const m = (await http(`${s.url}/metrics`)).text;
      assert.ok((metric(m, "appwatch_http_requests_total", 'route="other",status="404"') ?? 0) >= 7, "unknown routes are counted");
    });
  });

  test("a known path with a wrong method answers 405 as JSON with Allow", async () => {
    await withService(async (s) => {
      const rows: [string, string, string][] = [
        ["POST", "/v1/apps", "GET, HEAD"],
        ["DELETE", "/v1/apps/p/d/n", "GET, HEAD"],
        ["PUT", "/v1/watch", "GET, HEAD"],
        ["POST", "/healthz", "GET, HEAD"],
        ["POST", "/readyz", "GET, HEAD"],
        ["POST", "/metrics", "GET, HEAD"],
        ["POST", "/", "GET, HEAD"],
        ["PUT", "/board/app.js", "GET, HEAD"],
        ["OPTIONS", "/v1/apps", "GET, HEAD"],
        // The Connect paths: POST and GET are Connect's (its own error format); other methods are ours.
        ["PUT", "/internal/flyteidl2.app.AppService/List", "GET, POST, HEAD"],
        ["DELETE", "/flyteidl2.app.AppService/Watch", "GET, POST, HEAD"],
      ];
      for (const [method, path, allow] of rows) {
        const res = await http(`${s.url}${path}`, { method });
        assertError(res, 405, "unimplemented", `${method} ${path}`);
        assert.equal(res.headers.get("allow"), allow, `${method} ${path}: Allow`);
        assert.match(res.body.message, new RegExp(`^${method} is not allowed on `), `${method} ${path}`);
      }
    });
  });

  test("bad queries answer 400 invalid_argument on every route that reads one; prototype names are keys like any other", async () => {
    await withService(async (s) => {
      const rows: { path: string; key: string; message: RegExp }[] = [
        { path: "/v1/apps?__proto__=x", key: "__proto__", message: /^__proto__: is not a known parameter$/ },
        { path: "/v1/apps?toString=1", key: "toString", message: /^toString: is not a known parameter$/ },
        { path: "/v1/apps?constructor=1", key: "constructor", message: /^constructor: is not a known parameter$/ },
        { path: "/v1/apps?hasOwnProperty=1&limit=1", key: "hasOwnProperty", message: /^hasOwnProperty: is not a known parameter$/ },
        { path: "/v1/watch?__proto__=x", key: "__proto__", message: /^__proto__: is not a known parameter$/ },
        { path: "/v1/watch?valueOf=1", key: "valueOf", message: /^valueOf: is not a known parameter$/ },
        { path: "/v1/apps/p/d/n?__proto__=x", key: "__proto__", message: /^__proto__: is not a known parameter$/ },
        { path: "/v1/apps?=x", key: "", message: /^a query parameter has an empty name \("=x"\)$/ },
        { path: "/v1/watch?=", key: "", message: /empty name/ },
        { path: "/v1/apps/p/d/n?=x", key: "", message: /empty name/ },
        { path: "/v1/apps/p/d/n?org=a&org=b", key: "org", message: /^org: is repeated$/ },
        { path: "/v1/apps?project=a&project=a", key: "project", message: /^project: is repeated$/ },
        { path: "/v1/watch?snapshot=true&snapshot=false", key: "snapshot", message: /^snapshot: is repeated$/ },
        // Path parameters come from the path only: a query cannot override them.
        { path: "/v1/apps/p/d/n?project=q", key: "project", message: /^project: is not a known parameter$/ },
        { path: "/v1/apps/p/d/n?name=x", key: "name", message: /^name: is not a known parameter$/ },
        { path: "/v1/apps/p/d/n?org=a%20b", key: "org", message: /^org: must be letters/ },
      ];
      for (const row of rows) {
        const res = await http(`${s.url}${row.path}`, { headers: { accept: "text/event-stream" } });
        assertError(res, 400, "invalid_argument", row.path);
        assert.match(res.body.message, row.message, row.path);
        assert.deepEqual(res.body.issues.map((i: { key: string }) => i.key), [row.key], `${row.path}: issues`);
      }
      // Several problems at once: each named once.
      const many = await http(`${s.url}/v1/apps?a=1&a=2&a=3&__proto__=1`);
      assert.equal(many.body.message, "a: is not a known parameter; a: is repeated; __proto__: is not a known parameter");
      // Well-formed queries still work, and so does an org that matches nothing.
      assert.equal((await http(`${s.url}/v1/apps?project=llm&domain=production&limit=1`)).status, 200);
      assertError(await http(`${s.url}/v1/apps/llm/production/vllm-llama?org=nobody`), 404, "not_found", "another org");
      assert.equal((await http(`${s.url}/v1/apps/llm/production/vllm-llama`)).status, 200);
    });
  });

  test("a handler that throws answers 500 internal as JSON (and logs the cause); routes added after createApp get 405 too", async () => {
    const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
    const lines: string[] = [];
    const { app } = createApp({ client: new AppK8sClient({ client: cluster.client, namespace: "flyte" }), logger: createLogger({ level: "warn", sink: (l) => lines.push(l) }) });
    // An embedder's own routes, mounted on the same app.
    app.get("/mine/boom", () => {
      throw new Error("the embedder's bug");
    });
    app.put("/mine/thing", (c) => c.json({ ok: true }));
    const server = await serveFetch(app.fetch, { port: 0, hostname: "127.0.0.1" });
    try {
      const boom = await http(`${server.url}/mine/boom`);
      assertError(boom, 500, "internal", "a throwing handler");
      assert.equal(boom.body.message, "internal error", "the answer does not leak the error");
      assert.ok(lines.some((l) => l.includes("request failed") && l.includes("the embedder's bug") && l.includes("/mine/boom")), lines.join("\n"));
      const wrong = await http(`${server.url}/mine/thing`);
      assertError(wrong, 405, "unimplemented", "GET on a PUT route");
      assert.equal(wrong.headers.get("allow"), "PUT");
    } finally {
      await server.close();
      await cluster.close();
    }
  });
});
