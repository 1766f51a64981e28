/**
 * The per-runtime TLS transport: a `fetch` that trusts the cluster CA, presents
 * a client certificate and honours `insecure-skip-tls-verify` /
 * `tls-server-name` where the runtime can. This is one of the two files with
 * runtime-specific code (the other is `exec.ts`).
 *
 * | | Deno | Bun | Node (npm undici 7) |
 * |---|---|---|---|
 * | CA, client cert (RSA PKCS#1, PKCS#8, EC SEC1) | `Deno.createHttpClient` | `fetch(…, { tls })` | `undici.Agent({ connect })` |
 * | insecure-skip-tls-verify | only with `--unsafely-ignore-certificate-errors` (see {@link DENO_INSECURE_ENV}) | ✔ | ✔ |
 * | tls-server-name ≠ URL host | ✘ (clear error) | ✔ | ✔ |
 *
 * Client certificates are fixed per transport; to switch certificates create a
 * new transport (`connect.ts` does this when an exec plugin rotates them).
 * @module
 */
import type { FetchLike } from "./client.ts";
import type { TlsConfig } from "./config.ts";
import { runtimeName, type RuntimeName } from "../runtime.ts";
import process from "node:process";
import type { Agent as UndiciAgent } from "undici";

type AgentConnect = NonNullable<ConstructorParameters<typeof UndiciAgent>[0]>["connect"];

/** A `fetch` with its TLS settings, and how to release it. */
export interface Transport {
  fetch: FetchLike;
  /**
   * Releases connections. Abort your requests first: Deno lets in-flight responses
   * finish; Node waits up to `closeGraceMs` for them, then destroys the sockets.
   */
  close(): Promise<void>;
}

/** Options for {@link createTransport}. */
export interface TransportOptions {
  /** The API server URL; used to tell whether `tls-server-name` differs from the host, and in messages. */
  server?: string;
  /** Environment for opt-ins (default: the process environment). */
  env?: Record<string, string | undefined>;
  /** Override runtime detection (tests). */
  runtime?: RuntimeName;
  /** Node: time to wait for in-flight requests in close() before destroying sockets (default 2000 ms). */
  closeGraceMs?: number;
  /** Node: time allowed until response headers arrive (default 120 000 ms). The body has no timeout. */
  headersTimeoutMs?: number;
}

/**
 * Deno has no per-client "skip TLS verification" option. Set this variable to
 * `1` to confirm that deno was started with
 * `--unsafely-ignore-certificate-errors=<host>`; appwatch then lets
 * `insecure-skip-tls-verify: true` through (verification is skipped by that flag).
 */
export const DENO_INSECURE_ENV = "APPWATCH_DENO_UNSAFELY_IGNORE_CERTIFICATE_ERRORS";

/** A TLS setting the current runtime cannot honour; the message says what to do instead. */
export class UnsupportedTlsError extends Error {
  override readonly name = "UnsupportedTlsError";
}

interface DenoHttpClient {
  close(): void;
}
interface DenoLike {
  createHttpClient(options: { caCerts?: string[]; cert?: string; key?: string }): DenoHttpClient;
}

function hostOf(server: string | undefined): string | undefined {
  if (!server) return undefined;
  try {
    return new URL(server).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return undefined;
  }
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/** Creates the transport for the current runtime. Throws {@link UnsupportedTlsError} for settings it cannot honour. */
export async function createTransport(tls: TlsConfig, options: TransportOptions = {}): Promise<Transport> {
  const runtime = options.runtime ?? runtimeName();
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new Error("TLS client certificate and key must be given together");
  }
  if (runtime === "deno") return denoTransport(tls, options);
  if (runtime === "bun") return bunTransport(tls);
  return await nodeTransport(tls, options);
}

function denoTransport(tls: TlsConfig, options: TransportOptions): Transport {
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  if (!deno) throw new Error("not running on Deno");
  const host = hostOf(options.server);
  const server = options.server ?? "the API server";
  // For a plain http:// server the TLS settings are never used; only check them for https.
  const https = !options.server || !options.server.startsWith("http:");
  if (https && tls.insecureSkipVerify && !truthy((options.env ?? process.env)[DENO_INSECURE_ENV])) {
    throw new UnsupportedTlsError(
      `insecure-skip-tls-verify is set for ${server}, but Deno has no per-client option to skip TLS verification. ` +
        `Either configure the cluster CA (certificate-authority-data) instead, or start deno with ` +
        `--unsafely-ignore-certificate-errors=${host ?? "<api-server-host>"} and set ${DENO_INSECURE_ENV}=1 to confirm you did.`,
    );
  }
  if (https && tls.serverName && tls.serverName !== host) {
    throw new UnsupportedTlsError(
      `tls-server-name "${tls.serverName}" is set for ${server}, but Deno's fetch cannot verify the server certificate ` +
        `against a name other than the URL host (Deno.createHttpClient has no server-name option). ` +
        `Either set the cluster server to https://${tls.serverName}${portSuffix(options.server)} and make ` +
        `${tls.serverName} resolve to ${host ?? "the server address"} (e.g. an /etc/hosts entry), or run appwatch on Node or Bun.`,
    );
  }
  const clientOptions: { caCerts?: string[]; cert?: string; key?: string } = {};
  if (tls.ca !== undefined) clientOptions.caCerts = [tls.ca];
  if (tls.cert !== undefined && tls.key !== undefined) {
    clientOptions.cert = tls.cert;
    clientOptions.key = tls.key;
  }
  const client = deno.createHttpClient(clientOptions);
  let closed = false;
  return {
    fetch: (input, init) => fetch(input, { ...init, client } as RequestInit),
    close: () => {
      if (!closed) {
        closed = true;
        client.close();
      }
      return Promise.resolve();
    },
  };
}

function portSuffix(server: string | undefined): string {
  if (!server) return "";
  try {
    const port = new URL(server).port;
    return port ? `:${port}` : "";
  } catch {
    return "";
  }
}

function bunTransport(tls: TlsConfig): Transport {
  const bunTls: Record<string, unknown> = { rejectUnauthorized: !tls.insecureSkipVerify };
  if (tls.ca !== undefined) bunTls.ca = tls.ca;
  if (tls.cert !== undefined) bunTls.cert = tls.cert;
  if (tls.key !== undefined) bunTls.key = tls.key;
  if (tls.serverName) bunTls.serverName = tls.serverName;
  return {
    // Bun keeps connections per TLS configuration; there is nothing to release.
    fetch: (input, init) => fetch(input, { ...init, tls: bunTls } as RequestInit),
    close: () => Promise.resolve(),
  };
}

async function nodeTransport(tls: TlsConfig, options: TransportOptions): Promise<Transport> {
  // Same-package fetch + Agent: no version skew with Node's bundled undici.
  const undici = await import("undici");
  const connectOptions: Record<string, unknown> = { rejectUnauthorized: !tls.insecureSkipVerify };
  if (tls.ca !== undefined) connectOptions.ca = tls.ca;
  if (tls.cert !== undefined) connectOptions.cert = tls.cert;
  if (tls.key !== undefined) connectOptions.key = tls.key;
  let connect: AgentConnect = connectOptions;
  if (tls.serverName) {
    // undici prefers the request's host over `connect.servername` for DNS hosts, so force it in a connector.
    const serverName = tls.serverName;
    const base = undici.buildConnector(connectOptions);
    connect = (opts, callback) => base({ ...opts, servername: serverName }, callback);
  }
  const agent = new undici.Agent({
    connect,
    // Watches are long-lived streams guarded by the watcher's own inactivity timer.
    bodyTimeout: 0,
    headersTimeout: options.headersTimeoutMs ?? 120_000,
  });
  const grace = options.closeGraceMs ?? 2_000;
  let closing: Promise<void> | undefined;
  return {
    fetch: (input, init) =>
      undici.fetch(input, { ...(init as object), dispatcher: agent } as Parameters<typeof undici.fetch>[1]) as unknown as Promise<
        Response
      >,
    close: () => {
      closing ??= (async () => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timedOut = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), grace);
        });
        const done = await Promise.race([agent.close().then(() => false, () => false), timedOut]);
        clearTimeout(timer);
        if (done) await agent.destroy().catch(() => {});
      })();
      return closing;
    },
  };
}
