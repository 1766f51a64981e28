/**
 * Where to find the cluster, resolved in kubectl's order:
 *
 * 1. an explicit kubeconfig path (`--kubeconfig`), with an optional context (`--context`);
 * 2. else every file in `KUBECONFIG` (path-list), merged like kubectl;
 * 3. else `~/.kube/config`;
 * 4. else the in-cluster service account (`KUBERNETES_SERVICE_HOST`/`_PORT`).
 *
 * The result, {@link ClusterConfig} (`types.ts`), holds PEM text and an auth description;
 * `credentials.ts` and `transport.ts` turn it into a working client. This module does the I/O
 * (files, environment, the service-account directory); the kubeconfig format itself (schemas,
 * merging, context selection) is `kubeconfig.ts`.
 * @module
 */
import { readFile as fsReadFile } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";
import type { ClusterAuth, ClusterConfig, ExecClusterInfo, TlsConfig } from "./types.ts";
import {
  decodeBase64,
  encodeBase64,
  execConfigFrom,
  type ExecConfig,
  filesLabel,
  isEmptyKubeconfig,
  KubeconfigError,
  mergeKubeconfigs,
  type ParsedKubeconfig,
  parseKubeconfig,
  pemLabels,
  selectContext,
  SUPPORTED_KEY_LABELS,
} from "./kubeconfig.ts";

export { type ExecConfig, KubeconfigError };

/** The service-account directory mounted into pods. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Options for {@link loadClusterConfig}. */
export interface LoadClusterConfigOptions {
  /** Explicit kubeconfig file (`--kubeconfig`); it must exist. Disables `KUBECONFIG` and `~/.kube/config`. */
  kubeconfig?: string;
  /** Context to use instead of `current-context` (`--context`). */
  context?: string;
  /** Environment (default: the process environment). */
  env?: Record<string, string | undefined>;
  /** Home directory for `~/.kube/config` (default: `$HOME`, then `os.homedir()`). */
  homeDir?: string;
  /** `true`: use the in-cluster service account only; `false`: never fall back to it; default: kubectl's fallback. */
  inCluster?: boolean;
  /** Service-account directory (default {@link SERVICE_ACCOUNT_DIR}); tests point it at a temp dir. */
  serviceAccountDir?: string;
  logger?: Logger;
  /** File reader (default `node:fs/promises` readFile, UTF-8). */
  readFile?: (path: string) => Promise<string>;
}

const defaultReadFile = (path: string) => fsReadFile(path, "utf8");

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.code === "string") return e.code;
  if (e && typeof e.message === "string") return e.message;
  return String(err);
}

/** True for "this file does not exist" (so a `KUBECONFIG` entry or `~/.kube/config` is skipped). */
function isNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || (err as { name?: unknown } | null)?.name === "NotFound";
}

/** Loads the cluster configuration (see the module doc for the order). */
export async function loadClusterConfig(options: LoadClusterConfigOptions = {}): Promise<ClusterConfig> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? silentLogger;
  const readFile = options.readFile ?? defaultReadFile;
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;

  let config: ClusterConfig;
  if (options.inCluster === true) {
    config = await loadInCluster(env, saDir, readFile, logger);
  } else {
    const files = await readKubeconfigFiles(options, env, readFile, logger);
    const merged = mergeKubeconfigs(files.parsed);
    // client-go: KUBECONFIG entries that do not exist are skipped, and when all are missing it
    // warns ("Config not found") and goes on with an empty config (in-cluster, else an error).
    const allMissing = files.fromEnv && files.parsed.length === 0;
    if (allMissing && files.tried.length > 0) logger.warn("KUBECONFIG: config not found", { missing: files.tried });
    if (files.parsed.length > 0 && !(isEmptyKubeconfig(merged) && !options.context)) {
      config = await resolveKubeconfig(merged, options.context, readFile, logger);
    } else if (options.context) {
      throw new KubeconfigError(
        `context "${options.context}" was requested but no kubeconfig was found (looked at ${files.tried.join(", ")})`,
      );
    } else if (options.inCluster !== false && env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
      config = await loadInCluster(env, saDir, readFile, logger);
    } else {
      const inClusterNote = options.inCluster === false
        ? "in-cluster configuration is disabled"
        : "not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)";
      const what = files.parsed.length > 0
        ? `kubeconfig ${filesLabel(files.parsed.map((f) => f.file))} is empty`
        : allMissing
        ? (files.tried.length ? `KUBECONFIG names only missing files (${files.tried.join(", ")})` : `KUBECONFIG (${JSON.stringify(env.KUBECONFIG)}) names no file`)
        : `no kubeconfig found (looked at ${files.tried.join(", ")})`;
      throw new KubeconfigError(`no cluster configuration: ${what}, and ${inClusterNote}`);
    }
  }
  logger.info("cluster config loaded", {
    source: config.source,
    server: config.server,
    namespace: config.namespace,
    auth: config.auth.type,
    caConfigured: config.tls.ca !== undefined,
    clientCertConfigured: config.tls.cert !== undefined,
    insecureSkipVerify: config.tls.insecureSkipVerify,
    serverName: config.tls.serverName,
  });
  return config;
}

async function readKubeconfigFiles(
  options: LoadClusterConfigOptions,
  env: Record<string, string | undefined>,
  readFile: (path: string) => Promise<string>,
  logger: Logger,
): Promise<{ parsed: ParsedKubeconfig[]; tried: string[]; fromEnv: boolean }> {
  if (options.kubeconfig) {
    const file = resolve(options.kubeconfig);
    let text: string;
    try {
      text = await readFile(file);
    } catch (err) {
      throw new KubeconfigError(`kubeconfig ${file}: cannot read file (${errorCode(err)})`);
    }
    return { parsed: [parseKubeconfig(text, file)], tried: [file], fromEnv: false };
  }
  let candidates: string[];
  if (env.KUBECONFIG) {
    candidates = [...new Set(env.KUBECONFIG.split(delimiter).filter((p) => p.trim() !== "").map((p) => resolve(p)))];
  } else {
    const home = options.homeDir ?? env.HOME ?? homedir();
    candidates = [join(home, ".kube", "config")];
  }
  const parsed: ParsedKubeconfig[] = [];
  for (const file of candidates) {
    let text: string;
    try {
      text = await readFile(file);
    } catch (err) {
      if (isNotFound(err)) {
        logger.debug("kubeconfig file not found, skipped", { file });
        continue;
      }
      throw new KubeconfigError(`kubeconfig ${file}: cannot read file (${errorCode(err)})`);
    }
    parsed.push(parseKubeconfig(text, file));
  }
  return { parsed, tried: candidates, fromEnv: Boolean(env.KUBECONFIG) };
}

/** Reads a PEM file named by a kubeconfig field. */
async function readPemFile(
  readFile: (path: string) => Promise<string>,
  path: string,
  field: string,
  where: string,
): Promise<string> {
  let text: string;
  try {
    text = await readFile(path);
  } catch (err) {
    throw new KubeconfigError(`${where}: cannot read ${field} ${path} (${errorCode(err)})`);
  }
  if (pemLabels(text).length === 0) throw new KubeconfigError(`${where}: ${field} ${path} does not contain PEM data`);
  return text;
}

function decodePemData(data: string, field: string, where: string): string {
  const text = decodeBase64(data);
  if (text === undefined) throw new KubeconfigError(`${where}: ${field} is not valid base64`);
  if (pemLabels(text).length === 0) throw new KubeconfigError(`${where}: ${field} does not decode to PEM data`);
  return text;
}

function checkKeyLabel(pem: string, field: string, where: string): void {
  const label = pemLabels(pem).find((l) => l.includes("PRIVATE KEY")) ?? pemLabels(pem)[0] ?? "";
  if (!(SUPPORTED_KEY_LABELS as readonly string[]).includes(label)) {
    throw new KubeconfigError(
      `${where}: ${field} has unsupported key type "${label}" (supported: ${SUPPORTED_KEY_LABELS.join(", ")}; decrypt encrypted keys first)`,
    );
  }
}

/** `server` with a default scheme (client-go: https when TLS is configured, else http), validated. */
function normalizeServer(server: string, defaultTls: boolean, where: string): string {
  let candidate = server.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(candidate)) candidate = `${defaultTls ? "https" : "http"}://${candidate}`;
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    throw new KubeconfigError(`${where}: server "${server}" is not a valid URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new KubeconfigError(`${where}: server "${server}" must be an http:// or https:// URL`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new KubeconfigError(`${where}: server "${server}" must not contain credentials, a query or a fragment`);
  }
  return url.toString().replace(/\/+$/, "");
}

async function resolveKubeconfig(
  merged: ReturnType<typeof mergeKubeconfigs>,
  context: string | undefined,
  readFile: (path: string) => Promise<string>,
  logger: Logger,
): Promise<ClusterConfig> {
  const sel = selectContext(merged, context);
  const c = sel.cluster;
  const cWhere = `${sel.where}: cluster "${sel.clusterName}"`;
  const clusterDir = dirname(sel.clusterFile);
  const rel = (dir: string, p: string) => (isAbsolute(p) ? p : resolve(dir, p));

  if (!c.server) throw new KubeconfigError(`${cWhere}: server is not set`);
  const tls: TlsConfig = { insecureSkipVerify: c["insecure-skip-tls-verify"] === true };
  if (c["certificate-authority-data"]) {
    tls.ca = decodePemData(c["certificate-authority-data"], "certificate-authority-data", cWhere);
  } else if (c["certificate-authority"]) {
    tls.ca = await readPemFile(readFile, rel(clusterDir, c["certificate-authority"]), "certificate-authority", cWhere);
  }
  if (tls.insecureSkipVerify && tls.ca !== undefined) {
    throw new KubeconfigError(
      `${cWhere}: insecure-skip-tls-verify cannot be combined with certificate-authority or certificate-authority-data (kubectl rejects it too); remove one`,
    );
  }
  if (c["tls-server-name"]) tls.serverName = c["tls-server-name"];
  if (c["proxy-url"]) {
    logger.warn("kubeconfig proxy-url is not supported and is ignored; requests go directly to the server", {
      source: sel.where,
      cluster: sel.clusterName,
    });
  }

  let auth: ClusterAuth = { type: "none" };
  const u = sel.user;
  if (u && sel.userFile) {
    const uWhere = `${sel.where}: user "${sel.userName}"`;
    const userDir = dirname(sel.userFile);
    if (u["auth-provider"]) {
      throw new KubeconfigError(
        `${uWhere}: auth-provider "${u["auth-provider"].name ?? ""}" is not supported; use an exec credential plugin instead (e.g. gke-gcloud-auth-plugin, kubelogin)`,
      );
    }
    for (const field of ["as", "as-uid", "as-groups", "as-user-extra"] as const) {
      if (u[field] !== undefined && u[field] !== null) {
        throw new KubeconfigError(`${uWhere}: impersonation (${field}) is not supported`);
      }
    }
    // Client certificate (any auth method may be combined with it).
    let cert: string | undefined;
    let key: string | undefined;
    if (u["client-certificate-data"]) {
      cert = decodePemData(u["client-certificate-data"], "client-certificate-data", uWhere);
    } else if (u["client-certificate"]) {
      cert = await readPemFile(readFile, rel(userDir, u["client-certificate"]), "client-certificate", uWhere);
    }
    let keyField = "client-key-data";
    if (u["client-key-data"]) {
      key = decodePemData(u["client-key-data"], "client-key-data", uWhere);
    } else if (u["client-key"]) {
      keyField = "client-key";
      key = await readPemFile(readFile, rel(userDir, u["client-key"]), "client-key", uWhere);
    }
    if (cert !== undefined && key === undefined) {
      throw new KubeconfigError(`${uWhere}: client-certificate is set but client-key is not`);
    }
    if (key !== undefined && cert === undefined) {
      throw new KubeconfigError(`${uWhere}: client-key is set but client-certificate is not`);
    }
    if (key !== undefined) checkKeyLabel(key, keyField, uWhere);
    if (cert !== undefined) tls.cert = cert;
    if (key !== undefined) tls.key = key;

    const hasToken = Boolean(u.token || u.tokenFile);
    const hasBasic = Boolean(u.username || u.password);
    if (hasToken && hasBasic) {
      throw new KubeconfigError(`${uWhere}: more than one authentication method (token and username/password); use one`);
    }
    if (u.exec) {
      if (hasToken || hasBasic) {
        throw new KubeconfigError(
          `${uWhere}: more than one authentication method (exec and ${hasToken ? "token" : "username/password"}); use one`,
        );
      }
      const exec = execConfigFrom(u.exec, uWhere, (cmd) => rel(userDir, cmd));
      const execAuth: Extract<ClusterAuth, { type: "exec" }> = { type: "exec", exec };
      if (exec.provideClusterInfo) {
        const info: ExecClusterInfo = { server: "" };
        if (tls.ca !== undefined) info.certificateAuthorityData = encodeBase64(tls.ca);
        if (tls.insecureSkipVerify) info.insecureSkipTlsVerify = true;
        if (tls.serverName) info.tlsServerName = tls.serverName;
        const ext = c.extensions?.find((e) => e.name === "client.authentication.k8s.io/exec");
        if (ext && ext.extension !== undefined) info.config = ext.extension;
        execAuth.cluster = info;
      }
      auth = execAuth;
    } else if (u.tokenFile) {
      auth = { type: "tokenFile", path: rel(userDir, u.tokenFile) };
    } else if (u.token) {
      auth = { type: "token", token: u.token };
    } else if (hasBasic) {
      auth = { type: "basic", username: u.username ?? "", password: u.password ?? "" };
    }
  }

  const defaultTls = tls.ca !== undefined || tls.cert !== undefined || tls.insecureSkipVerify;
  const server = normalizeServer(c.server, defaultTls, cWhere);
  if (auth.type === "exec" && auth.cluster) auth.cluster.server = server;
  return {
    server,
    namespace: sel.context.namespace || undefined,
    tls,
    auth,
    source: `kubeconfig ${sel.contextFile}, context "${sel.contextName}"`,
  };
}

async function loadInCluster(
  env: Record<string, string | undefined>,
  dir: string,
  readFile: (path: string) => Promise<string>,
  logger: Logger,
): Promise<ClusterConfig> {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this running in a pod?)",
    );
  }
  const tokenPath = join(dir, "token");
  try {
    const token = (await readFile(tokenPath)).trim();
    if (!token) throw new KubeconfigError(`in-cluster: service account token ${tokenPath} is empty`);
  } catch (err) {
    if (err instanceof KubeconfigError) throw err;
    throw new KubeconfigError(`in-cluster: cannot read service account token ${tokenPath} (${errorCode(err)})`);
  }
  const tls: TlsConfig = { insecureSkipVerify: false };
  const caPath = join(dir, "ca.crt");
  try {
    tls.ca = await readFile(caPath);
  } catch (err) {
    // client-go logs and continues with the system roots; so do we.
    logger.warn("in-cluster: cannot read the service account CA; using the system roots", {
      path: caPath,
      error: errorCode(err),
    });
  }
  let namespace: string | undefined = env.POD_NAMESPACE || undefined;
  if (!namespace) {
    try {
      namespace = (await readFile(join(dir, "namespace"))).trim() || undefined;
    } catch {
      namespace = undefined;
    }
  }
  const hostPart = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return {
    server: `https://${hostPart}:${port}`,
    namespace,
    tls,
    auth: { type: "tokenFile", path: tokenPath },
    source: "in-cluster",
  };
}
