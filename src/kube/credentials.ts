/**
 * Turns a {@link ClusterAuth} into the client's {@link Credentials}:
 *
 * - `token`: a fixed bearer token.
 * - `tokenFile`: re-read at least every `tokenFileRefreshMs` (60 s) and right after
 *   `invalidate()` (the client calls it after a 401, then retries once). A failed
 *   re-read keeps the last good token and logs a warning.
 * - `basic`: `Authorization: Basic …`.
 * - `exec`: runs the plugin, caches the ExecCredential until shortly before
 *   `expirationTimestamp` (or until `invalidate()` when it has none), one run at a
 *   time. Client certificates it returns are exposed through
 *   {@link KubeCredentials.clientCertificate} for the transport.
 *
 * Tokens, passwords and keys are never logged and never put into error messages.
 * @module
 */
import process from "node:process";
import { readFile as fsReadFile } from "node:fs/promises";
import * as v from "valibot";
import type { Credentials } from "./client.ts";
import type { ClusterAuth, ExecClusterInfo } from "./types.ts";
import { ExecError, type RunExec, runExec as defaultRunExec } from "./exec.ts";
import { describeIssue, encodeBase64, type ExecConfig, pemLabels } from "./kubeconfig.ts";
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";

/** A client certificate and key (PEM) supplied by an exec plugin. */
export interface ClientCertificate {
  cert: string;
  key: string;
}

/** {@link Credentials} plus what the transport needs. */
export interface KubeCredentials extends Credentials {
  readonly type: ClusterAuth["type"];
  /**
   * The client certificate from an exec plugin (runs the plugin when needed), or
   * undefined. The same object is returned while it is cached; a new object
   * means the transport must switch certificates.
   */
  clientCertificate(): Promise<ClientCertificate | undefined>;
}

/** Options for {@link createCredentials}. */
export interface CredentialsOptions {
  logger?: Logger;
  /** Clock in ms (tests). */
  now?: () => number;
  /** Reads the token file (default: `node:fs/promises` readFile, UTF-8). */
  readFile?: (path: string) => Promise<string>;
  /** Runs exec plugins (default: {@link defaultRunExec}). */
  runExec?: RunExec;
  /** Token-file re-read period (default 60 000 ms). */
  tokenFileRefreshMs?: number;
  /** Alias of {@link tokenFileRefreshMs} (used when both are absent: 60 000 ms). */
  refreshMs?: number;
  /** Exec plugin timeout (default 60 000 ms). */
  execTimeoutMs?: number;
  /** Refresh exec credentials this long before `expirationTimestamp` (default 10 000 ms). */
  expirySkewMs?: number;
  /** Base environment for exec plugins (default: the process environment). */
  env?: Record<string, string | undefined>;
  /** Prefix for error messages, e.g. the ClusterConfig `source`. */
  source?: string;
}

/** Creates credentials for `auth`. Nothing runs until the first request. */
export function createCredentials(auth: ClusterAuth, options: CredentialsOptions = {}): KubeCredentials {
  switch (auth.type) {
    case "none":
      return {
        type: "none",
        authorization: () => Promise.resolve(undefined),
        invalidate: () => {},
        clientCertificate: () => Promise.resolve(undefined),
      };
    case "token": {
      const header = `Bearer ${auth.token}`;
      return {
        type: "token",
        authorization: () => Promise.resolve(header),
        invalidate: () => {},
        clientCertificate: () => Promise.resolve(undefined),
      };
    }
    case "basic": {
      const header = `Basic ${encodeBase64(`${auth.username}:${auth.password}`)}`;
      return {
        type: "basic",
        authorization: () => Promise.resolve(header),
        invalidate: () => {},
        clientCertificate: () => Promise.resolve(undefined),
      };
    }
    case "tokenFile":
      return tokenFileCredentials(auth.path, options);
    case "exec":
      return execCredentials(auth.exec, auth.cluster, options);
  }
}

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.code === "string") return e.code;
  if (e && typeof e.message === "string") return e.message;
  return String(err);
}

/** Token-file credentials (in-cluster service account, `tokenFile` in a kubeconfig). */
function tokenFileCredentials(path: string, options: CredentialsOptions): KubeCredentials {
  const now = options.now ?? Date.now;
  const readFile = options.readFile ?? ((p: string) => fsReadFile(p, "utf8"));
  const period = options.tokenFileRefreshMs ?? options.refreshMs ?? 60_000;
  const logger = options.logger ?? silentLogger;
  const prefix = options.source ? `${options.source}: ` : "";
  let token: string | undefined;
  let readAt = 0;
  let stale = true;
  let inflight: Promise<string> | undefined;

  const read = async (): Promise<string> => {
    let text: string | undefined;
    let problem: string | undefined;
    try {
      text = (await readFile(path)).trim();
      if (!text) problem = "is empty";
    } catch (err) {
      problem = `cannot be read (${errorCode(err)})`;
    }
    readAt = now();
    stale = false;
    if (problem || text === undefined) {
      if (token !== undefined) {
        logger.warn("token file re-read failed; keeping the previous token", { path, problem });
        return token;
      }
      throw new Error(`${prefix}token file ${path} ${problem}`);
    }
    if (token !== undefined && token !== text) logger.info("token file changed; using the new token", { path });
    token = text;
    return token;
  };

  const current = (): Promise<string> => {
    if (inflight) return inflight;
    if (token !== undefined && !stale && now() - readAt < period) return Promise.resolve(token);
    inflight = read().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };

  return {
    type: "tokenFile",
    authorization: async () => `Bearer ${await current()}`,
    invalidate: () => {
      if (!inflight) stale = true;
    },
    clientCertificate: () => Promise.resolve(undefined),
  };
}

// ---------------------------------------------------------------------------
// exec plugins

const ExecCredentialSchema = v.looseObject(
  {
    apiVersion: v.string("must be a string"),
    kind: v.literal("ExecCredential", 'must be "ExecCredential"'),
    status: v.looseObject(
      {
        token: v.nullish(v.string("must be a string")),
        clientCertificateData: v.nullish(v.string("must be a string")),
        clientKeyData: v.nullish(v.string("must be a string")),
        expirationTimestamp: v.nullish(
          v.pipe(
            v.string("must be a string"),
            v.check((s) => !Number.isNaN(Date.parse(s)), "must be an RFC 3339 timestamp"),
          ),
        ),
      },
      "must be a mapping",
    ),
  },
  "must be a JSON object",
);

interface CachedExec {
  authorization: string | undefined;
  clientCertificate: ClientCertificate | undefined;
  /** When to run the plugin again (undefined: only after invalidate()). */
  refreshAt: number | undefined;
  expiresAt: number | undefined;
}

/** The JSON put into `KUBERNETES_EXEC_INFO`. */
export function execInfo(exec: ExecConfig, cluster: ExecClusterInfo | undefined): string {
  const spec: Record<string, unknown> = { interactive: false };
  if (exec.provideClusterInfo && cluster) {
    const c: Record<string, unknown> = { server: cluster.server };
    if (cluster.tlsServerName) c["tls-server-name"] = cluster.tlsServerName;
    if (cluster.insecureSkipTlsVerify) c["insecure-skip-tls-verify"] = true;
    if (cluster.certificateAuthorityData) c["certificate-authority-data"] = cluster.certificateAuthorityData;
    if (cluster.config !== undefined) c.config = cluster.config;
    spec.cluster = c;
  }
  return JSON.stringify({ kind: "ExecCredential", apiVersion: exec.apiVersion, spec });
}

function execCredentials(
  exec: ExecConfig,
  cluster: ExecClusterInfo | undefined,
  options: CredentialsOptions,
): KubeCredentials {
  const now = options.now ?? Date.now;
  const run = options.runExec ?? defaultRunExec;
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.execTimeoutMs ?? 60_000;
  const skew = options.expirySkewMs ?? 10_000;
  const name = `${options.source ? `${options.source}: ` : ""}exec plugin "${exec.command}"`;
  let cached: CachedExec | undefined;
  let stale = false;
  let inflight: Promise<CachedExec> | undefined;

  const runPlugin = async (): Promise<CachedExec> => {
    if (exec.interactiveMode === "Always") {
      throw new Error(
        `${name}: interactiveMode is Always, but appwatch cannot give the plugin a terminal; run the plugin once in a terminal to cache credentials, or set interactiveMode to IfAvailable or Never`,
      );
    }
    const baseEnv = options.env ?? process.env;
    const env: Record<string, string> = {};
    for (const [k, val] of Object.entries(baseEnv)) if (val !== undefined) env[k] = val;
    for (const e of exec.env) env[e.name] = e.value;
    env.KUBERNETES_EXEC_INFO = execInfo(exec, cluster);
    const started = now();
    let result;
    try {
      result = await run({ command: exec.command, args: exec.args, env, timeoutMs });
    } catch (err) {
      if (err instanceof ExecError) {
        if (err.kind === "not-found") {
          throw new Error(`${name}: command not found${exec.installHint ? `\n${exec.installHint}` : ""}`);
        }
        if (err.kind === "timeout") throw new Error(`${name}: timed out after ${timeoutMs} ms`);
        if (err.kind === "not-executable") throw new Error(`${name}: permission denied (is the file executable?)`);
        if (err.kind === "output-too-large") throw new Error(`${name}: output is too large`);
      }
      throw new Error(`${name}: cannot run (${errorCode(err)})`);
    }
    if (result.exitCode !== 0) {
      const stderr = result.stderr.trim();
      const tail = stderr ? `: ${stderr.length > 500 ? `…${stderr.slice(-500)}` : stderr}` : "";
      const how = result.exitCode === null ? `was killed by ${result.signal ?? "a signal"}` : `exited with code ${result.exitCode}`;
      throw new Error(`${name} ${how}${tail}`);
    }
    // Never echo stdout: it may hold a token.
    let json: unknown;
    try {
      json = JSON.parse(result.stdout);
    } catch {
      throw new Error(`${name}: output is not valid JSON (expected an ExecCredential)`);
    }
    const parsed = v.safeParse(ExecCredentialSchema, json);
    if (!parsed.success) throw new Error(`${name}: invalid ExecCredential: ${describeIssue(parsed.issues)}`);
    const cred = parsed.output;
    if (cred.apiVersion !== exec.apiVersion) {
      throw new Error(
        `${name}: returned apiVersion "${cred.apiVersion}", but the kubeconfig asks for "${exec.apiVersion}"`,
      );
    }
    const s = cred.status;
    const hasCert = Boolean(s.clientCertificateData);
    const hasKey = Boolean(s.clientKeyData);
    if (hasCert !== hasKey) {
      throw new Error(`${name}: invalid ExecCredential: status.clientCertificateData and status.clientKeyData must be set together`);
    }
    if (!s.token && !hasCert) {
      throw new Error(`${name}: invalid ExecCredential: status has neither token nor clientCertificateData/clientKeyData`);
    }
    let clientCertificate: ClientCertificate | undefined;
    if (s.clientCertificateData && s.clientKeyData) {
      if (pemLabels(s.clientCertificateData).length === 0 || pemLabels(s.clientKeyData).length === 0) {
        throw new Error(`${name}: invalid ExecCredential: status.clientCertificateData and status.clientKeyData must be PEM`);
      }
      clientCertificate = { cert: s.clientCertificateData, key: s.clientKeyData };
    }
    const t = now();
    let expiresAt: number | undefined;
    let refreshAt: number | undefined;
    if (s.expirationTimestamp) {
      expiresAt = Date.parse(s.expirationTimestamp);
      // Refresh `skew` before expiry; for very short-lived credentials use them until they expire.
      refreshAt = expiresAt - skew > t ? expiresAt - skew : expiresAt;
      if (expiresAt <= t) logger.warn("exec plugin returned an already expired credential", { command: exec.command });
    }
    logger.debug("exec plugin ran", {
      command: exec.command,
      durationMs: t - started,
      expirationTimestamp: s.expirationTimestamp ?? undefined,
      bearer: Boolean(s.token),
      clientCertificate: Boolean(clientCertificate),
    });
    return {
      authorization: s.token ? `Bearer ${s.token}` : undefined,
      clientCertificate,
      refreshAt,
      expiresAt,
    };
  };

  const current = (): Promise<CachedExec> => {
    if (inflight) return inflight;
    const c = cached;
    if (c && !stale && (c.refreshAt === undefined || now() < c.refreshAt)) return Promise.resolve(c);
    const wasStale = stale;
    inflight = runPlugin()
      .then(
        (fresh) => {
          // Keep the same certificate object when nothing changed, so the transport is kept.
          if (fresh.clientCertificate && c?.clientCertificate && sameCert(fresh.clientCertificate, c.clientCertificate)) {
            fresh.clientCertificate = c.clientCertificate;
          }
          cached = fresh;
          stale = false;
          return fresh;
        },
        (err: unknown) => {
          // A refresh ahead of expiry may fail; keep using the old credential until it really expires.
          if (c && !wasStale && c.expiresAt !== undefined && now() < c.expiresAt) {
            logger.warn("exec plugin refresh failed; using the cached credential until it expires", {
              command: exec.command,
              error: (err as Error).message,
            });
            return c;
          }
          throw err;
        },
      )
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };

  return {
    type: "exec",
    authorization: async () => (await current()).authorization,
    invalidate: () => {
      if (!inflight) stale = true;
    },
    clientCertificate: async () => (await current()).clientCertificate,
  };
}

function sameCert(a: ClientCertificate, b: ClientCertificate): boolean {
  return a.cert === b.cert && a.key === b.key;
}
