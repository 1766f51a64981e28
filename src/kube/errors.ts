/**
 * Transport failures as one typed error: the request never got an HTTP answer (nothing listens,
 * the host does not resolve, the certificate is not trusted, …). Each runtime reports these its
 * own way — Node's undici `TypeError("fetch failed")` with a `cause.code`, Deno a message such as
 * "Connection refused (os error 111)" in `cause.message`, Bun a `code` on the error itself
 * (`ECONNREFUSED`, or `ConnectionRefused` in older releases) — and all become the same codes here.
 * @module
 */
import { KubeApiError, KubeAuthenticationError, KubeAuthorizationError } from "./status.ts";

/** The normalised cause of a {@link KubeTransportError}. */
export type TransportErrorCode =
  | "ECONNREFUSED"
  | "ENOTFOUND"
  | "ECONNRESET"
  | "ETIMEDOUT"
  | "EHOSTUNREACH"
  | "ENETUNREACH"
  | "CERT_UNTRUSTED"
  | "CERT_HOSTNAME_MISMATCH"
  | "CERT_EXPIRED"
  | "CERT_INVALID"
  | "TLS_HANDSHAKE"
  | "UNKNOWN";

/** What to check, per cause (never anything secret). */
const HINTS: Record<TransportErrorCode, (host: string) => string> = {
  ECONNREFUSED: (host) => `nothing accepts connections on ${host}: is the API server running, and is the cluster's server address in the kubeconfig right?`,
  ENOTFOUND: (host) => `the host of ${host} does not resolve: check the cluster's server address in the kubeconfig, and DNS`,
  ECONNRESET: (host) => `${host} closed the connection: is it the API server (and does it speak TLS if the URL is https)?`,
  ETIMEDOUT: (host) => `${host} did not answer in time: check the network path (firewall, proxy, VPN)`,
  EHOSTUNREACH: (host) => `no route to ${host}: check the network path (firewall, VPN)`,
  ENETUNREACH: (host) => `the network of ${host} is unreachable: check the network path (firewall, VPN)`,
  CERT_UNTRUSTED: (host) =>
    `the certificate of ${host} is not signed by a trusted CA: check certificate-authority / certificate-authority-data of the cluster in the kubeconfig`,
  CERT_HOSTNAME_MISMATCH: (host) =>
    `the certificate of ${host} is not valid for that name: check the cluster's server address, or set tls-server-name to a name the certificate holds`,
  CERT_EXPIRED: (host) => `the certificate of ${host} has expired (or is not valid yet): renew it, or check this machine's clock`,
  CERT_INVALID: (host) => `the certificate of ${host} was refused: check the cluster's certificate settings in the kubeconfig`,
  TLS_HANDSHAKE: (host) =>
    `the TLS handshake with ${host} failed: the server may require a client certificate (client-certificate / client-key of the kubeconfig user), or not speak TLS`,
  UNKNOWN: (host) => `the request to ${host} failed before any answer`,
};

/** A request to the Kubernetes API that never got an HTTP answer. */
export class KubeTransportError extends Error {
  override readonly name = "KubeTransportError";
  /** The request URL (no credentials: they travel in headers). */
  readonly url: string;
  /** The normalised cause, the same on Node, Deno and Bun. */
  readonly code: TransportErrorCode;
  /** What the runtime said, e.g. `ECONNREFUSED` or `Connection refused (os error 111)`. */
  readonly detail: string;

  constructor(init: { url: string; code: TransportErrorCode; detail: string; cause?: unknown }) {
    const url = withoutUserinfo(init.url);
    const detail = withoutUserinfo(init.detail);
    super(`cannot reach the Kubernetes API at ${originAndPath(url)}: ${init.code} (${detail}); ${HINTS[init.code](originOf(url))}`, { cause: init.cause });
    this.url = url;
    this.code = init.code;
    this.detail = detail;
  }
}

/** A server URL may carry `user:password@`: never repeat it. */
function withoutUserinfo(text: string): string {
  return text.replace(/(\/\/)[^/@\s]+@/g, "$1");
}

function originOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function originAndPath(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url;
  }
}

/** A code and a message from each level of an error's `cause` chain (at most a few). */
function chain(err: unknown): { codes: string[]; messages: string[] } {
  const codes: string[] = [];
  const messages: string[] = [];
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e !== undefined && e !== null; depth++) {
    const o = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof o.code === "string" && o.code) codes.push(o.code);
    if (typeof o.message === "string" && o.message) messages.push(o.message);
    else if (typeof e === "string") messages.push(e);
    e = typeof e === "object" ? o.cause : undefined;
  }
  return { codes, messages };
}

const BY_CODE: Record<string, TransportErrorCode> = {
  ECONNREFUSED: "ECONNREFUSED",
  ConnectionRefused: "ECONNREFUSED",
  ENOTFOUND: "ENOTFOUND",
  EAI_AGAIN: "ENOTFOUND",
  EAI_NONAME: "ENOTFOUND",
  DNSException: "ENOTFOUND",
  ECONNRESET: "ECONNRESET",
  ConnectionClosed: "ECONNRESET",
  UND_ERR_SOCKET: "ECONNRESET",
  EPIPE: "ECONNRESET",
  ETIMEDOUT: "ETIMEDOUT",
  UND_ERR_CONNECT_TIMEOUT: "ETIMEDOUT",
  Timeout: "ETIMEDOUT",
  EHOSTUNREACH: "EHOSTUNREACH",
  ENETUNREACH: "ENETUNREACH",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "CERT_UNTRUSTED",
  UNABLE_TO_GET_ISSUER_CERT: "CERT_UNTRUSTED",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "CERT_UNTRUSTED",
  SELF_SIGNED_CERT_IN_CHAIN: "CERT_UNTRUSTED",
  DEPTH_ZERO_SELF_SIGNED_CERT: "CERT_UNTRUSTED",
  CERT_UNTRUSTED: "CERT_UNTRUSTED",
  ERR_TLS_CERT_ALTNAME_INVALID: "CERT_HOSTNAME_MISMATCH",
  CERT_HAS_EXPIRED: "CERT_EXPIRED",
  CERT_NOT_YET_VALID: "CERT_EXPIRED",
  EPROTO: "TLS_HANDSHAKE",
  ERR_SSL_WRONG_VERSION_NUMBER: "TLS_HANDSHAKE",
};

/** Deno (rustls, hyper, the OS) says it in words. */
const BY_MESSAGE: [RegExp, TransportErrorCode][] = [
  [/connection refused|os error 111\b|os error 61\b|os error 10061\b/i, "ECONNREFUSED"],
  [/dns error|failed to lookup address|name or service not known|nodename nor servname|no address associated|getaddrinfo/i, "ENOTFOUND"],
  [/unknownissuer|unknown ?issuer|self[- ]signed|unable to verify|untrusted/i, "CERT_UNTRUSTED"],
  [/not valid for name|notvalidforname|altnames|hostname mismatch/i, "CERT_HOSTNAME_MISMATCH"],
  [/certificate (has )?expired|\bexpired\b|notvalidyet/i, "CERT_EXPIRED"],
  [/invalid peer certificate|bad ?certificate|certificate/i, "CERT_INVALID"],
  [/connection reset|os error 104\b|os error 54\b|broken pipe|other side closed|connection closed/i, "ECONNRESET"],
  [/timed out|os error 110\b/i, "ETIMEDOUT"],
  [/no route to host|os error 113\b/i, "EHOSTUNREACH"],
  [/network is unreachable|os error 101\b/i, "ENETUNREACH"],
  [/tls|handshake|alert/i, "TLS_HANDSHAKE"],
];

/** The normalised code of a failed fetch and the runtime's own words for it. */
export function classifyTransportError(err: unknown): { code: TransportErrorCode; detail: string } {
  const { codes, messages } = chain(err);
  // The innermost message is the most specific (Node: "connect ECONNREFUSED 127.0.0.1:6443").
  const detail = [...messages].reverse().find((m) => m !== "fetch failed") ?? codes[0] ?? "fetch failed";
  for (const c of [...codes].reverse()) {
    const known = BY_CODE[c];
    if (known) return { code: known, detail };
    if (c.startsWith("CERT_") || c.startsWith("ERR_TLS_CERT")) return { code: "CERT_INVALID", detail };
  }
  for (const m of [...messages].reverse()) {
    for (const [pattern, code] of BY_MESSAGE) if (pattern.test(m)) return { code, detail };
  }
  return { code: "UNKNOWN", detail };
}

/** `err` (a rejected fetch of `url`) as a {@link KubeTransportError}; one already typed is kept. */
export function toTransportError(err: unknown, url: string): KubeTransportError {
  if (err instanceof KubeTransportError) return err;
  const { code, detail } = classifyTransportError(err);
  return new KubeTransportError({ url, code, detail, cause: err });
}

/**
 * One line for a failed attempt to reach the cluster, naming the kind of problem: no answer
 * (transport), credentials refused (401), RBAC (403), or another API answer. `level` is `error`
 * for what needs a person (credentials, RBAC, certificates), `warn` for what may pass.
 */
export function describeKubeFailure(err: unknown): { level: "warn" | "error"; message: string } {
  if (err instanceof KubeTransportError) {
    const person = err.code.startsWith("CERT_") || err.code === "TLS_HANDSHAKE";
    return { level: person ? "error" : "warn", message: `cannot reach the Kubernetes API at ${originOf(err.url)} (${err.code})` };
  }
  if (err instanceof KubeAuthenticationError) return { level: "error", message: "the Kubernetes API refused appwatch's credentials (401 Unauthorized)" };
  if (err instanceof KubeAuthorizationError) return { level: "error", message: "the Kubernetes API forbids appwatch's request (403 Forbidden: RBAC)" };
  if (err instanceof KubeApiError) return { level: "warn", message: `the Kubernetes API answered ${err.code}${err.reason ? ` ${err.reason}` : ""}` };
  return { level: "warn", message: "the Kubernetes API request failed" };
}
