/**
 * Credential refresh: token-file rotation against a real loopback server
 * (serveFetch), and exec plugins (a node script) for v1 and v1beta1.
 * Runs unchanged under `tsx --test`, `deno test -A --no-check` and `bun test`.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmod, copyFile, mkdtemp, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeClient } from "../src/kube/client.ts";
import { KubeApiError } from "../src/kube/status.ts";
import type { ClusterAuth, ExecClusterInfo } from "../src/kube/types.ts";
import { createCredentials, type CredentialsOptions } from "../src/kube/credentials.ts";
import type { ExecConfig } from "../src/kube/kubeconfig.ts";
import { createLogger } from "../src/log.ts";
import { type RunningServer, serveFetch } from "../src/serve.ts";

let dir: string;
let plugin: string;
let server: RunningServer;
/** Authorization headers the server saw, with the status it answered. */
let seen: { authorization: string | null; status: number }[] = [];
/** Tokens the server accepts right now. */
let accepted = new Set<string>();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "appwatch-credentials-"));
  plugin = join(dir, "exec-plugin.mjs");
  await copyFile(fileURLToPath(new URL("./fixtures/exec-plugin.mjs", import.meta.url)), plugin);
  await chmod(plugin, 0o755);
  server = await serveFetch((req) => {
    const authorization = req.headers.get("authorization");
    const ok = authorization !== null && accepted.has(authorization.replace(/^Bearer /, ""));
    const status = ok ? 200 : 401;
    seen.push({ authorization, status });
    const body = ok
      ? { kind: "APIVersions", versions: ["v1"] }
      : { kind: "Status", apiVersion: "v1", status: "Failure", message: "Unauthorized", reason: "Unauthorized", code: 401 };
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  });
});

after(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A fake clock. */
function clock(start = Date.now()) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms), set: (ms: number) => void (t = ms) };
}

/** Captures log lines at debug level. */
function capture() {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level: "debug", sink: (l) => lines.push(l) }) };
}

function assertNoSecret(lines: string[], secrets: string[]) {
  for (const line of lines) {
    for (const s of secrets) assert.ok(!line.includes(s), `log line leaks a secret: ${line}`);
  }
}

function client(auth: ClusterAuth, options: CredentialsOptions) {
  return new KubeClient({ server: server.url, credentials: createCredentials(auth, options) });
}

describe("token file", () => {
  test("rotation: the old token gets a 401, the file is re-read, exactly one retry succeeds", async () => {
    const path = join(dir, "token-rotation");
    await writeFile(path, "token-1\n");
    const c = clock();
    const { lines, logger } = capture();
    let reads = 0;
    const readFile_ = async (p: string) => {
      reads++;
      return await readFile(p, "utf8");
    };
    const kube = client({ type: "tokenFile", path }, { now: c.now, readFile: readFile_, logger });
    seen = [];
    accepted = new Set(["token-1"]);
    assert.deepEqual(await kube.json({ path: "/api" }), { kind: "APIVersions", versions: ["v1"] });
    assert.equal(reads, 1);

    // Rotate the file; the server now rejects the old token.
    await writeFile(path, "token-2\n");
    accepted = new Set(["token-2"]);
    c.advance(5_000);
    await kube.json({ path: "/api" });
    assert.deepEqual(seen, [
      { authorization: "Bearer token-1", status: 200 },
      { authorization: "Bearer token-1", status: 401 },
      { authorization: "Bearer token-2", status: 200 },
    ]);
    assert.equal(reads, 2);

    // Within the refresh period the cached token is used without reading the file.
    await kube.json({ path: "/api" });
    assert.equal(reads, 2);
    assertNoSecret(lines, ["token-1", "token-2"]);
    assert.ok(lines.some((l) => l.includes("token file changed")));
  });

  test("re-read after the refresh period (60 s by default) without any 401", async () => {
    const path = join(dir, "token-period");
    await writeFile(path, "period-1");
    const c = clock();
    const kube = client({ type: "tokenFile", path }, { now: c.now });
    seen = [];
    accepted = new Set(["period-1", "period-2"]);
    await kube.json({ path: "/api" });
    await writeFile(path, "period-2");
    c.advance(59_000);
    await kube.json({ path: "/api" });
    c.advance(1_000);
    await kube.json({ path: "/api" });
    assert.deepEqual(seen.map((s) => [s.authorization, s.status]), [
      ["Bearer period-1", 200],
      ["Bearer period-1", 200],
      ["Bearer period-2", 200],
    ]);
  });

  test("the period is configurable", async () => {
    const path = join(dir, "token-short");
    await writeFile(path, "short-1");
    const c = clock();
    const creds = createCredentials({ type: "tokenFile", path }, { now: c.now, tokenFileRefreshMs: 1_000 });
    assert.equal(await creds.authorization(), "Bearer short-1");
    await writeFile(path, "short-2");
    c.advance(999);
    assert.equal(await creds.authorization(), "Bearer short-1");
    c.advance(1);
    assert.equal(await creds.authorization(), "Bearer short-2");
    // `refreshMs` is an alias.
    const alias = createCredentials({ type: "tokenFile", path }, { now: c.now, refreshMs: 1_000 });
    assert.equal(await alias.authorization(), "Bearer short-2");
    await writeFile(path, "short-3");
    c.advance(1_000);
    assert.equal(await alias.authorization(), "Bearer short-3");
  });

  test("a failed re-read keeps the last good token; a first read failure is an error", async () => {
    const path = join(dir, "token-vanishes");
    await writeFile(path, "keep-me");
    const { lines, logger } = capture();
    const creds = createCredentials({ type: "tokenFile", path }, { logger });
    assert.equal(await creds.authorization(), "Bearer keep-me");
    await unlink(path);
    creds.invalidate();
    assert.equal(await creds.authorization(), "Bearer keep-me");
    assert.ok(lines.some((l) => l.includes("token file re-read failed")));
    assertNoSecret(lines, ["keep-me"]);

    const missing = createCredentials({ type: "tokenFile", path }, { source: "in-cluster" });
    await assert.rejects(missing.authorization(), { message: `in-cluster: token file ${path} cannot be read (ENOENT)` });
    const emptyPath = join(dir, "token-empty");
    await writeFile(emptyPath, "\n");
    await assert.rejects(createCredentials({ type: "tokenFile", path: emptyPath }).authorization(), {
      message: `token file ${emptyPath} is empty`,
    });
  });

  test("static token and basic auth", async () => {
    assert.equal(await createCredentials({ type: "token", token: "abc" }).authorization(), "Bearer abc");
    assert.equal(
      await createCredentials({ type: "basic", username: "admin", password: "pä:ss" }).authorization(),
      `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode("admin:pä:ss")))}`,
    );
    assert.equal(await createCredentials({ type: "none" }).authorization(), undefined);
  });
});

describe("exec plugin", () => {
  let n = 0;
  /** An exec config for the fixture plugin with its own counter file. */
  function execConfig(apiVersion: ExecConfig["apiVersion"], env: Record<string, string>, extra: Partial<ExecConfig> = {}) {
    const counter = join(dir, `runs-${++n}.log`);
    const exec: ExecConfig = {
      apiVersion,
      command: plugin,
      args: ["--flag", "value with spaces"],
      env: Object.entries({ PLUGIN_COUNTER: counter, ...env }).map(([name, value]) => ({ name, value })),
      interactiveMode: "Never",
      provideClusterInfo: false,
      ...extra,
    };
    const runs = async () => {
      try {
        return (await readFile(counter, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as {
          args: string[];
          info: { apiVersion: string; kind: string; spec: { interactive: boolean; cluster?: Record<string, unknown> } };
          extra: string | null;
        });
      } catch {
        return [];
      }
    };
    return { exec, runs };
  }

  test("v1: cached until expiry, re-run after expiry and after a 401; env, args and KUBERNETES_EXEC_INFO passed", async () => {
    const c = clock();
    const t0 = c.now();
    const expires = new Date(t0 + 300_000).toISOString();
    const cluster: ExecClusterInfo = {
      server: "https://k.example",
      certificateAuthorityData: "Q0E=",
      tlsServerName: "k.internal",
      config: { audience: "appwatch" },
    };
    const { exec, runs } = execConfig(
      "client.authentication.k8s.io/v1",
      { PLUGIN_TOKEN_PREFIX: "v1tok-", PLUGIN_EXPIRES: expires, PLUGIN_EXTRA: "from-kubeconfig-env" },
      { provideClusterInfo: true },
    );
    const { lines, logger } = capture();
    const kube = client({ type: "exec", exec, cluster }, { now: c.now, logger, expirySkewMs: 10_000 });
    seen = [];
    accepted = new Set(["v1tok-1"]);
    await kube.json({ path: "/api" });
    await kube.json({ path: "/api" });
    assert.equal((await runs()).length, 1, "cached: one run for two requests");

    const first = (await runs())[0]!;
    assert.deepEqual(first.args, ["--flag", "value with spaces"]);
    assert.equal(first.extra, "from-kubeconfig-env");
    assert.deepEqual(first.info, {
      kind: "ExecCredential",
      apiVersion: "client.authentication.k8s.io/v1",
      spec: {
        interactive: false,
        cluster: {
          server: "https://k.example",
          "tls-server-name": "k.internal",
          "certificate-authority-data": "Q0E=",
          config: { audience: "appwatch" },
        },
      },
    });

    // Just before the refresh point (expiry - skew): still cached.
    c.set(t0 + 289_999);
    await kube.json({ path: "/api" });
    assert.equal((await runs()).length, 1);
    // At expiry - skew: the plugin runs again.
    accepted = new Set(["v1tok-2"]);
    c.set(t0 + 290_000);
    await kube.json({ path: "/api" });
    assert.equal((await runs()).length, 2);

    // The server revokes the token: one 401, one re-run, one successful retry.
    accepted = new Set(["v1tok-3"]);
    seen = [];
    await kube.json({ path: "/api" });
    assert.deepEqual(seen, [
      { authorization: "Bearer v1tok-2", status: 401 },
      { authorization: "Bearer v1tok-3", status: 200 },
    ]);
    assert.equal((await runs()).length, 3);
    assert.ok(lines.some((l) => l.includes("exec plugin ran")));
    assertNoSecret(lines, ["v1tok-"]);
  });

  test("v1beta1: no expiry → cached until invalidate(); no cluster info unless asked", async () => {
    const { exec, runs } = execConfig("client.authentication.k8s.io/v1beta1", { PLUGIN_TOKEN_PREFIX: "b1-" });
    const creds = createCredentials({ type: "exec", exec, cluster: { server: "https://ignored" } });
    assert.equal(await creds.authorization(), "Bearer b1-1");
    assert.equal(await creds.authorization(), "Bearer b1-1");
    creds.invalidate();
    assert.equal(await creds.authorization(), "Bearer b1-2");
    const all = await runs();
    assert.equal(all.length, 2);
    assert.deepEqual(all[0]!.info, {
      kind: "ExecCredential",
      apiVersion: "client.authentication.k8s.io/v1beta1",
      spec: { interactive: false },
    });
  });

  test("concurrent requests share one plugin run", async () => {
    const { exec, runs } = execConfig("client.authentication.k8s.io/v1", { PLUGIN_TOKEN_PREFIX: "cc-" });
    const creds = createCredentials({ type: "exec", exec });
    const all = await Promise.all([creds.authorization(), creds.authorization(), creds.authorization()]);
    assert.deepEqual(all, ["Bearer cc-1", "Bearer cc-1", "Bearer cc-1"]);
    assert.equal((await runs()).length, 1);
  });

  test("command not found: the error names the command and shows the installHint", async () => {
    const exec: ExecConfig = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "appwatch-test-no-such-plugin",
      args: [],
      env: [],
      installHint: "Install it with: go install example.com/appwatch-test-no-such-plugin@latest",
      interactiveMode: "Never",
      provideClusterInfo: false,
    };
    const creds = createCredentials({ type: "exec", exec }, { source: 'kubeconfig /x/config, context "dev"' });
    await assert.rejects(creds.authorization(), {
      message:
        'kubeconfig /x/config, context "dev": exec plugin "appwatch-test-no-such-plugin": command not found\n' +
        "Install it with: go install example.com/appwatch-test-no-such-plugin@latest",
    });
  });

  const failures: { mode: string; message: (cmd: string) => string; extra?: Partial<ExecConfig>; timeoutMs?: number }[] = [
    { mode: "bad-json", message: (cmd) => `exec plugin "${cmd}": output is not valid JSON (expected an ExecCredential)` },
    { mode: "bad-shape", message: (cmd) => `exec plugin "${cmd}": invalid ExecCredential: status.token must be a string` },
    {
      mode: "no-status",
      message: (cmd) => `exec plugin "${cmd}": invalid ExecCredential: status has neither token nor clientCertificateData/clientKeyData`,
    },
    {
      mode: "wrong-version",
      message: (cmd) =>
        `exec plugin "${cmd}": returned apiVersion "client.authentication.k8s.io/v1alpha1", but the kubeconfig asks for "client.authentication.k8s.io/v1"`,
    },
    { mode: "fail", message: (cmd) => `exec plugin "${cmd}" exited with code 3: boom: no credentials configured` },
    { mode: "hang", message: (cmd) => `exec plugin "${cmd}": timed out after 300 ms`, timeoutMs: 300 },
    {
      mode: "token",
      extra: { interactiveMode: "Always" },
      message: (cmd) =>
        `exec plugin "${cmd}": interactiveMode is Always, but appwatch cannot give the plugin a terminal; run the plugin once in a terminal to cache credentials, or set interactiveMode to IfAvailable or Never`,
    },
  ];
  for (const f of failures) {
    test(`malformed or failing plugin (${f.mode}${f.extra ? ", interactiveMode Always" : ""}) → clear error without the output`, async () => {
      const { exec } = execConfig("client.authentication.k8s.io/v1", { PLUGIN_MODE: f.mode, PLUGIN_TOKEN_PREFIX: "leak-" }, f.extra);
      const { lines, logger } = capture();
      const creds = createCredentials({ type: "exec", exec }, { logger, execTimeoutMs: f.timeoutMs });
      await assert.rejects(creds.authorization(), (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.equal(err.message, f.message(plugin));
        assert.ok(!err.message.includes("leak-"));
        return true;
      });
      assertNoSecret(lines, ["leak-"]);
    });
  }

  test("an exec error surfaces from KubeClient requests (no request is sent)", async () => {
    const { exec } = execConfig("client.authentication.k8s.io/v1", { PLUGIN_MODE: "fail" });
    const kube = client({ type: "exec", exec }, {});
    seen = [];
    await assert.rejects(kube.json({ path: "/api" }), (err: unknown) => !(err instanceof KubeApiError));
    assert.equal(seen.length, 0);
  });

  test("client certificates from the plugin are exposed for the transport; same object while cached", async () => {
    const certFile = join(dir, "exec-client.crt");
    const keyFile = join(dir, "exec-client.key");
    await writeFile(certFile, "-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n");
    await writeFile(keyFile, "-----BEGIN EC PRIVATE KEY-----\nQg==\n-----END EC PRIVATE KEY-----\n");
    const { exec, runs } = execConfig("client.authentication.k8s.io/v1", {
      PLUGIN_MODE: "cert",
      PLUGIN_CERTS: JSON.stringify([[certFile, keyFile]]),
    });
    const { lines, logger } = capture();
    const creds = createCredentials({ type: "exec", exec }, { logger });
    assert.equal(await creds.authorization(), undefined);
    const cc = await creds.clientCertificate();
    assert.equal(cc?.cert, await readFile(certFile, "utf8"));
    assert.equal(cc?.key, await readFile(keyFile, "utf8"));
    assert.equal(await creds.clientCertificate(), cc);
    creds.invalidate();
    // Re-run returns the same PEM: the object is kept so the transport is not recreated.
    assert.equal(await creds.clientCertificate(), cc);
    assert.equal((await runs()).length, 2);
    assertNoSecret(lines, ["PRIVATE KEY"]);
  });
});
