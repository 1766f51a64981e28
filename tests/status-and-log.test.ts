import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { errorFromResponse, errorFromStatus, KubeApiError, parseRetryAfter } from "../src/kube/status.ts";
import { createLogger, redact } from "../src/log.ts";
import { serveFetch } from "../src/serve.ts";

const status = (code: number, reason: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: `msg ${reason}`, reason, code, ...extra });

describe("Kubernetes Status errors", () => {
  test("JSON with content-length, chunked JSON, and non-JSON bodies all become one typed error", async () => {
    const enc = new TextEncoder();
    const server = await serveFetch((req) => {
      const path = new URL(req.url).pathname;
      if (path === "/json") return new Response(status(410, "Expired", { metadata: { continue: "next" } }), { status: 410, headers: { "content-type": "application/json" } });
      if (path === "/chunked") {
        const body = status(429, "TooManyRequests", { details: { retryAfterSeconds: 7, causes: [{ reason: "X", message: "m", field: "f" }] } });
        const stream = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(enc.encode(body.slice(0, 10)));
            c.enqueue(enc.encode(body.slice(10)));
            c.close();
          },
        });
        return new Response(stream, { status: 429, headers: { "content-type": "application/json" } });
      }
      return new Response("<html>bad gateway</html>", { status: 502, headers: { "retry-after": "3" } });
    });
    try {
      const a = await errorFromResponse(await fetch(server.url + "/json"), "GET /json");
      assert.ok(a instanceof KubeApiError);
      assert.deepEqual([a.code, a.reason, a.isExpired, a.continueToken, a.source], [410, "Expired", true, "next", "http"]);
      assert.match(a.message, /^Kubernetes API 410 Expired: msg Expired \(GET \/json\)$/);
      const b = await errorFromResponse(await fetch(server.url + "/chunked"), "GET /chunked");
      assert.deepEqual([b.code, b.reason, b.retryAfterSeconds, b.causes], [429, "TooManyRequests", 7, [{ reason: "X", message: "m", field: "f" }]]);
      const c = await errorFromResponse(await fetch(server.url + "/html"), "GET /html");
      assert.deepEqual([c.code, c.reason, c.retryAfterSeconds], [502, "", 3]);
      assert.match(c.message, /bad gateway/);
    } finally {
      await server.close();
    }
  });

  test("in-stream ERROR objects: 410 Gone (legacy) is expired; TooLarge is recognised; junk is described", () => {
    const gone = errorFromStatus({ kind: "Status", code: 410, reason: "Gone" }, { code: 500, source: "in-stream" });
    assert.equal(gone.isExpired, true);
    assert.equal(gone.source, "in-stream");
    const large = errorFromStatus({ kind: "Status", code: 504, reason: "Timeout", message: "Too large resource version" }, { code: 500, source: "in-stream" });
    assert.equal(large.isTooLargeResourceVersion, true);
    const junk = errorFromStatus("nonsense", { code: 500, source: "in-stream" });
    assert.equal(junk.code, 500);
    assert.match(junk.message, /unexpected error body/);
  });

  test("Retry-After: seconds or an HTTP date", () => {
    assert.equal(parseRetryAfter("5"), 5);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter("soon"), undefined);
    const inTwo = new Date(Date.now() + 2500).toUTCString();
    const s = parseRetryAfter(inTwo)!;
    assert.ok(s >= 1 && s <= 3, String(s));
  });
});

describe("structured logs never leak secrets", () => {
  test("tokens, passwords, keys and authorization headers are redacted, deeply", () => {
    const lines: string[] = [];
    const log = createLogger({ sink: (l) => lines.push(l) });
    log.info("connecting", {
      server: "https://x",
      token: "s3cr3t-token",
      user: { password: "hunter2", "client-key-data": "KEYDATA", name: "bob" },
      headers: { Authorization: "Bearer abc" },
      nested: [{ bearerToken: "zzz" }],
      keyCount: 3,
    });
    const line = lines[0]!;
    for (const secret of ["s3cr3t-token", "hunter2", "KEYDATA", "Bearer abc", "zzz"]) assert.ok(!line.includes(secret), `${secret} leaked: ${line}`);
    const rec = JSON.parse(line);
    assert.equal(rec.user.name, "bob");
    assert.equal(rec.keyCount, 3);
    assert.equal(rec.level, "info");
    assert.equal(rec.msg, "connecting");
  });

  test("levels filter; child loggers add fields; errors keep their message; cycles are safe", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "warn", sink: (l) => lines.push(l) }).child({ component: "t" });
    log.info("hidden");
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    log.warn("shown", { err: new Error("boom"), cyclic });
    assert.equal(lines.length, 1);
    const rec = JSON.parse(lines[0]!);
    assert.equal(rec.component, "t");
    assert.equal(rec.err.message, "boom");
    assert.equal(rec.cyclic.self, "[cycle]");
    assert.deepEqual(redact({ privateKey: "x", keys: ["a"] }), { privateKey: "[redacted]", keys: ["a"] });
  });
});
