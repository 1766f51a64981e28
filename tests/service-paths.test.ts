/**
 * One path rule on every runtime (issue 24, F15), over raw TCP so no client normalises the
 * request target: a dot segment (`.` or `..`, raw or percent-encoded) resolves as the URL standard
 * says (as Node and Bun do before the handler), a method outside RFC 9110's is 501, a request
 * target over 8 KiB a 414, an encoded slash is no separator (404) — each error in the contract's
 * `{"code","message"}` shape (docs/protocol.md, "Paths"). What a runtime's own parser answers
 * before any handler is asserted per runtime, as documented there.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type RawAnswer, rawRequest } from "./helpers/raw-http.ts";
import { startTestService } from "./helpers/service.ts";

/** Sends one request line (and `Connection: close`) on a new connection; reads the whole answer. */
async function request(url: string, method: string, target: string): Promise<RawAnswer | undefined> {
  const answer = await rawRequest(url, `${method} ${target} HTTP/1.1\r\nHost: appwatch.test\r\nConnection: close\r\n\r\n`, { timeoutMs: 5_000 });
  answer?.socket.destroy();
  return answer;
}

/** One line per answer: the status, and the code if the body is the error contract's exact shape. */
function describeAnswer(a: RawAnswer | undefined): string {
  if (!a) return "no answer";
  let shape = "body not the error shape";
  try {
    const body = JSON.parse(a.body);
    const keys = Object.keys(body).sort().join(",");
    if (/^application\/json/.test(a.headers["content-type"] ?? "") && keys === "code,message" && typeof body.message === "string" && body.message.length > 0) shape = body.code;
    else if (a.status === 200) shape = "ok";
  } catch { /* not JSON */ }
  return `${a.status} ${shape}`;
}

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const runtime: "deno" | "bun" | "node" = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";

/**
 * What a runtime's own HTTP parser answers before any handler runs (docs/protocol.md, "Paths"):
 * a method token outside its method table (`FOO`, lowercase `get`: Node 400 with no body, Bun
 * closes without a byte; Deno hands it over), `CONNECT` with a path (Node closes, having no
 * `connect` listener; Deno 400 with no body; Bun hands it over), and a request head over 16 KiB
 * (Node and Bun 431 with no body; Deno hands over up to 64 KiB, then answers 400 with no body).
 */
const parserAnswer = {
  unknownToken: { node: "400 body not the error shape", bun: "no answer", deno: "501 unimplemented" }[runtime],
  connectPath: { node: "no answer", bun: "405 unimplemented", deno: "400 body not the error shape" }[runtime],
  head20KiB: { node: "431 body not the error shape", bun: "431 body not the error shape", deno: "414 invalid_argument" }[runtime],
};

describe("paths: one rule on every runtime", () => {
  test("dot segments, encoded dots and slashes, unknown methods and over-long targets get the same answer everywhere", async () => {
    const s = await startTestService();
    try {
      const long = `/v1/apps/${"a".repeat(10 * 1024)}`;
      const cases: [what: string, method: string, target: string, want: string][] = [
        ["the route itself", "GET", "/v1/apps?limit=1", "200 ok"],
        // Dot segments resolve as the URL standard says (Node and Bun do it before the handler).
        ["a `..` segment", "GET", "/x/../v1/apps?limit=1", "200 ok"],
        ["a `.` segment", "GET", "/v1/./apps?limit=1", "200 ok"],
        ["`..` above the root", "GET", "/../../v1/apps?limit=1", "200 ok"],
        ["`%2e%2e`", "GET", "/v1/%2e%2e/v1/apps?limit=1", "200 ok"],
        ["`%2E%2E` first", "GET", "/%2E%2E/v1/apps?limit=1", "200 ok"],
        ["`.%2e`", "GET", "/x/.%2e/v1/apps?limit=1", "200 ok"],
        ["`%2e`", "GET", "/v1/%2e/apps?limit=1", "200 ok"],
        ["a last `..` leaves a trailing slash", "GET", "/v1/apps/p/d/n/..", "404 not_found"],
        ["dots inside a segment are no dot segment", "GET", "/v1/apps/p/d/a..b", "404 not_found"],
        ["an encoded slash is no separator", "GET", "/v1/apps%2Fx", "404 not_found"],
        // Methods: RFC 9110's are known (405 where a path has others), any other is 501.
        ["a known method a route does not have", "DELETE", "/v1/apps", "405 unimplemented"],
        ["a registered method outside RFC 9110, on a route", "PROPFIND", "/v1/apps", "501 unimplemented"],
        ["a registered method outside RFC 9110, elsewhere", "PURGE", "/nowhere", "501 unimplemented"],
        ["a token no parser knows", "FOO", "/v1/apps", parserAnswer.unknownToken],
        ["a lowercase method is another token", "get", "/v1/apps", parserAnswer.unknownToken],
        ["CONNECT with a path", "CONNECT", "/v1/apps", parserAnswer.connectPath],
        // Request targets over 8 KiB: 414, path or query.
        ["an 8 KiB path", "GET", `/${"a".repeat(8191)}`, "404 not_found"],
        ["a 10 KiB path", "GET", long, "414 invalid_argument"],
        ["a 10 KiB query", "GET", `/v1/apps?limit=1&x=${"a".repeat(10 * 1024)}`, "414 invalid_argument"],
        ["a 20 KiB path", "GET", `/${"a".repeat(20 * 1024)}`, parserAnswer.head20KiB],
      ];
      const got: string[] = [];
      for (const [what, method, target] of cases) got.push(`${what} (${method} ${target.slice(0, 40)}): ${describeAnswer(await request(s.url, method, target))}`);
      assert.deepEqual(got, cases.map(([what, method, target, want]) => `${what} (${method} ${target.slice(0, 40)}): ${want}`));
      // The 404 names the path it resolved to.
      const resolved = await request(s.url, "GET", "/v1/apps/p/d/n/..");
      assert.equal(JSON.parse(resolved!.body).message, "no route for GET /v1/apps/p/d/");
      // The service still serves after all of them.
      assert.equal(describeAnswer(await request(s.url, "GET", "/healthz")), "200 ok");
    } finally {
      await s.stop();
    }
  });

  test("the /v1 guard sees the resolved path: a dot segment does not go around the bearer check", async () => {
    const s = await startTestService({ authTokens: ["sekrit"] });
    try {
      const got: string[] = [];
      for (const target of ["/v1/apps", "/board/../v1/apps", "/x/%2e%2e/v1/apps", "/v1/./apps", "/%2e/v1/info"]) {
        got.push(`${target}: ${describeAnswer(await request(s.url, "GET", target))}`);
      }
      assert.deepEqual(got, ["/v1/apps", "/board/../v1/apps", "/x/%2e%2e/v1/apps", "/v1/./apps", "/%2e/v1/info"].map((t) => `${t}: 401 unauthenticated`));
    } finally {
      await s.stop();
    }
  });
});
