/**
 * The TLS matrix for the per-runtime transport, against one HTTPS server run as
 * a Node child process. Certificates are made with the openssl CLI at test time.
 * Runs unchanged under `tsx --test`, `deno test -A --no-check` and `bun test`.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { chmod, copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTransport, DENO_INSECURE_ENV, type Transport, UnsupportedTlsError } from "../src/kube/transport.ts";
import type { TlsConfig } from "../src/kube/types.ts";
import { connect } from "../src/kube/connect.ts";
import { encodeBase64 } from "../src/kube/kubeconfig.ts";
import { createLogger } from "../src/log.ts";
import { runtimeName } from "../src/runtime.ts";
import { serveFetch } from "../src/serve.ts";
import { makePki, startTlsServer, type TestPki, type TlsTestServer } from "./helpers/tls.ts";

const runtime = runtimeName();
let pki: TestPki;
let server: TlsTestServer;
let work: string;

before(async () => {
  pki = await makePki();
  server = await startTlsServer(pki);
  work = await mkdtemp(join(tmpdir(), "appwatch-tls-work-"));
});

after(async () => {
  await server?.close();
  await pki?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

const url = (port: keyof TlsTestServer["ports"], host = "127.0.0.1", path = "/api") =>
  `https://${host}:${server.ports[port]}${path}`;

/** Creates a transport, runs `fn`, always closes it. */
async function withTransport<T>(tls: TlsConfig, server: string, fn: (t: Transport) => Promise<T>): Promise<T> {
  const t = await createTransport(tls, { server });
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

async function getJson(tls: TlsConfig, target: string): Promise<{ ok: boolean; cn: string | null; sni: string | null }> {
  return await withTransport(tls, target, async (t) => {
    const res = await t.fetch(target, { headers: { accept: "application/json" } });
    assert.equal(res.status, 200);
    return await res.json();
  });
}

/** Everything an error says about itself (message, code, cause), for matching across runtimes. */
function errorText(err: unknown): string {
  const e = err as { name?: unknown; message?: unknown; code?: unknown; cause?: { message?: unknown; code?: unknown } };
  return [e?.name, e?.message, e?.code, e?.cause?.message, e?.cause?.code].filter((x) => x !== undefined).join(" | ");
}

/** Patterns of the TLS failures we expect (Node/undici, Bun, Deno/rustls wording). */
const UNTRUSTED = /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT|UnknownIssuer|unable to verify/;
const NO_CLIENT_CERT = /UND_ERR_SOCKET|other side closed|EPROTO|handshake|CertificateRequired|ECONNRESET/;
const WRONG_NAME = /ERR_TLS_CERT_ALTNAME_INVALID|NotValidForName|not valid for name|altnames/;

async function mustFail(tls: TlsConfig, target: string, expected: RegExp): Promise<void> {
  await withTransport(tls, target, async (t) => {
    await assert.rejects(
      async () => {
        const res = await t.fetch(target, {});
        await res.body?.cancel();
      },
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(errorText(err), expected);
        return true;
      },
    );
  });
}

describe("TLS transport matrix", () => {
  test("test certificates have the intended key formats", () => {
    assert.match(pki.clients.pkcs8.key, /^-----BEGIN PRIVATE KEY-----/);
    assert.match(pki.clients.pkcs1.key, /^-----BEGIN RSA PRIVATE KEY-----/);
    assert.match(pki.clients.ec.key, /^-----BEGIN EC PRIVATE KEY-----/);
  });

  test("A: CA only, https://127.0.0.1 (IP SAN)", async () => {
    const body = await getJson({ ca: pki.ca, insecureSkipVerify: false }, url("main"));
    assert.equal(body.ok, true);
    assert.equal(body.cn, null);
  });

  test("A2: CA only, https://localhost (DNS SAN)", async () => {
    const body = await getJson({ ca: pki.ca, insecureSkipVerify: false }, url("main", "localhost"));
    assert.equal(body.ok, true);
  });

  test("B: wrong CA must fail", async () => {
    await mustFail({ ca: pki.otherCa, insecureSkipVerify: false }, url("main"), UNTRUSTED);
  });

  test("B1: no CA must fail", async () => {
    await mustFail({ insecureSkipVerify: false }, url("main"), UNTRUSTED);
  });

  test("B2: insecure-skip-tls-verify (Deno: clear error; opt-in works only with the flag)", async () => {
    const target = url("main");
    if (runtime !== "deno") {
      const body = await getJson({ insecureSkipVerify: true }, target);
      assert.equal(body.ok, true);
      return;
    }
    await assert.rejects(createTransport({ insecureSkipVerify: true }, { server: target, env: {} }), (err: unknown) => {
      assert.ok(err instanceof UnsupportedTlsError);
      assert.equal(
        err.message,
        `insecure-skip-tls-verify is set for ${target}, but Deno has no per-client option to skip TLS verification. ` +
          "Either configure the cluster CA (certificate-authority-data) instead, or start deno with " +
          `--unsafely-ignore-certificate-errors=127.0.0.1 and set ${DENO_INSECURE_ENV}=1 to confirm you did.`,
      );
      return true;
    });
    // The opt-in alone does not disable verification: the flag does.
    const optIn = await createTransport({ insecureSkipVerify: true }, { server: target, env: { [DENO_INSECURE_ENV]: "1" } });
    try {
      await assert.rejects(optIn.fetch(target, {}), (err: unknown) => UNTRUSTED.test(errorText(err)));
    } finally {
      await optIn.close();
    }
    // With the flag (in a child deno process), the opt-in works.
    const transportUrl = new URL("../src/kube/transport.ts", import.meta.url).href;
    const code = `const { createTransport } = await import(${JSON.stringify(transportUrl)});
const t = await createTransport({ insecureSkipVerify: true }, { server: ${JSON.stringify(target)} });
const res = await t.fetch(${JSON.stringify(target)}, {});
console.log(res.status, JSON.stringify(await res.json()));
await t.close();`;
    const execPath = (globalThis as unknown as { Deno: { execPath(): string } }).Deno.execPath();
    const out = await run(execPath, ["eval", "--unsafely-ignore-certificate-errors=127.0.0.1", code], {
      ...definedEnv(),
      [DENO_INSECURE_ENV]: "1",
      NO_COLOR: "1",
    });
    // deno-lint-ignore no-control-regex
    assert.match(out.replace(/\x1b\[[0-9;]*m/g, ""), /^200 \{"ok":true/);
  });

  for (const kind of ["pkcs8", "pkcs1", "ec"] as const) {
    test(`C: mTLS with a ${kind === "pkcs8" ? "PKCS#8 RSA" : kind === "pkcs1" ? "PKCS#1 RSA" : "SEC1 EC"} client key`, async () => {
      const c = pki.clients[kind];
      const body = await getJson({ ca: pki.ca, cert: c.cert, key: c.key, insecureSkipVerify: false }, url("mtls"));
      assert.equal(body.cn, `client-${kind}`);
    });
  }

  test("F: mTLS without a client certificate must fail", async () => {
    await mustFail({ ca: pki.ca, insecureSkipVerify: false }, url("mtls"), NO_CLIENT_CERT);
  });

  test("G0: a certificate for another name must fail without tls-server-name", async () => {
    await mustFail({ ca: pki.ca, insecureSkipVerify: false }, url("named"), WRONG_NAME);
  });

  for (const host of ["127.0.0.1", "localhost"]) {
    test(`G: tls-server-name kube.internal, connecting to ${host} (Deno: clear error)`, async () => {
      const target = url("named", host);
      const tls: TlsConfig = { ca: pki.ca, insecureSkipVerify: false, serverName: "kube.internal" };
      if (runtime === "deno") {
        await assert.rejects(createTransport(tls, { server: target }), (err: unknown) => {
          assert.ok(err instanceof UnsupportedTlsError);
          assert.equal(
            err.message,
            `tls-server-name "kube.internal" is set for ${target}, but Deno's fetch cannot verify the server certificate ` +
              "against a name other than the URL host (Deno.createHttpClient has no server-name option). " +
              `Either set the cluster server to https://kube.internal:${server.ports.named} and make kube.internal ` +
              `resolve to ${host} (e.g. an /etc/hosts entry), or run appwatch on Node or Bun.`,
          );
          return true;
        });
        return;
      }
      const body = await getJson(tls, target);
      assert.equal(body.ok, true);
      assert.equal(body.sni, "kube.internal");
    });
  }

  test("G2: tls-server-name with the wrong CA must still fail", async () => {
    const tls: TlsConfig = { ca: pki.otherCa, insecureSkipVerify: false, serverName: "kube.internal" };
    if (runtime === "deno") {
      await assert.rejects(createTransport(tls, { server: url("named") }), UnsupportedTlsError);
      return;
    }
    await mustFail(tls, url("named"), UNTRUSTED);
  });

  test("H: a plain http:// server uses the same transport (TLS settings unused, no Deno error)", async () => {
    const plain = await serveFetch(() => new Response(JSON.stringify({ plain: true }), { headers: { "content-type": "application/json" } }));
    try {
      const target = `${plain.url}/api`;
      await withTransport({ ca: pki.ca, insecureSkipVerify: false }, target, async (t) => {
        assert.deepEqual(await (await t.fetch(target, {})).json(), { plain: true });
      });
      await withTransport({ insecureSkipVerify: true, serverName: "kube.internal" }, target, async (t) => {
        assert.deepEqual(await (await t.fetch(target, {})).json(), { plain: true });
      });
    } finally {
      await plain.close();
    }
  });

  test("S: streaming NDJSON through the transport, abort, connection closed", async () => {
    const base = url("main", "127.0.0.1", "");
    const id = `s-${Math.random().toString(36).slice(2)}`;
    const t = await createTransport({ ca: pki.ca, insecureSkipVerify: false }, { server: base });
    try {
      const ac = new AbortController();
      const res = await t.fetch(`${base}/watch?id=${id}`, { signal: ac.signal });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      const lines: string[] = [];
      while (lines.length < 3) {
        const { done, value } = await reader.read();
        assert.equal(done, false);
        buffer += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          lines.push(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
        }
      }
      const events = lines.map((l) => JSON.parse(l) as { type: string; object: { metadata: { resourceVersion: string } } });
      assert.deepEqual(events.slice(0, 3).map((e) => [e.type, e.object.metadata.resourceVersion]), [["ADDED", "1"], ["ADDED", "2"], ["ADDED", "3"]]);
      const reason = new Error("stop watching");
      ac.abort(reason);
      await assert.rejects(reader.read(), (err: unknown) => err === reason);
      // The server sees the connection close: /watch-closed answers when it does (the timeout is against hangs only).
      const r = await t.fetch(`${base}/watch-closed?id=${id}`, { signal: AbortSignal.timeout(10_000) });
      assert.equal(r.status, 200);
      const state = (await r.json()) as { sent: number; closed: boolean };
      assert.equal(state.closed, true);
    } finally {
      await t.close();
    }
  });
});

describe("kubeconfig → connect() over TLS", () => {
  test("E2E: kubeconfig with CA data and an EC client key (SEC1), mTLS request through KubeClient", async () => {
    const file = join(work, "e2e.yaml");
    await writeFile(file, `apiVersion: v1
kind: Config
current-context: e2e
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:${server.ports.mtls}
    certificate-authority-data: ${encodeBase64(pki.ca)}
users:
- name: ec
  user:
    client-certificate-data: ${encodeBase64(pki.clients.ec.cert)}
    client-key-data: ${encodeBase64(pki.clients.ec.key)}
contexts:
- name: e2e
  context: { cluster: test, user: ec, namespace: apps }
`);
    const client = await connect({ kubeconfig: file, env: {} });
    try {
      assert.equal(client.namespace, "apps");
      const body = await client.json({ path: "/api" }) as { cn: string };
      assert.equal(body.cn, "client-ec");
    } finally {
      await client.close();
    }
  });

  test("exec plugin client certificates: used for mTLS, rotated after a 401 (new transport)", async () => {
    const plugin = join(work, "exec-plugin.mjs");
    await copyFile(fileURLToPath(new URL("./fixtures/exec-plugin.mjs", import.meta.url)), plugin);
    await chmod(plugin, 0o755);
    const counter = join(work, "cert-runs.log");
    const file = join(work, "exec.yaml");
    const certs = JSON.stringify([[pki.clients.pkcs8.certFile, pki.clients.pkcs8.keyFile], [pki.clients.ec.certFile, pki.clients.ec.keyFile]]);
    await writeFile(file, `apiVersion: v1
kind: Config
current-context: exec
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:${server.ports.mtls}
    certificate-authority-data: ${encodeBase64(pki.ca)}
users:
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./exec-plugin.mjs
      interactiveMode: Never
      env:
      - { name: PLUGIN_MODE, value: cert }
      - { name: PLUGIN_COUNTER, value: ${JSON.stringify(counter)} }
      - { name: PLUGIN_CERTS, value: ${JSON.stringify(certs)} }
contexts:
- name: exec
  context: { cluster: test, user: plugin }
`);
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", sink: (l) => lines.push(l) });
    const client = await connect({ kubeconfig: file, env: {}, logger });
    try {
      const first = await client.json({ path: "/cn-must-be", query: { cn: "client-pkcs8" } }) as { cn: string };
      assert.equal(first.cn, "client-pkcs8");
      const second = await client.json({ path: "/cn-must-be", query: { cn: "client-ec" } }) as { cn: string };
      assert.equal(second.cn, "client-ec");
      const runs = (await readFile(counter, "utf8")).trim().split("\n");
      assert.equal(runs.length, 2);
    } finally {
      await client.close();
    }
    assert.ok(lines.some((l) => l.includes("client certificate from the exec plugin changed")));
    for (const l of lines) assert.ok(!l.includes("PRIVATE KEY"), `a log line contains key material: ${l.slice(0, 80)}`);
  });
});

function definedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return out;
}

function run(command: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout?.on("data", (c: Uint8Array) => (out += new TextDecoder().decode(c)));
    child.stderr?.on("data", (c: Uint8Array) => (err += new TextDecoder().decode(c)));
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${command} exited with ${code}: ${err}`));
    });
  });
}
