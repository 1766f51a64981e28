/**
 * A tiny Kubernetes REST client over `fetch`: builds URLs, adds credentials,
 * retries once after a 401 with refreshed credentials, and turns failures into
 * {@link KubeApiError} (an HTTP answer) or {@link KubeTransportError} (none). It knows nothing
 * about watch semantics.
 * @module
 */
import { toTransportError } from "./errors.ts";
import { errorFromResponse, KubeApiError } from "./status.ts";

/** A `fetch`-compatible function (the per-runtime TLS transport provides one). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Supplies the Authorization header; refreshed on demand. Never log what it returns. */
export interface Credentials {
  /** The `Authorization` header value, or undefined for anonymous / client-certificate auth. */
  authorization(): Promise<string | undefined>;
  /** Forget cached credentials (called after a 401) so the next call re-reads them. */
  invalidate(): void;
}

/** Anonymous (or client-certificate-only) credentials. */
export const noCredentials: Credentials = {
  authorization: () => Promise.resolve(undefined),
  invalidate: () => {},
};

/** A fixed bearer token. */
export function bearerToken(token: string): Credentials {
  return { authorization: () => Promise.resolve(`Bearer ${token}`), invalidate: () => {} };
}

/** Query parameters; `undefined` values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** One API request. */
export interface KubeRequest {
  method?: string;
  /** Absolute API path, e.g. `/apis/serving.knative.dev/v1/namespaces/flyte/services`. */
  path: string;
  query?: Query;
  /** JSON body (serialised here). */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Options for {@link KubeClient}. */
export interface KubeClientOptions {
  /** API server base URL, e.g. `https://127.0.0.1:6443`. */
  server: string;
  credentials?: Credentials;
  /** Transport; defaults to the global `fetch`. */
  fetch?: FetchLike;
  /** Releases transport resources (TLS clients, agents). */
  close?: () => void | Promise<void>;
  /** Default namespace of the kubeconfig context or service account. */
  namespace?: string;
  /** `User-Agent` header. */
  userAgent?: string;
}

/** A minimal Kubernetes API client. */
export class KubeClient {
  readonly server: string;
  readonly namespace: string | undefined;
  readonly #credentials: Credentials;
  readonly #fetch: FetchLike;
  readonly #close: (() => void | Promise<void>) | undefined;
  readonly #userAgent: string;

  constructor(options: KubeClientOptions) {
    this.server = options.server.replace(/\/+$/, "");
    this.namespace = options.namespace;
    this.#credentials = options.credentials ?? noCredentials;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#close = options.close;
    this.#userAgent = options.userAgent ?? "appwatch/0.1";
  }

  /** Builds the full URL of a request. */
  url(path: string, query: Query = {}): string {
    const url = new URL(this.server + path);
    for (const [k, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(k, String(value));
    }
    return url.toString();
  }

  /**
   * Sends a request and returns the raw response, whatever its status.
   * A 401 invalidates the credentials and retries exactly once.
   */
  async request(req: KubeRequest): Promise<Response> {
    const first = await this.#send(req);
    if (first.status !== 401) return first;
    await first.body?.cancel().catch(() => {});
    this.#credentials.invalidate();
    return await this.#send(req);
  }

  /** Sends a request and parses a JSON answer; a non-2xx status throws {@link KubeApiError}. */
  async json(req: KubeRequest): Promise<unknown> {
    const res = await this.request(req);
    if (!res.ok) throw await errorFromResponse(res, describe(req));
    return await res.json();
  }

  /** Releases transport resources. */
  async close(): Promise<void> {
    await this.#close?.();
  }

  async #send(req: KubeRequest): Promise<Response> {
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": this.#userAgent,
      ...req.headers,
    };
    const authorization = await this.#credentials.authorization();
    if (authorization) headers.authorization = authorization;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] ??= "application/json";
    }
    const url = this.url(req.path, req.query);
    try {
      return await this.#fetch(url, { method: req.method ?? "GET", headers, body, signal: req.signal });
    } catch (err) {
      // An abort is the caller's own doing (shutdown, a watch timeout): it stays what it was.
      if (req.signal?.aborted) throw err;
      throw toTransportError(err, url);
    }
  }
}

/** A short description of a request for error messages (never includes credentials). */
export function describe(req: KubeRequest): string {
  return `${req.method ?? "GET"} ${req.path}`;
}

export { KubeApiError };
export { KubeTransportError } from "./errors.ts";
