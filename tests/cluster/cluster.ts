/**
 * A real kube-apiserver + etcd on loopback, for tests (docs/real-cluster.md).
 *
 * The binaries come from `scripts/build-kube.sh` (built from the Go module proxy, cached outside
 * the repo). Everything binds 127.0.0.1 only; the API server uses a serving certificate signed by
 * a CA made here with the `openssl` CLI (clients verify TLS, no insecure mode), a static admin
 * token (group `system:masters`) and RBAC. Only node-compatible APIs (`node:child_process`,
 * `node:fs`, `node:net`) and the project's per-runtime TLS transport are used, so the harness works
 * from Node (tsx), Deno and Bun tests.
 *
 * ```ts
 * const cluster = await startRealCluster({ watchCache: false });
 * try { await cluster.request("GET", "/api/v1/namespaces"); } finally { await cluster.stop(); }
 * ```
 *
 * Cleanup: `stop()`; also on process exit, SIGINT, SIGTERM and uncaught exceptions (Node emits
 * `exit` then); and a detached watchdog shell SIGKILLs etcd + kube-apiserver and removes the temp
 * dir within about a second if the test process disappears without running any of those (SIGKILL).
 * @module
 */
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Buffer } from "node:buffer";
import { parseAllDocuments, stringify } from "yaml";
import { createTransport, type Transport } from "../../src/kube/transport.ts";

/** Options of {@link startRealCluster}. */
export interface RealClusterOptions {
  /** kube-apiserver `--watch-cache` (default true). False makes every watch/list go to etcd. */
  watchCache?: boolean;
  /** kube-apiserver `--feature-gates`, e.g. `"WatchList=false"`. */
  featureGates?: string;
  /** Where the binaries are (default: env `APPWATCH_KUBE_BIN_DIR`, else the build script's default). */
  binDir?: string;
  /**
   * Where to keep the logs (etcd.log, kube-apiserver.log). Default: a temp dir that `stop()`
   * removes (set env `APPWATCH_CLUSTER_KEEP=1` to keep it). A given `logDir` is never removed.
   */
  logDir?: string;
  /** Extra kube-apiserver flags (`--name=value`), appended last. */
  extraApiserverArgs?: string[];
  /** How long to wait for etcd `/health` and kube-apiserver `/readyz` (default 90 000 ms). */
  readyTimeoutMs?: number;
  /** Install the Knative CRDs from deploy/crds and wait until they are Established (default true). */
  installCrds?: boolean;
}

/** The answer of {@link RealCluster.request}. */
export interface RealResponse {
  status: number;
  /** Parsed JSON when the server sent JSON, else the text. */
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Options of {@link RealCluster.request}. */
export interface RequestOptions {
  /** Bearer token (default: the admin token). */
  token?: string;
  /** Content type of the body (default `application/json`; e.g. `application/merge-patch+json` for PATCH). */
  contentType?: string;
  signal?: AbortSignal;
}

/** One result of {@link RealCluster.applyManifests}. */
export interface AppliedObject {
  kind: string;
  namespace?: string;
  name: string;
  /** `created` (POST), `updated` (PUT after 409). */
  action: "created" | "updated";
  status: number;
  // deno-lint-ignore no-explicit-any
  object: any;
}

/** A running cluster. */
export interface RealCluster {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** Admin bearer token (user `appwatch-admin`, group `system:masters`), from a static token file. */
  token: string;
  /** The CA that signed the serving certificate. */
  caPem: string;
  /** Admin kubeconfig (server, certificate-authority-data, token). */
  kubeconfigPath: string;
  /** `http://127.0.0.1:<port>` */
  etcdUrl: string;
  /** The temp dir with certs, data and logs. */
  dir: string;
  /** The directory with etcd.log and kube-apiserver.log. */
  logDir: string;
  /** The binaries used. */
  binDir: string;
  /** Runs etcdctl against this etcd (`--endpoints` is added); resolves to stdout, rejects with stderr. */
  etcdctl(args: string[]): Promise<string>;
  /** Compacts etcd at its current revision; returns that revision. */
  compact(): Promise<string>;
  /** Stops kube-apiserver and starts it again on the same port and etcd; waits for `/readyz`. */
  restartApiserver(): Promise<void>;
  /** Admin REST helper: JSON in, JSON out. Never throws for HTTP errors. */
  request(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<RealResponse>;
  /** A raw `fetch` of a path on the API server with the CA trusted and the bearer token set (default: admin). */
  fetch(path: string, init?: RequestInit & { token?: string }): Promise<Response>;
  /** Mints a service-account token with the TokenRequest API (like `kubectl create token`). */
  serviceAccountToken(namespace: string, name: string, expirationSeconds?: number): Promise<string>;
  /**
   * Creates (POST) or, on 409, replaces (PUT) every object in the given YAML files or directories
   * (like `kubectl apply`, without the three-way merge). With `dryRun`, `?dryRun=All` (server-side dry run).
   */
  applyManifests(paths: string[], options?: { dryRun?: boolean }): Promise<AppliedObject[]>;
  /** The last `lines` lines of kube-apiserver's log. */
  apiserverLogTail(lines?: number): string;
  /** Kills both processes and removes the temp dir; idempotent. */
  stop(): Promise<void>;
}

const HERE = fileURLToPath(new URL(".", import.meta.url));
/** The repository root. */
export const REPO_ROOT: string = resolve(HERE, "../..");
/** The repo's Knative CRDs. */
export const CRD_DIR: string = join(REPO_ROOT, "deploy", "crds");

function moduleVersion(goMod: string, module: string): string | undefined {
  try {
    const text = readFileSync(join(HERE, "go", goMod, "go.mod"), "utf8");
    const m = new RegExp(`^\\s*(?:require\\s+)?${module.replace(/[.]/g, "\\.")}\\s+v(\\S+)`, "m").exec(text);
    return m?.[1];
  } catch {
    return undefined;
  }
}

/** The versions pinned by the committed scratch modules (tests/cluster/go). */
export const KUBE_VERSION: string = moduleVersion("kube", "k8s.io/kubernetes") ?? "unknown";
export const ETCD_VERSION: string = moduleVersion("etcd", "go.etcd.io/etcd/server/v3") ?? "unknown";

/** The build script's default bin dir (keep in sync with scripts/build-kube.sh). */
export function defaultBinDir(): string {
  const env = process.env.APPWATCH_KUBE_BIN_DIR;
  if (env) return env;
  return join(homedir(), ".cache", "appwatch", "kube", `v${KUBE_VERSION}-etcd${ETCD_VERSION}`);
}

const BINARIES = ["kube-apiserver", "etcd", "etcdctl"] as const;

/** Whether the binaries (and openssl) are there; `reason` says what to do when not. */
export function realClusterAvailable(binDir: string = defaultBinDir()): { ok: boolean; binDir: string; reason?: string } {
  for (const bin of BINARIES) {
    try {
      accessSync(join(binDir, bin), fsConstants.X_OK);
    } catch {
      return { ok: false, binDir, reason: `${join(binDir, bin)} is missing or not executable; run scripts/build-kube.sh (or set APPWATCH_KUBE_BIN_DIR)` };
    }
  }
  const ssl = spawnSync("openssl", ["version"], { stdio: "ignore" });
  if (ssl.error || ssl.status !== 0) return { ok: false, binDir, reason: "the openssl CLI is not on PATH (needed for the test certificates)" };
  if (process.platform !== "linux") return { ok: false, binDir, reason: `the real-cluster harness supports Linux only (this is ${process.platform})` };
  return { ok: true, binDir };
}

// ------------------------------------------------------------------------------- small helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function run(cmd: string, args: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(cmd, args, { cwd: options.cwd, timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${cmd} ${args.join(" ")} failed: ${String(stderr).trim() || err.message}`));
      } else {
        resolvePromise(String(stdout));
      }
    });
  });
}

/** `count` distinct free loopback ports (held open together so they differ). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () =>
      new Promise<ReturnType<typeof createServer>>((resolvePromise, reject) => {
        const s = createServer();
        s.once("error", reject);
        s.listen(0, "127.0.0.1", () => resolvePromise(s));
      })),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (!addr || typeof addr === "string") throw new Error("no port");
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}

function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return `(no log at ${file})`;
  }
}

function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// --------------------------------------------------------------------------- process bookkeeping

interface Proc {
  name: string;
  child: ChildProcess;
  exited: boolean;
  exitCode: number | null;
  exitSignal: string | null;
  exitPromise: Promise<void>;
}

/** Starts `bin args` with stdout+stderr appended to `log`; the pid is the binary's (sh `exec`). */
function startProc(name: string, bin: string, args: string[], log: string): Proc {
  const child = spawn("/bin/sh", ["-c", 'exec "$0" "$@" >>"$APPWATCH_LOG" 2>&1', bin, ...args], {
    stdio: "ignore",
    env: { ...process.env, APPWATCH_LOG: log },
  });
  const proc: Proc = { name, child, exited: false, exitCode: null, exitSignal: null, exitPromise: Promise.resolve() };
  proc.exitPromise = new Promise<void>((r) => {
    child.once("exit", (code, signal) => {
      proc.exited = true;
      proc.exitCode = code;
      proc.exitSignal = signal;
      r();
    });
    child.once("error", () => {
      proc.exited = true;
      r();
    });
  });
  // A forgotten stop() must not keep the test process alive; the exit hooks kill it then.
  child.unref();
  return proc;
}

async function stopProc(proc: Proc | undefined, graceMs = 5_000): Promise<void> {
  if (!proc || proc.exited) return;
  try {
    proc.child.kill("SIGTERM");
  } catch { /* gone */ }
  const killed = await Promise.race([proc.exitPromise.then(() => true), sleep(graceMs).then(() => false)]);
  if (!killed) {
    try {
      proc.child.kill("SIGKILL");
    } catch { /* gone */ }
    await Promise.race([proc.exitPromise, sleep(2_000)]);
  }
}

/** Every live cluster's synchronous last-resort cleanup. */
const live = new Set<() => void>();
let hooksInstalled = false;

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const cleanupAll = () => {
    for (const fn of [...live]) {
      try {
        fn();
      } catch { /* best effort */ }
    }
  };
  process.on("exit", cleanupAll);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      cleanupAll();
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
  }
}

/**
 * A detached shell that waits for this process to go away, then SIGKILLs the pids listed in
 * `pidFile` and removes `removeDir` (if given). It exits by itself after cleaning up; stop() kills it.
 */
function startWatchdog(pidFile: string, removeDir: string | undefined): ChildProcess {
  const script = [
    'while kill -0 "$APPWATCH_PARENT" 2>/dev/null; do sleep 1; done',
    'for p in $(cat "$APPWATCH_PIDS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done',
    'sleep 0.5',
    'if [ -n "$APPWATCH_RMDIR" ]; then rm -rf "$APPWATCH_RMDIR"; fi',
  ].join("\n");
  const child = spawn("/bin/sh", ["-c", script], {
    stdio: "ignore",
    detached: true,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", APPWATCH_PARENT: String(process.pid), APPWATCH_PIDS: pidFile, APPWATCH_RMDIR: removeDir ?? "" },
  });
  child.unref();
  return child;
}

// ---------------------------------------------------------------------------------------- PKI

async function makePki(dir: string): Promise<void> {
  const ssl = (args: string[]) => run("openssl", args, { cwd: dir });
  await ssl([
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", "ca.key", "-out", "ca.crt", "-days", "7", "-subj", "/CN=appwatch-real-cluster-ca",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await ssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "apiserver.key"]);
  writeFileSync(
    join(dir, "apiserver.ext"),
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n",
  );
  await ssl(["req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver", "-out", "apiserver.csr"]);
  await ssl([
    "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", `0x${randomToken().slice(0, 16)}`,
    "-days", "7", "-out", "apiserver.crt", "-extfile", "apiserver.ext",
  ]);
  // Service-account token signing key (RS256, the default issuer algorithm).
  await ssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"]);
  await ssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
}

// ------------------------------------------------------------------------------------ manifests

/** All objects in YAML files / directories (directories: *.yaml|*.yml, recursively, sorted). */
// deno-lint-ignore no-explicit-any
export function readManifests(paths: string[]): any[] {
  const files: string[] = [];
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) {
      for (const entry of readdirSync(p).sort()) walk(join(p, entry));
    } else if (/\.ya?ml$/.test(p)) {
      files.push(p);
    }
  };
  for (const p of paths) {
    if (!existsSync(p)) throw new Error(`no such manifest file or directory: ${p}`);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
  // deno-lint-ignore no-explicit-any
  const objects: any[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const obj = doc.toJS();
      if (obj === null || obj === undefined) continue;
      if (typeof obj !== "object" || !obj.apiVersion || !obj.kind || !obj.metadata?.name) {
        throw new Error(`${file}: a document without apiVersion/kind/metadata.name`);
      }
      objects.push(obj);
    }
  }
  // Like kubectl's ordering: namespaces and CRDs first, bindings last.
  const rank = (kind: string) =>
    ({ Namespace: 0, CustomResourceDefinition: 1, ServiceAccount: 2, ClusterRole: 3, Role: 3, ClusterRoleBinding: 4, RoleBinding: 4 } as Record<string, number>)[kind] ?? 5;
  return objects.map((o, i) => ({ o, i })).sort((a, b) => rank(a.o.kind) - rank(b.o.kind) || a.i - b.i).map((x) => x.o);
}

// ---------------------------------------------------------------------------------------- start

/**
 * Starts etcd and kube-apiserver on free loopback ports, waits for `/readyz`, installs the Knative
 * CRDs and waits for them to be Established. Throws (after cleaning up, keeping the logs and
 * printing their path) if anything fails.
 */
export async function startRealCluster(options: RealClusterOptions = {}): Promise<RealCluster> {
  const binDir = options.binDir ?? defaultBinDir();
  const available = realClusterAvailable(binDir);
  if (!available.ok) throw new Error(`real cluster not available: ${available.reason}`);
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const keep = /^(1|true|yes)$/i.test(process.env.APPWATCH_CLUSTER_KEEP ?? "");

  const dir = mkdtempSync(join(tmpdir(), "appwatch-cluster-"));
  const logDir = options.logDir ? resolve(options.logDir) : join(dir, "logs");
  mkdirSync(logDir, { recursive: true });
  const etcdLog = join(logDir, "etcd.log");
  const apiLog = join(logDir, "kube-apiserver.log");
  const pidFile = join(dir, "pids");
  writeFileSync(pidFile, "");

  installExitHooks();
  let etcd: Proc | undefined;
  let api: Proc | undefined;
  let transport: Transport | undefined;
  let stopped = false;
  let stopping: Promise<void> | undefined;
  const watchdog = startWatchdog(pidFile, keep ? undefined : dir);

  const writePids = () => writeFileSync(pidFile, [etcd, api].filter((p) => p && !p.exited).map((p) => String(p!.child.pid)).join("\n") + "\n");
  const syncCleanup = () => {
    for (const p of [api, etcd]) {
      if (p && !p.exited) {
        try {
          p.child.kill("SIGKILL");
        } catch { /* gone */ }
      }
    }
    try {
      watchdog.kill("SIGKILL");
    } catch { /* gone */ }
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  live.add(syncCleanup);

  const fail = async (message: string): Promise<never> => {
    for (const p of [api, etcd]) await stopProc(p, 2_000);
    try {
      watchdog.kill("SIGKILL");
    } catch { /* gone */ }
    live.delete(syncCleanup);
    await transport?.close();
    stopped = true;
    rmSync(join(dir, "etcd"), { recursive: true, force: true }); // ~120 MB (WAL preallocation); the logs are what matters
    const where = `logs kept in ${logDir}`;
    console.error(`[real-cluster] start failed: ${message}\n[real-cluster] ${where}`);
    throw new Error(`${message}\n(${where})`);
  };

  try {
    await makePki(dir);
  } catch (e) {
    return await fail(`creating certificates failed: ${(e as Error).message}`);
  }
  const caPem = readFileSync(join(dir, "ca.crt"), "utf8");
  const token = randomToken();
  writeFileSync(join(dir, "tokens.csv"), `${token},appwatch-admin,appwatch-admin-uid,"system:masters"\n`);

  const [etcdPort, peerPort, apiPort] = await freePorts(3) as [number, number, number];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const url = `https://127.0.0.1:${apiPort}`;

  // ---- etcd
  const etcdArgs = [
    "--name=appwatch",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=appwatch=http://127.0.0.1:${peerPort}`,
    "--initial-cluster-state=new",
    "--unsafe-no-fsync", // test data: no fsync (what envtest does)
    "--auto-compaction-retention=0", // compaction only when a test asks for it
    "--quota-backend-bytes=1073741824",
    "--log-level=warn",
  ];
  etcd = startProc("etcd", join(binDir, "etcd"), etcdArgs, etcdLog);
  writePids();
  {
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (etcd.exited) return await fail(`etcd exited during startup (code ${etcd.exitCode}, signal ${etcd.exitSignal}); log tail:\n${tail(etcdLog)}`);
      try {
        const res = await fetch(`${etcdUrl}/health`, { signal: AbortSignal.timeout(2_000) });
        const body = await res.text();
        if (res.ok && body.includes('"health":"true"')) break;
      } catch { /* not yet */ }
      if (Date.now() > deadline) return await fail(`etcd was not healthy within ${readyTimeoutMs} ms; log tail:\n${tail(etcdLog)}`);
      await sleep(100);
    }
  }

  // ---- kube-apiserver
  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, "certs")}`,
    `--tls-cert-file=${join(dir, "apiserver.crt")}`,
    `--tls-private-key-file=${join(dir, "apiserver.key")}`,
    `--token-auth-file=${join(dir, "tokens.csv")}`,
    "--anonymous-auth=false",
    "--authorization-mode=RBAC",
    `--service-account-issuer=${url}`,
    `--service-account-key-file=${join(dir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(dir, "sa.key")}`,
    `--api-audiences=${url}`,
    "--service-cluster-ip-range=10.0.0.0/24",
    "--allow-privileged=true",
    "--disable-admission-plugins=ServiceAccount",
    "--etcd-compaction-interval=0",
    "--endpoint-reconciler-type=none",
    "--enable-priority-and-fairness=false",
    "--profiling=false",
    "--v=1",
  ];
  if (options.watchCache === false) apiArgs.push("--watch-cache=false");
  if (options.featureGates) apiArgs.push(`--feature-gates=${options.featureGates}`);
  apiArgs.push(...(options.extraApiserverArgs ?? []));

  transport = await createTransport({ ca: caPem, insecureSkipVerify: false }, { server: url });
  const tr = transport;

  const rawFetch = (path: string, init: RequestInit & { token?: string } = {}): Promise<Response> => {
    const { token: tok, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (!headers.has("authorization")) headers.set("authorization", `Bearer ${tok ?? token}`);
    return tr.fetch(`${url}${path}`, { ...rest, headers });
  };

  const request = async (method: string, path: string, body?: unknown, ro: RequestOptions = {}): Promise<RealResponse> => {
    const headers: Record<string, string> = { accept: "application/json" };
    const init: RequestInit & { token?: string } = { method, headers };
    if (ro.token !== undefined) init.token = ro.token;
    if (ro.signal) init.signal = ro.signal;
    if (body !== undefined) {
      headers["content-type"] = ro.contentType ?? "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const res = await rawFetch(path, init);
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get("content-type") ?? "").includes("json") && text) {
      try {
        parsed = JSON.parse(text);
      } catch { /* keep text */ }
    }
    return { status: res.status, body: parsed };
  };

  const waitReady = async (what: string): Promise<void> => {
    const deadline = Date.now() + readyTimeoutMs;
    let last = "no answer yet";
    for (;;) {
      if (api?.exited) throw new Error(`kube-apiserver exited during ${what} (code ${api.exitCode}, signal ${api.exitSignal}); log tail:\n${tail(apiLog)}`);
      try {
        const res = await request("GET", "/readyz", undefined, { signal: AbortSignal.timeout(5_000) });
        if (res.status === 200) return;
        last = `HTTP ${res.status}: ${typeof res.body === "string" ? res.body.split("\n").filter((l: string) => l.includes("[-]")).join("; ") : JSON.stringify(res.body)}`;
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > deadline) {
        throw new Error(`kube-apiserver was not ready (/readyz) within ${readyTimeoutMs} ms during ${what}; last: ${last}; log tail:\n${tail(apiLog)}`);
      }
      await sleep(250);
    }
  };

  const startApiserver = async (what: string) => {
    api = startProc("kube-apiserver", join(binDir, "kube-apiserver"), apiArgs, apiLog);
    writePids();
    await waitReady(what);
  };

  try {
    await startApiserver("startup");
  } catch (e) {
    return await fail((e as Error).message);
  }

  // ---- admin kubeconfig
  const kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfigPath,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "appwatch-real", cluster: { server: url, "certificate-authority-data": Buffer.from(caPem).toString("base64") } }],
      users: [{ name: "appwatch-admin", user: { token } }],
      contexts: [{ name: "appwatch-real", context: { cluster: "appwatch-real", user: "appwatch-admin", namespace: "default" } }],
      "current-context": "appwatch-real",
    }),
    { mode: 0o600 },
  );

  // ---- REST mapping for applyManifests (discovery, cached per group/version)
  const discovery = new Map<string, { name: string; kind: string; namespaced: boolean }[]>();
  const resourceFor = async (apiVersion: string, kind: string) => {
    let list = discovery.get(apiVersion);
    if (!list) {
      const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const res = await request("GET", path);
      if (res.status !== 200) throw new Error(`discovery of ${apiVersion} failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      list = (res.body.resources as { name: string; kind: string; namespaced: boolean }[]).filter((r) => !r.name.includes("/"));
      discovery.set(apiVersion, list);
    }
    const r = list.find((x) => x.kind === kind);
    if (!r) throw new Error(`the server has no resource of kind ${kind} in ${apiVersion}`);
    return { base: apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`, ...r };
  };

  const applyManifests = async (paths: string[], ao: { dryRun?: boolean } = {}): Promise<AppliedObject[]> => {
    const results: AppliedObject[] = [];
    const q = ao.dryRun ? "?dryRun=All" : "";
    for (const obj of readManifests(paths.map((p) => resolve(REPO_ROOT, p)))) {
      const r = await resourceFor(obj.apiVersion, obj.kind);
      const ns: string | undefined = r.namespaced ? (obj.metadata.namespace ?? "default") : undefined;
      if (ns) obj.metadata.namespace = ns;
      const collection = `${r.base}${ns ? `/namespaces/${encodeURIComponent(ns)}` : ""}/${r.name}`;
      const item = `${collection}/${encodeURIComponent(obj.metadata.name)}`;
      const what = `${obj.kind} ${ns ? `${ns}/` : ""}${obj.metadata.name}`;
      let res = await request("POST", `${collection}${q}`, obj);
      let action: AppliedObject["action"] = "created";
      if (res.status === 409) {
        const current = await request("GET", item);
        if (current.status !== 200) throw new Error(`apply ${what}: GET after 409 gave HTTP ${current.status}: ${JSON.stringify(current.body)}`);
        const next = { ...obj, metadata: { ...obj.metadata, resourceVersion: current.body.metadata.resourceVersion } };
        res = await request("PUT", `${item}${q}`, next);
        action = "updated";
      }
      if (res.status < 200 || res.status >= 300) {
        throw new Error(`apply ${what}${ao.dryRun ? " (dry run)" : ""}: HTTP ${res.status}: ${res.body?.message ?? JSON.stringify(res.body)}`);
      }
      const applied: AppliedObject = { kind: obj.kind, name: obj.metadata.name, action, status: res.status, object: res.body };
      if (ns) applied.namespace = ns;
      results.push(applied);
    }
    return results;
  };

  const etcdctl = (args: string[]) => run(join(binDir, "etcdctl"), [`--endpoints=${etcdUrl}`, "--command-timeout=30s", ...args]);

  const cluster: RealCluster = {
    url,
    token,
    caPem,
    kubeconfigPath,
    etcdUrl,
    dir,
    logDir,
    binDir,
    etcdctl,
    async compact() {
      const status = JSON.parse(await etcdctl(["endpoint", "status", "-w", "json"]));
      const rev = status?.[0]?.Status?.header?.revision;
      if (rev === undefined) throw new Error(`etcdctl endpoint status: no revision in ${JSON.stringify(status)}`);
      await etcdctl(["compact", String(rev), "--physical"]);
      return String(rev);
    },
    async restartApiserver() {
      if (stopped) throw new Error("the cluster is stopped");
      await stopProc(api, 10_000);
      discovery.clear();
      await startApiserver("restart");
    },
    request,
    fetch: rawFetch,
    async serviceAccountToken(namespace: string, name: string, expirationSeconds = 3600) {
      const res = await request("POST", `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`, {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds },
      });
      if (res.status !== 201 && res.status !== 200) {
        throw new Error(`TokenRequest for ${namespace}/${name}: HTTP ${res.status}: ${res.body?.message ?? JSON.stringify(res.body)}`);
      }
      return res.body.status.token as string;
    },
    applyManifests,
    apiserverLogTail: (lines = 40) => tail(apiLog, lines),
    stop() {
      stopping ??= (async () => {
        if (!stopped) {
          stopped = true;
          await stopProc(api);
          await stopProc(etcd);
        }
        try {
          watchdog.kill("SIGKILL");
        } catch { /* gone */ }
        live.delete(syncCleanup);
        await transport?.close();
        if (!keep) rmSync(dir, { recursive: true, force: true });
        else console.error(`[real-cluster] kept ${dir}`);
      })();
      return stopping;
    },
  };

  if (options.installCrds !== false) {
    try {
      await installCrds(cluster, readyTimeoutMs);
    } catch (e) {
      return await fail(`installing the CRDs failed: ${(e as Error).message}`);
    }
  }
  return cluster;
}

/** Applies deploy/crds and waits until each CRD is Established and its resource lists with 200. */
async function installCrds(cluster: RealCluster, timeoutMs: number): Promise<void> {
  const applied = await cluster.applyManifests([CRD_DIR]);
  const deadline = Date.now() + timeoutMs;
  for (const crd of applied) {
    const group = crd.object.spec.group as string;
    const plural = crd.object.spec.names.plural as string;
    const version = (crd.object.spec.versions as { name: string; storage: boolean }[]).find((v) => v.storage)?.name ?? "v1";
    for (;;) {
      const res = await cluster.request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.name}`);
      const established = (res.body?.status?.conditions as { type: string; status: string }[] | undefined)?.some((c) => c.type === "Established" && c.status === "True");
      if (established) {
        const list = await cluster.request("GET", `/apis/${group}/${version}/${plural}?limit=1`);
        if (list.status === 200) break;
      }
      if (Date.now() > deadline) throw new Error(`CRD ${crd.name} was not Established and served within ${timeoutMs} ms: ${JSON.stringify(res.body?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
