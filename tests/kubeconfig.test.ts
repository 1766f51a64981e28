/**
 * kubeconfig parsing, merging, context selection, in-cluster config and the
 * exact error texts. Runs unchanged under `tsx --test`, `deno test -A --no-check`
 * and `bun test`.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { KubeconfigError, loadClusterConfig, type LoadClusterConfigOptions } from "../src/kube/cluster-config.ts";
import type { ClusterConfig } from "../src/kube/types.ts";
import { encodeBase64, mergeKubeconfigs, parseKubeconfig } from "../src/kube/kubeconfig.ts";
import { createLogger } from "../src/log.ts";

const CA = "-----BEGIN CERTIFICATE-----\nY2EtY2VydA==\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nY2xpZW50LWNlcnQ=\n-----END CERTIFICATE-----\n";
const EC_KEY = "-----BEGIN EC PRIVATE KEY-----\nZWMta2V5\n-----END EC PRIVATE KEY-----\n";
const RSA_KEY = "-----BEGIN RSA PRIVATE KEY-----\ncnNhLWtleQ==\n-----END RSA PRIVATE KEY-----\n";

let root: string;
let home: string; // has no .kube/config
let noSa: string; // an empty service-account dir

before(async () => {
  root = await mkdtemp(join(tmpdir(), "appwatch-kubeconfig-"));
  home = join(root, "home-empty");
  noSa = join(root, "sa-none");
  await mkdir(home, { recursive: true });
  await mkdir(noSa, { recursive: true });
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

let counter = 0;
/** Writes `text` to a fresh file under root (in `sub` if given) and returns its absolute path. */
async function write(text: string, sub = `d${++counter}`, name = "config"): Promise<string> {
  const dir = join(root, sub);
  await mkdir(dir, { recursive: true });
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

/** loadClusterConfig isolated from the real environment. */
function load(options: LoadClusterConfigOptions): Promise<ClusterConfig> {
  return loadClusterConfig({ env: {}, homeDir: home, serviceAccountDir: noSa, ...options });
}

async function loadError(options: LoadClusterConfigOptions): Promise<string> {
  try {
    await load(options);
  } catch (err) {
    assert.ok(err instanceof KubeconfigError, `expected a KubeconfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail("expected loadClusterConfig to fail");
}

describe("kubeconfig fields", () => {
  let file: string;
  let dir: string;

  before(async () => {
    dir = join(root, "fields");
    await mkdir(join(dir, "certs"), { recursive: true });
    await writeFile(join(dir, "ca.crt"), CA);
    await writeFile(join(dir, "certs", "client.crt"), CERT);
    await writeFile(join(dir, "certs", "client.key"), RSA_KEY);
    file = await write(
      `apiVersion: v1
kind: Config
preferences: {}
current-context: token
clusters:
- name: data
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: ${encodeBase64(CA)}
    disable-compression: true
    some-future-field: { kept: true }
- name: files
  cluster:
    server: https://files.example:6443/prefix
    certificate-authority: ca.crt
- name: insecure
  cluster:
    server: https://10.0.0.3:6443
    insecure-skip-tls-verify: true
    tls-server-name: kube.internal
- name: noscheme-plain
  cluster:
    server: 127.0.0.1:8080
- name: noscheme-tls
  cluster:
    server: 127.0.0.1:6443
    certificate-authority: ${join(dir, "ca.crt")}
- name: exec-cluster
  cluster:
    server: https://exec.example
    certificate-authority-data: ${encodeBase64(CA)}
    tls-server-name: exec.internal
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: { audience: appwatch }
    - name: other
      extension: { ignored: true }
users:
- name: token
  user: { token: abc.def.ghi }
- name: files
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
- name: data
  user:
    client-certificate-data: ${encodeBase64(CERT)}
    client-key-data: ${encodeBase64(EC_KEY)}
    token: also-a-token
- name: tokenfile
  user: { tokenFile: secrets/token, token: ignored-when-tokenFile-is-set }
- name: basic
  user: { username: admin, password: "p@ss:word" }
- name: exec-v1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, prod]
      env:
      - { name: AWS_PROFILE, value: prod }
      installHint: install get-token from example.com
      interactiveMode: Never
      provideClusterInfo: true
- name: exec-v1beta1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: null
      env: null
contexts:
- name: token
  context: { cluster: data, user: token, namespace: apps }
- name: files
  context: { cluster: files, user: files, namespace: ns1 }
- name: data
  context: { cluster: data, user: data }
- name: insecure
  context: { cluster: insecure, user: tokenfile }
- name: basic
  context: { cluster: data, user: basic }
- name: exec-v1
  context: { cluster: exec-cluster, user: exec-v1 }
- name: exec-v1beta1
  context: { cluster: data, user: exec-v1beta1 }
- name: anonymous
  context: { cluster: data }
- name: noscheme-plain
  context: { cluster: noscheme-plain, user: token }
- name: noscheme-tls
  context: { cluster: noscheme-tls, user: token }
`,
      "fields",
    );
  });

  const src = (ctx: string) => `kubeconfig ${file}, context "${ctx}"`;
  const cases: { context: string; expect: () => ClusterConfig }[] = [
    {
      context: "token",
      expect: () => ({
        server: "https://10.0.0.1:6443",
        namespace: "apps",
        tls: { ca: CA, insecureSkipVerify: false },
        auth: { type: "token", token: "abc.def.ghi" },
        source: src("token"),
      }),
    },
    {
      context: "files",
      expect: () => ({
        server: "https://files.example:6443/prefix",
        namespace: "ns1",
        tls: { ca: CA, cert: CERT, key: RSA_KEY, insecureSkipVerify: false },
        auth: { type: "none" },
        source: src("files"),
      }),
    },
    {
      context: "data",
      expect: () => ({
        server: "https://10.0.0.1:6443",
        namespace: undefined,
        tls: { ca: CA, cert: CERT, key: EC_KEY, insecureSkipVerify: false },
        auth: { type: "token", token: "also-a-token" },
        source: src("data"),
      }),
    },
    {
      context: "insecure",
      expect: () => ({
        server: "https://10.0.0.3:6443",
        namespace: undefined,
        tls: { insecureSkipVerify: true, serverName: "kube.internal" },
        auth: { type: "tokenFile", path: join(dir, "secrets", "token") },
        source: src("insecure"),
      }),
    },
    {
      context: "basic",
      expect: () => ({
        server: "https://10.0.0.1:6443",
        namespace: undefined,
        tls: { ca: CA, insecureSkipVerify: false },
        auth: { type: "basic", username: "admin", password: "p@ss:word" },
        source: src("basic"),
      }),
    },
    {
      context: "exec-v1",
      expect: () => ({
        server: "https://exec.example",
        namespace: undefined,
        tls: { ca: CA, insecureSkipVerify: false, serverName: "exec.internal" },
        auth: {
          type: "exec",
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: join(dir, "bin", "get-token"),
            args: ["--cluster", "prod"],
            env: [{ name: "AWS_PROFILE", value: "prod" }],
            installHint: "install get-token from example.com",
            interactiveMode: "Never",
            provideClusterInfo: true,
          },
          cluster: {
            server: "https://exec.example",
            certificateAuthorityData: encodeBase64(CA),
            tlsServerName: "exec.internal",
            config: { audience: "appwatch" },
          },
        },
        source: src("exec-v1"),
      }),
    },
    {
      context: "exec-v1beta1",
      expect: () => ({
        server: "https://10.0.0.1:6443",
        namespace: undefined,
        tls: { ca: CA, insecureSkipVerify: false },
        auth: {
          type: "exec",
          exec: {
            apiVersion: "client.authentication.k8s.io/v1beta1",
            command: "aws",
            args: [],
            env: [],
            interactiveMode: "IfAvailable",
            provideClusterInfo: false,
          },
        },
        source: src("exec-v1beta1"),
      }),
    },
    {
      context: "anonymous",
      expect: () => ({
        server: "https://10.0.0.1:6443",
        namespace: undefined,
        tls: { ca: CA, insecureSkipVerify: false },
        auth: { type: "none" },
        source: src("anonymous"),
      }),
    },
    {
      context: "noscheme-plain",
      expect: () => ({
        server: "http://127.0.0.1:8080",
        namespace: undefined,
        tls: { insecureSkipVerify: false },
        auth: { type: "token", token: "abc.def.ghi" },
        source: src("noscheme-plain"),
      }),
    },
    {
      context: "noscheme-tls",
      expect: () => ({
        server: "https://127.0.0.1:6443",
        namespace: undefined,
        tls: { ca: CA, insecureSkipVerify: false },
        auth: { type: "token", token: "abc.def.ghi" },
        source: src("noscheme-tls"),
      }),
    },
  ];

  for (const c of cases) {
    test(`context "${c.context}"`, async () => {
      assert.deepEqual(await load({ kubeconfig: file, context: c.context }), c.expect());
    });
  }

  test("current-context is used when no context is given", async () => {
    assert.equal((await load({ kubeconfig: file })).source, src("token"));
  });

  test("the log line names the source and auth type but no secret", async () => {
    const lines: string[] = [];
    await load({ kubeconfig: file, context: "basic", logger: createLogger({ sink: (l) => lines.push(l) }) });
    assert.equal(lines.length, 1);
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.equal(record.msg, "cluster config loaded");
    assert.equal(record.source, src("basic"));
    assert.equal(record.auth, "basic");
    assert.ok(!lines[0]!.includes("p@ss"));
  });
});

describe("file selection and KUBECONFIG merging", () => {
  test("KUBECONFIG: first file to define a name wins; current-context from the first file that sets it", async () => {
    const a = await write(
      `clusters:
- name: shared
  cluster: { server: https://a.example, certificate-authority: ca-a.crt }
contexts:
- name: ctx-a
  context: { cluster: shared, user: shared }
`,
      "merge-a",
    );
    await writeFile(join(root, "merge-a", "ca-a.crt"), CA);
    const b = await write(
      `current-context: ctx-b
clusters:
- name: shared
  cluster: { server: https://b.example }
users:
- name: shared
  user: { tokenFile: token-b }
contexts:
- name: ctx-b
  context: { cluster: shared, user: shared, namespace: from-b }
- name: ctx-a
  context: { cluster: nowhere }
`,
      "merge-b",
    );
    const c = await write(
      `current-context: ctx-c
contexts:
- name: ctx-c
  context: { cluster: shared }
`,
      "merge-c",
    );
    const missing = join(root, "merge-missing", "config");
    const env = { KUBECONFIG: [a, "", b, missing, c, a].join(delimiter) };
    const config = await load({ env });
    assert.deepEqual(config, {
      server: "https://a.example",
      namespace: "from-b",
      tls: { ca: CA, insecureSkipVerify: false },
      // Relative paths resolve against the file that defined the entry.
      auth: { type: "tokenFile", path: join(root, "merge-b", "token-b") },
      source: `kubeconfig ${b}, context "ctx-b"`,
    });
    // ctx-a comes from file a (first), not the broken one in b.
    assert.equal((await load({ env, context: "ctx-a" })).server, "https://a.example");
    assert.equal((await load({ env, context: "ctx-c" })).source, `kubeconfig ${c}, context "ctx-c"`);
  });

  test("mergeKubeconfigs on parsed files", () => {
    const one = parseKubeconfig("current-context: ''\nclusters: [{name: x, cluster: {server: https://one}}]\n", "/one");
    const two = parseKubeconfig("current-context: two\nclusters: [{name: x, cluster: {server: https://two}}, {name: y}]\n", "/two");
    const merged = mergeKubeconfigs([one, two]);
    assert.deepEqual(merged.currentContext, { name: "two", file: "/two" });
    assert.deepEqual(merged.clusters.get("x"), { name: "x", value: { server: "https://one" }, file: "/one" });
    assert.deepEqual(merged.clusters.get("y"), { name: "y", value: {}, file: "/two" });
  });

  test("an explicit kubeconfig wins over KUBECONFIG; ~/.kube/config is used when KUBECONFIG is unset", async () => {
    const explicit = await write("current-context: e\nclusters: [{name: c, cluster: {server: https://explicit}}]\ncontexts: [{name: e, context: {cluster: c}}]\n");
    const envFile = await write("current-context: e\nclusters: [{name: c, cluster: {server: https://env}}]\ncontexts: [{name: e, context: {cluster: c}}]\n");
    const homeDir = join(root, "home-with-config");
    await mkdir(join(homeDir, ".kube"), { recursive: true });
    await writeFile(join(homeDir, ".kube", "config"), "current-context: e\nclusters: [{name: c, cluster: {server: https://home}}]\ncontexts: [{name: e, context: {cluster: c}}]\n");
    assert.equal((await load({ kubeconfig: explicit, env: { KUBECONFIG: envFile } })).server, "https://explicit");
    assert.equal((await load({ env: { KUBECONFIG: envFile }, homeDir })).server, "https://env");
    assert.equal((await load({ homeDir })).server, "https://home");
    assert.equal((await load({ env: { HOME: homeDir }, homeDir: undefined })).server, "https://home");
  });

  test("explicit --context overrides current-context; unknown context is an error", async () => {
    const file = await write("current-context: one\nclusters: [{name: c, cluster: {server: https://x}}]\ncontexts:\n- {name: one, context: {cluster: c, namespace: n1}}\n- {name: two, context: {cluster: c, namespace: n2}}\n");
    assert.equal((await load({ kubeconfig: file })).namespace, "n1");
    assert.equal((await load({ kubeconfig: file, context: "two" })).namespace, "n2");
    assert.equal(
      await loadError({ kubeconfig: file, context: "three" }),
      `kubeconfig ${file}: context "three" not found (available: "one", "two")`,
    );
  });
});

describe("in-cluster", () => {
  let sa: string;
  before(async () => {
    sa = join(root, "sa");
    await mkdir(sa, { recursive: true });
    await writeFile(join(sa, "token"), "sa-token\n");
    await writeFile(join(sa, "ca.crt"), CA);
    await writeFile(join(sa, "namespace"), "flyte\n");
  });
  const env = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

  test("used when no kubeconfig exists and the service env is set", async () => {
    assert.deepEqual(await load({ env, serviceAccountDir: sa }), {
      server: "https://10.96.0.1:443",
      namespace: "flyte",
      tls: { ca: CA, insecureSkipVerify: false },
      auth: { type: "tokenFile", path: join(sa, "token") },
      source: "in-cluster",
    });
  });

  test("used when every KUBECONFIG file is missing; IPv6 host is bracketed; POD_NAMESPACE wins", async () => {
    const config = await load({
      env: { KUBECONFIG: join(root, "nope", "config"), KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443", POD_NAMESPACE: "other" },
      serviceAccountDir: sa,
    });
    assert.equal(config.server, "https://[fd00::1]:6443");
    assert.equal(config.namespace, "other");
  });

  test("inCluster: true skips kubeconfig files; inCluster: false never falls back", async () => {
    const file = await write("current-context: e\nclusters: [{name: c, cluster: {server: https://file}}]\ncontexts: [{name: e, context: {cluster: c}}]\n");
    assert.equal((await load({ env: { ...env, KUBECONFIG: file }, serviceAccountDir: sa, inCluster: true })).source, "in-cluster");
    assert.equal(
      await loadError({ env, serviceAccountDir: sa, inCluster: false }),
      `no cluster configuration: no kubeconfig found (looked at ${join(home, ".kube", "config")}), and in-cluster configuration is disabled`,
    );
  });

  test("KUBECONFIG naming only missing files: client-go's warning, then in-cluster if there is one, else an error naming the files (never ~/.kube/config)", async () => {
    const homeConfig = await write("current-context: e\nclusters: [{name: c, cluster: {server: https://home}}]\ncontexts: [{name: e, context: {cluster: c}}]\n", "home-missing/.kube");
    const gone = [join(root, "gone", "a"), join(root, "gone", "b")];
    const lines: string[] = [];
    const logger = createLogger({ sink: (l) => lines.push(l) });
    assert.equal(
      await loadError({ env: { KUBECONFIG: gone.join(delimiter) }, homeDir: join(root, "home-missing"), logger }),
      `no cluster configuration: KUBECONFIG names only missing files (${gone.join(", ")}), and not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)`,
    );
    assert.ok(homeConfig.startsWith(join(root, "home-missing")), "a ~/.kube/config that KUBECONFIG hides");
    const warn = lines.map((l) => JSON.parse(l) as { level: string; msg: string; missing?: string[] }).find((l) => l.msg === "KUBECONFIG: config not found");
    assert.deepEqual([warn?.level, warn?.missing], ["warn", gone]);
    assert.equal(await loadError({ env: { KUBECONFIG: delimiter } }), `no cluster configuration: KUBECONFIG (${JSON.stringify(delimiter)}) names no file, and not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)`);
    // One existing file among missing ones is enough (the missing ones are skipped without a warning).
    const one = await write("current-context: e\nclusters: [{name: c, cluster: {server: https://one}}]\ncontexts: [{name: e, context: {cluster: c}}]\n");
    lines.length = 0;
    assert.equal((await load({ env: { KUBECONFIG: [gone[0], one].join(delimiter) }, logger })).server, "https://one");
    assert.ok(!lines.some((l) => l.includes("config not found")));
  });

  test("errors: nothing configured, missing token, empty token", async () => {
    assert.equal(
      await loadError({}),
      `no cluster configuration: no kubeconfig found (looked at ${join(home, ".kube", "config")}), and not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)`,
    );
    assert.equal(
      await loadError({ env }),
      `in-cluster: cannot read service account token ${join(noSa, "token")} (ENOENT)`,
    );
    const empty = join(root, "sa-empty");
    await mkdir(empty, { recursive: true });
    await writeFile(join(empty, "token"), "  \n");
    assert.equal(await loadError({ env, serviceAccountDir: empty }), `in-cluster: service account token ${join(empty, "token")} is empty`);
    assert.equal(
      await loadError({ env, serviceAccountDir: sa, context: "dev" }),
      `context "dev" was requested but no kubeconfig was found (looked at ${join(home, ".kube", "config")})`,
    );
  });
});

describe("bad kubeconfigs: exact error texts", () => {
  const base = (user: string, cluster = "server: https://k.example") => `current-context: dev
clusters:
- name: k
  cluster: { ${cluster} }
users:
- name: bob
  user: ${user}
contexts:
- name: dev
  context: { cluster: k, user: bob }
`;
  const cases: { name: string; text: string; context?: string; error: (file: string) => string }[] = [
    {
      name: "bad YAML",
      text: "current-context: a: b\n",
      error: (f) => `kubeconfig ${f}: not valid YAML at line 1, column 18: Nested mappings are not allowed in compact mappings`,
    },
    {
      name: "top level is not a mapping",
      text: "- just\n- a list\n",
      error: (f) => `kubeconfig ${f}: the top level must be a mapping (got a list)`,
    },
    {
      name: "clusters is not a list",
      text: "clusters: {}\n",
      error: (f) => `kubeconfig ${f}: clusters must be a list`,
    },
    {
      name: "entry without a name",
      text: "users:\n- user: {token: x}\n",
      error: (f) => `kubeconfig ${f}: users[0].name is required`,
    },
    {
      name: "duplicate names",
      text: "clusters:\n- {name: k, cluster: {server: https://a}}\n- {name: k, cluster: {server: https://b}}\n",
      error: (f) => `kubeconfig ${f}: duplicate cluster name "k"`,
    },
    {
      name: "no current-context",
      text: "clusters: []\ncontexts: [{name: a, context: {cluster: k}}]\n",
      error: (f) => `kubeconfig ${f}: current-context is not set and no context was given`,
    },
    {
      name: "current-context names a missing context",
      text: "current-context: gone\ncontexts: [{name: a, context: {cluster: k}}, {name: b, context: {cluster: k}}]\n",
      error: (f) => `kubeconfig ${f}: context "gone" (current-context) not found (available: "a", "b")`,
    },
    {
      name: "missing server",
      text: base("{ token: t }", "certificate-authority-data: ''"),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": server is not set`,
    },
    {
      name: "bad server URL",
      text: base("{ token: t }", "server: 'https://exa mple'"),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": server "https://exa mple" is not a valid URL`,
    },
    {
      name: "context without a cluster",
      text: "current-context: dev\ncontexts: [{name: dev, context: {user: bob}}]\n",
      error: (f) => `kubeconfig ${f}: context "dev": cluster is not set`,
    },
    {
      name: "cluster referenced but missing",
      text: "current-context: dev\ncontexts: [{name: dev, context: {cluster: k}}]\n",
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k" not found`,
    },
    {
      name: "user referenced but missing",
      text: "current-context: dev\nclusters: [{name: k, cluster: {server: https://k}}]\ncontexts: [{name: dev, context: {cluster: k, user: bob}}]\n",
      error: (f) => `kubeconfig ${f}: context "dev": user "bob" not found`,
    },
    {
      name: "bad base64 in client-key-data",
      text: base(`{ client-certificate-data: ${encodeBase64(CERT)}, client-key-data: "not base64!" }`),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": client-key-data is not valid base64`,
    },
    {
      name: "bad base64 in certificate-authority-data",
      text: base("{ token: t }", "server: https://k, certificate-authority-data: 'abc'"),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": certificate-authority-data is not valid base64`,
    },
    {
      name: "base64 that is not PEM",
      text: base("{ token: t }", `server: https://k, certificate-authority-data: ${encodeBase64("hello")}`),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": certificate-authority-data does not decode to PEM data`,
    },
    {
      name: "missing certificate-authority file (relative path resolved)",
      text: base("{ token: t }", "server: https://k, certificate-authority: missing/ca.crt"),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": cannot read certificate-authority ${join(f, "..", "missing", "ca.crt")} (ENOENT)`,
    },
    {
      name: "wrong field type",
      text: base("{ token: 12345 }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": token must be a string`,
    },
    {
      name: "wrong boolean",
      text: base("{ token: t }", "server: https://k, insecure-skip-tls-verify: 'yes'"),
      error: (f) => `kubeconfig ${f}: context "dev": cluster "k": insecure-skip-tls-verify must be a boolean (true or false)`,
    },
    {
      name: "insecure with a CA",
      text: base("{ token: t }", `server: https://k, insecure-skip-tls-verify: true, certificate-authority-data: ${encodeBase64(CA)}`),
      error: (f) =>
        `kubeconfig ${f}: context "dev": cluster "k": insecure-skip-tls-verify cannot be combined with certificate-authority or certificate-authority-data (kubectl rejects it too); remove one`,
    },
    {
      name: "client certificate without key",
      text: base(`{ client-certificate-data: ${encodeBase64(CERT)} }`),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": client-certificate is set but client-key is not`,
    },
    {
      name: "encrypted client key",
      text: base(
        `{ client-certificate-data: ${encodeBase64(CERT)}, client-key-data: ${encodeBase64("-----BEGIN ENCRYPTED PRIVATE KEY-----\nx\n-----END ENCRYPTED PRIVATE KEY-----\n")} }`,
      ),
      error: (f) =>
        `kubeconfig ${f}: context "dev": user "bob": client-key-data has unsupported key type "ENCRYPTED PRIVATE KEY" (supported: RSA PRIVATE KEY, PRIVATE KEY, EC PRIVATE KEY; decrypt encrypted keys first)`,
    },
    {
      name: "token and basic auth together",
      text: base("{ token: t, username: u, password: p }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": more than one authentication method (token and username/password); use one`,
    },
    {
      name: "exec and token together",
      text: base("{ token: t, exec: { apiVersion: client.authentication.k8s.io/v1, command: x } }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": more than one authentication method (exec and token); use one`,
    },
    {
      name: "exec with an unsupported apiVersion",
      text: base("{ exec: { apiVersion: client.authentication.k8s.io/v1alpha1, command: x } }"),
      error: (f) =>
        `kubeconfig ${f}: context "dev": user "bob": exec.apiVersion "client.authentication.k8s.io/v1alpha1" is not supported (use client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1)`,
    },
    {
      name: "exec without a command",
      text: base("{ exec: { apiVersion: client.authentication.k8s.io/v1 } }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": exec.command is not set`,
    },
    {
      name: "exec env entry without a value",
      text: base("{ exec: { apiVersion: client.authentication.k8s.io/v1, command: x, env: [{ name: A }] } }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": exec.env[0].value is required`,
    },
    {
      name: "exec with a bad interactiveMode",
      text: base("{ exec: { apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Sometimes } }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": exec.interactiveMode must be one of Never, IfAvailable, Always`,
    },
    {
      name: "auth-provider",
      text: base("{ auth-provider: { name: gcp } }"),
      error: (f) =>
        `kubeconfig ${f}: context "dev": user "bob": auth-provider "gcp" is not supported; use an exec credential plugin instead (e.g. gke-gcloud-auth-plugin, kubelogin)`,
    },
    {
      name: "impersonation",
      text: base("{ token: t, as: admin }"),
      error: (f) => `kubeconfig ${f}: context "dev": user "bob": impersonation (as) is not supported`,
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const file = await write(c.text);
      assert.equal(await loadError({ kubeconfig: file, context: c.context }), c.error(file));
    });
  }

  test("missing explicit kubeconfig", async () => {
    const file = join(root, "does-not-exist", "config");
    assert.equal(await loadError({ kubeconfig: file }), `kubeconfig ${file}: cannot read file (ENOENT)`);
  });

  test("an error in a later KUBECONFIG file names that file", async () => {
    const good = await write("current-context: dev\n");
    const bad = await write("contexts: [{name: dev, context: {cluster: k}}]\nclusters: [{name: k, cluster: {server: https://k, certificate-authority-data: '@@@@'}}]\n");
    assert.equal(
      await loadError({ env: { KUBECONFIG: [good, bad].join(delimiter) } }),
      `kubeconfig ${bad}: context "dev": cluster "k": certificate-authority-data is not valid base64`,
    );
  });

  test("the message never contains the secret values", async () => {
    const file = await write(base("{ token: super-secret-token, username: u, password: hunter2 }"));
    const message = await loadError({ kubeconfig: file });
    assert.ok(!message.includes("super-secret-token") && !message.includes("hunter2"));
  });
});
