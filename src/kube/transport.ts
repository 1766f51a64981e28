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
 * On Node the `fetch` is not undici's `fetch` but a thin one over undici's
 * lower-level `dispatcher.request` ({@link undiciRequestFetch}): the same
 * `Response` semantics for the engine (status, headers, a byte-stream body that
 * supports cancel), at about twice the watch-decoding throughput, because the
 * body is the socket's Buffers handed through one pull-only `ReadableStream`
 * instead of undici's fetch body pipeline (measured in BENCHMARKS.md B1).
 *
 * Client certificates are fixed per transport; to switch certificates create a
 * new transport (`connect.ts` does this when an exec plugin rotates them).
 * @module
 */
import type { FetchLike } from "./client.ts";
import type { TlsConfig } from "./types.ts";
import { runtimeName, type RuntimeName } from "../runtime.ts";
import process from "node:process";
import type { Agent as UndiciAgent, Dispatcher as UndiciDispatcher } from "undici";

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
    fetch: (input, init) => undiciRequestFetch(agent, input, init),
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

/** HTTP statuses whose response has no body (the `Response` constructor refuses one for them). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * A `fetch` (as {@link FetchLike} uses it: a URL string, method, headers, a
 * string body, a signal) over undici's `Dispatcher.request`. Differences from
 * `fetch`, none of which the Kubernetes client relies on: redirects are not
 * followed, no `accept-encoding` is added (so bodies arrive unencoded), and no
 * cookies/cache/CORS. Failures before the response are thrown as
 * `TypeError("fetch failed", { cause })`, as undici's fetch does; an abort
 * rejects with the signal's reason. The body is a pull-only stream over the
 * response's Node Readable: nothing is read before the consumer asks (so the
 * socket's backpressure holds), cancelling it destroys the Readable (closing the
 * connection), and a connection lost mid-body errors it.
 */
async function undiciRequestFetch(dispatcher: UndiciDispatcher, input: string, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input);
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, key) => (headers[key] = value));
  if (init.body !== undefined && init.body !== null && typeof init.body !== "string") {
    throw new TypeError("undiciRequestFetch: only string request bodies are supported");
  }
  let data: Awaited<ReturnType<UndiciDispatcher["request"]>>;
  try {
    data = await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: (init.method ?? "GET") as "GET",
      headers,
      body: init.body ?? undefined,
      signal: signal ?? undefined,
    });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TypeError("fetch failed", { cause: err });
  }
  const responseHeaders = new Headers();
  for (const [key, value] of Object.entries(data.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) responseHeaders.append(key, v);
    else responseHeaders.append(key, value);
  }
  const source = data.body;
  // Destroying it (cancel, no-body statuses) emits an AbortError: ours, not an uncaught exception.
  // The async iterator below has its own listeners, so a real failure still errors the body.
  source.on("error", () => {});
  const noBody = NULL_BODY_STATUS.has(data.statusCode) || (init.method ?? "GET").toUpperCase() === "HEAD";
  if (noBody) source.destroy();
  const chunks = noBody ? undefined : source[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  const body = chunks === undefined ? null : new ReadableStream<Uint8Array>({
    // highWaterMark 0: pull only when the consumer reads, so the Readable's own buffer is the only one.
    async pull(controller) {
      const { value, done } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      source.destroy();
      void chunks.return?.(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: data.statusCode, statusText: data.statusText ?? "", headers: responseHeaders });
}
