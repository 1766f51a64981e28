/**
 * Errors name their cause, on Node, Deno and Bun alike: a request that gets no HTTP answer is a
 * `KubeTransportError` with the URL and a normalised code (a port that was bound and closed:
 * ECONNREFUSED; a `.invalid` host: ENOTFOUND; certificates the transport does not trust or that
 * name another host: CERT_*), and a 401 / 403 of the API server is an authentication /
 * authorization error saying what to check. The service's logs say the same, never the token.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { lookup } from "node:dns/promises";
import { KubeApiError, KubeAuthenticationError, KubeAuthorizationError, KubeClient, KubeTransportError } from "../mod.ts";
import { bearerToken } from "../src/kube/client.ts";
import { classifyTransportError } from "../src/kube/errors.ts";
import { createTransport } from "../src/kube/transport.ts";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { createLogger } from "../src/log.ts";
import { serveFetch } from "../src/serve.ts";
import { startService } from "../src/service/server.ts";
import { freePort, startRestartableSandbox } from "./helpers/restartable-sandbox.ts";
import { makePki, startTlsServer } from "./helpers/tls.ts";
import { testSettings, waitFor } from "./helpers/service.ts";

const KSVC_PATH = "/apis/serving.knative.dev/v1/namespaces/flyte/services";
const SECRET = "s3cr3t-token-value-never-logged";

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail("expected the request to fail");
}

async function transportClient(server: string, tls: { ca?: string } = {}): Promise<KubeClient> {
  const transport = await createTransport({ insecureSkipVerify: false, ...tls }, { server });
  return new KubeClient({ server, fetch: transport.fetch, close: () => transport.close(), credentials: bearerToken(SECRET) });
}

/** A loopback "API server" that answers every request with `status` and a Kubernetes Status body. */
async function statusServer(status: number, reason: string, message: string) {
  return await serveFetch(() =>
    new Response(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, reason, code: status }), {
      status,
      headers: { "content-type": "application/json" },
    })
  );
}

describe("transport failures are KubeTransportError naming the URL and the system error", () => {
  test("a port that was bound and then closed: ECONNREFUSED, for the client and for AppK8sClient", async () => {
    const port = await freePort();
    const server = `http://127.0.0.1:${port}`;
    const client = await transportClient(server);
    try {
      const err = await failure(client.json({ path: KSVC_PATH, query: { limit: 1 } }));
      assert.ok(err instanceof KubeTransportError, `a typed error, got ${err}`);
      assert.equal(err.name, "KubeTransportError");
      assert.equal(err.code, "ECONNREFUSED");
      assert.equal(err.url, `${server}${KSVC_PATH}?limit=1`);
      assert.ok(err.cause !== undefined, "the runtime's error is kept as the cause");
      assert.match(err.message, new RegExp(`^cannot reach the Kubernetes API at http://127\\.0\\.0\\.1:${port}/apis/serving\\.knative\\.dev/v1/namespaces/flyte/services: ECONNREFUSED \\(`));
      assert.match(err.message, /is the API server running/);
      assert.ok(!err.message.includes(SECRET));
      // The Flyte layer passes it through as it is.
      const apps = new AppK8sClient({ client, namespace: "flyte" });
      const started = await failure(apps.startWatching());
      assert.ok(started instanceof KubeTransportError, `startWatching: ${started}`);
      assert.equal(started.code, "ECONNREFUSED");
    } finally {
      await client.close();
    }
  });

  test("an aborted request stays an abort (not a transport error)", async () => {
    const client = await transportClient(`http://127.0.0.1:${await freePort()}`);
    try {
      const ac = new AbortController();
      ac.abort(new Error("stopped by the caller"));
      const err = await failure(client.request({ path: "/api", signal: ac.signal }));
      assert.ok(!(err instanceof KubeTransportError), `got ${err}`);
    } finally {
      await client.close();
    }
  });

  test("an unresolvable host (.invalid): ENOTFOUND", async (t) => {
    const host = "appwatch-test.invalid";
    // RFC 6761 reserves .invalid; a machine whose resolver does not answer at once cannot tell us anything.
    const probe = await Promise.race([
      lookup(host).then(() => "resolved", () => "failed"),
      new Promise<string>((r) => setTimeout(() => r("slow"), 3_000).unref?.()),
    ]);
    if (probe !== "failed") {
      t.skip(`the resolver ${probe === "slow" ? "does not answer quickly" : "resolves"} ${host}: cannot check ENOTFOUND deterministically here`);
      return;
    }
    const client = await transportClient(`http://${host}:6443`);
    try {
      const err = await failure(client.json({ path: "/api" }));
      assert.ok(err instanceof KubeTransportError, `got ${err}`);
      assert.equal(err.code, "ENOTFOUND");
      assert.match(err.message, /appwatch-test\.invalid:6443/);
      assert.match(err.message, /does not resolve/);
    } finally {
      await client.close();
    }
  });

  test("TLS: an untrusted CA is CERT_UNTRUSTED, a certificate for another name CERT_HOSTNAME_MISMATCH", async () => {
    const pki = await makePki();
    const tls = await startTlsServer(pki);
    try {
      const cases: [string, string, { ca?: string }, string, RegExp][] = [
        ["no CA", `https://127.0.0.1:${tls.ports.main}`, {}, "CERT_UNTRUSTED", /certificate-authority/],
        ["another CA", `https://127.0.0.1:${tls.ports.main}`, { ca: pki.otherCa }, "CERT_UNTRUSTED", /certificate-authority/],
        ["another name", `https://localhost:${tls.ports.named}`, { ca: pki.ca }, "CERT_HOSTNAME_MISMATCH", /tls-server-name/],
      ];
      for (const [what, server, settings, code, hint] of cases) {
        const client = await transportClient(server, settings);
        try {
          const err = await failure(client.json({ path: "/api" }));
          assert.ok(err instanceof KubeTransportError, `${what}: got ${err}`);
          assert.equal(err.code, code, `${what}: ${err.message}`);
          assert.match(err.message, hint, what);
          assert.ok(err.message.includes(new URL(server).host), `${what}: names the server`);
        } finally {
          await client.close();
        }
      }
    } finally {
      await tls.close();
      await pki.remove();
    }
  });

  test("each runtime's shape normalises to the same codes", () => {
    const rows: [unknown, string][] = [
      // Node (undici)
      [Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) }), "ECONNREFUSED"],
      [Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("getaddrinfo EAI_AGAIN x"), { code: "EAI_AGAIN" }) }), "ENOTFOUND"],
      [Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" }) }), "CERT_EXPIRED"],
      [Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }) }), "CERT_UNTRUSTED"],
      // Deno
      [new TypeError("error sending request for url (http://127.0.0.1:1/): client error (Connect): tcp connect error: Connection refused (os error 111)"), "ECONNREFUSED"],
      [Object.assign(new TypeError("fetch failed"), { cause: new Error("client error (Connect): dns error: failed to lookup address information: Name or service not known") }), "ENOTFOUND"],
      [Object.assign(new TypeError("fetch failed"), { cause: new Error("client error (Connect): invalid peer certificate: UnknownIssuer") }), "CERT_UNTRUSTED"],
      [Object.assign(new TypeError("fetch failed"), { cause: new Error("invalid peer certificate: Expired") }), "CERT_EXPIRED"],
      [Object.assign(new TypeError("fetch failed"), { cause: new Error("connection reset by peer (os error 104)") }), "ECONNRESET"],
      // Bun (current and older releases)
      [Object.assign(new TypeError("ECONNREFUSED: Unable to connect."), { code: "ECONNREFUSED" }), "ECONNREFUSED"],
      [Object.assign(new Error("Unable to connect. Is the computer able to access the url?"), { code: "ConnectionRefused" }), "ECONNREFUSED"],
      [Object.assign(new TypeError("getaddrinfo ENOTFOUND x.invalid"), { code: "ENOTFOUND" }), "ENOTFOUND"],
      [Object.assign(new TypeError("ERR_TLS_CERT_ALTNAME_INVALID fetching"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" }), "CERT_HOSTNAME_MISMATCH"],
      [new TypeError("fetch failed"), "UNKNOWN"],
      ["a string", "UNKNOWN"],
    ];
    for (const [err, code] of rows) assert.equal(classifyTransportError(err).code, code, String((err as Error).message ?? err));
    // The runtime's most specific words are kept, without user:password of a server URL.
    assert.equal(classifyTransportError(rows[0]![0]).detail, "connect ECONNREFUSED 127.0.0.1:1");
    const e = new KubeTransportError({ url: "https://admin:hunter2@k8s.example:6443/api", code: "ECONNREFUSED", detail: "for url (https://admin:hunter2@k8s.example:6443/api)" });
    assert.ok(!e.message.includes("hunter2") && !e.url.includes("hunter2"), e.message);
  });
});

describe("401 and 403 name authentication and authorization", () => {
  test("a loopback server answering 401, then 403: typed errors saying what to check", async () => {
    for (const [code, reason, Type, expected] of [
      [401, "Unauthorized", KubeAuthenticationError, [/^Kubernetes API 401 Unauthorized: Unauthorized \(GET \/apis\/serving\.knative\.dev\/v1\/namespaces\/flyte\/services\); authentication failed/, /token expired/, /kubectl auth whoami/]],
      [403, "Forbidden", KubeAuthorizationError, [
        /^Kubernetes API 403 Forbidden: services\.serving\.knative\.dev is forbidden/,
        /authorization failed: RBAC does not allow list and watch on services\.serving\.knative\.dev in namespace "flyte"/,
        /deploy\/rbac\.yaml/,
        /kubectl auth can-i list services\.serving\.knative\.dev -n flyte/,
      ]],
    ] as const) {
      const server = await statusServer(code, reason, code === 401 ? "Unauthorized" : 'services.serving.knative.dev is forbidden: User "system:serviceaccount:flyte:x" cannot list resource "services"');
      const client = await transportClient(server.url);
      try {
        const err = await failure(client.json({ path: KSVC_PATH }));
        assert.ok(err instanceof Type, `${code}: got ${err}`);
        assert.ok(err instanceof KubeApiError, `${code}: still a KubeApiError`);
        assert.equal((err as KubeApiError).code, code);
        for (const re of expected) assert.match((err as Error).message, re, `${code}`);
        assert.ok(!(err as Error).message.includes(SECRET));
      } finally {
        await client.close();
        await server.close();
      }
    }
  });
});

describe("the service's logs name the cause", () => {
  async function startAgainst(server: string) {
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", sink: (l) => lines.push(l) });
    const client = await transportClient(server);
    const service = await startService(testSettings(), {
      logger,
      cluster: { client, namespaces: ["flyte"], describe: server, close: () => client.close() },
    });
    return { lines, service };
  }

  test("a closed API port: the URL and ECONNREFUSED, not a bare 'fetch failed'", async () => {
    const port = await freePort();
    const { lines, service } = await startAgainst(`http://127.0.0.1:${port}`);
    try {
      await waitFor(() => lines.some((l) => l.includes("retrying")), () => `a retry log line: ${lines.join("\n")}`);
      const line = lines.find((l) => l.includes("retrying"))!;
      assert.match(line, new RegExp(`cannot reach the Kubernetes API at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\); retrying`));
      assert.match(line, /"error":"cannot reach the Kubernetes API at http:\/\/127\.0\.0\.1:\d+\/apis\/serving\.knative\.dev/);
      const ready = await fetch(`${service.url}/readyz`);
      assert.equal(ready.status, 503);
      await ready.body?.cancel();
      const list = await fetch(`${service.url}/v1/apps`);
      const body = await list.json();
      assert.equal(list.status, 503);
      assert.equal(body.code, "unavailable");
      assert.match(body.message, /ECONNREFUSED/);
    } finally {
      await service.stop();
    }
    for (const l of lines) assert.ok(!l.includes(SECRET), `no token in logs: ${l}`);
  });

  test("the API server goes away after the sync: the watch's log names the URL and ECONNREFUSED", async () => {
    const sb = await startRestartableSandbox();
    const { lines, service } = await startAgainst(sb.url);
    try {
      await service.watching;
      await sb.stopServing();
      await waitFor(() => lines.some((l) => l.includes("ECONNREFUSED")), () => `a log line naming ECONNREFUSED: ${lines.join("\n")}`);
      const line = lines.find((l) => l.includes("ECONNREFUSED"))!;
      assert.match(line, new RegExp(`cannot reach the Kubernetes API at http://127\\.0\\.0\\.1:${sb.port}/apis/serving\\.knative\\.dev/v1/namespaces/flyte/`));
      assert.match(line, /"code":"ECONNREFUSED"/);
      assert.ok(!line.includes("fetch failed"), line);
    } finally {
      await service.stop();
      await sb.close();
    }
    for (const l of lines) assert.ok(!l.includes(SECRET), `no token in logs: ${l}`);
  });

  test("a 401: an authentication error naming what to check, not 'cannot reach the Kubernetes API'; the token is never logged", async () => {
    const api = await statusServer(401, "Unauthorized", "Unauthorized");
    const { lines, service } = await startAgainst(api.url);
    try {
      await waitFor(() => lines.some((l) => l.includes("retrying")), () => `a retry log line: ${lines.join("\n")}`);
      const line = lines.find((l) => l.includes("retrying"))!;
      assert.match(line, /"level":"error"/);
      assert.match(line, /the Kubernetes API refused appwatch's credentials \(401 Unauthorized\); retrying/);
      assert.match(line, /authentication failed/);
      assert.ok(!line.includes("cannot reach"), line);
    } finally {
      await service.stop();
      await api.close();
    }
    for (const l of lines) assert.ok(!l.includes(SECRET), `no token in logs: ${l}`);
  });
});
