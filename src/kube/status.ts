/**
 * Kubernetes `Status` objects and the one typed error they become.
 * The API server answers failed requests with a `Status` body (JSON, with or
 * without content-length), and watch streams carry the same object inside an
 * `ERROR` event.
 * @module
 */
import * as v from "valibot";

/** The parts of a `metav1.Status` we depend on; anything else is kept loosely. */
export const StatusSchema: v.GenericSchema<unknown, KubeStatus> = v.looseObject({
  kind: v.optional(v.string()),
  status: v.optional(v.string()),
  message: v.optional(v.string()),
  reason: v.optional(v.string()),
  code: v.optional(v.number()),
  metadata: v.optional(v.looseObject({ continue: v.optional(v.string()), resourceVersion: v.optional(v.string()) })),
  details: v.optional(
    v.looseObject({
      name: v.optional(v.string()),
      group: v.optional(v.string()),
      kind: v.optional(v.string()),
      retryAfterSeconds: v.optional(v.number()),
      causes: v.optional(
        v.array(
          v.looseObject({
            reason: v.optional(v.string()),
            message: v.optional(v.string()),
            field: v.optional(v.string()),
          }),
        ),
      ),
    }),
  ),
});

/**
 * A parsed Kubernetes `Status`: the output of {@link StatusSchema}, spelled out
 * (an explicit type keeps the published API free of slow types).
 */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  metadata?: { continue?: string; resourceVersion?: string; [key: string]: unknown };
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    retryAfterSeconds?: number;
    causes?: (KubeStatusCause & { [key: string]: unknown })[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** One cause of a failure, as listed in `Status.details.causes`. */
export interface KubeStatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/**
 * A failed Kubernetes API call: HTTP status, `Status` body, or a watch `ERROR` event.
 * `code` is the HTTP-style code (410, 429, 500, …); `reason` is the machine reason
 * (`Expired`, `Gone`, `TooManyRequests`, `Timeout`, …).
 */
export class KubeApiError extends Error {
  override readonly name: string = "KubeApiError";
  readonly code: number;
  readonly reason: string;
  readonly retryAfterSeconds: number | undefined;
  readonly causes: KubeStatusCause[];
  /** For an expired continue token: the inconsistent continuation the server offers (never used for a consistent sync). */
  readonly continueToken: string | undefined;
  /** `in-stream` when it came from a watch ERROR event, `http` when from the response status. */
  readonly source: "http" | "in-stream";

  constructor(init: {
    code: number;
    reason?: string;
    message?: string;
    retryAfterSeconds?: number;
    causes?: KubeStatusCause[];
    continueToken?: string;
    source?: "http" | "in-stream";
    request?: string;
    /** What to check, appended to the message. */
    hint?: string;
  }) {
    const reason = init.reason ?? "";
    const where = init.request ? ` (${init.request})` : "";
    super(`Kubernetes API ${init.code}${reason ? ` ${reason}` : ""}: ${init.message ?? "no message"}${where}${init.hint ? `; ${init.hint}` : ""}`);
    this.code = init.code;
    this.reason = reason;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.causes = init.causes ?? [];
    this.continueToken = init.continueToken;
    this.source = init.source ?? "http";
  }

  /** 410 Gone / Expired: the resourceVersion or continue token is too old. */
  get isExpired(): boolean {
    return this.code === 410 || this.reason === "Expired" || this.reason === "Gone";
  }

  /** 504 with cause `ResourceVersionTooLarge`: the server has not caught up yet. */
  get isTooLargeResourceVersion(): boolean {
    return (
      this.causes.some((c) => c.reason === "ResourceVersionTooLarge") ||
      /too large resource version/i.test(this.message)
    );
  }
}

/** What a request touched, read from its description (`GET /apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>]`). */
function resourceOf(request: string | undefined): { verbs: string; resource: string; namespace: string | undefined } | undefined {
  const m = request?.match(/^(\w+) \/(?:apis\/([^/]+)\/[^/]+|api\/[^/]+)(?:\/namespaces\/([^/?\s]+))?\/([^/?\s]+)(?:\/([^/?\s]+))?/);
  if (!m) return undefined;
  const [, method, group, namespace, plural, name] = m;
  const verbs = method !== "GET" ? method!.toLowerCase() : name ? "get" : "list and watch";
  return { verbs, resource: group ? `${plural}.${group}` : plural!, namespace };
}

/** What to check after a 401 (the credentials themselves were refused). */
export function authenticationHint(): string {
  return "authentication failed: the API server did not accept the credentials of the kubeconfig user or service account " +
    "(token expired or revoked, wrong token file, client certificate not signed by the cluster CA, or an exec plugin that returns a stale token); " +
    "check the user of the current context (kubectl auth whoami)";
}

/** What to check after a 403 (the identity is known, RBAC does not allow the request). */
export function authorizationHint(request?: string): string {
  const r = resourceOf(request);
  const what = r ? `${r.verbs} on ${r.resource} ${r.namespace ? `in namespace "${r.namespace}"` : "cluster-wide"}` : "this request";
  const check = r ? ` (kubectl auth can-i ${r.verbs.split(" ")[0]} ${r.resource} ${r.namespace ? `-n ${r.namespace}` : "--all-namespaces"})` : "";
  return `authorization failed: RBAC does not allow ${what} for this identity; grant it with a Role and RoleBinding like deploy/rbac.yaml${check}`;
}

/** A 401 from the API server: the credentials were not accepted (after one refresh). */
export class KubeAuthenticationError extends KubeApiError {
  override readonly name = "KubeAuthenticationError";
}

/** A 403 from the API server: RBAC does not allow the request. */
export class KubeAuthorizationError extends KubeApiError {
  override readonly name = "KubeAuthorizationError";
}

type KubeApiErrorInit = ConstructorParameters<typeof KubeApiError>[0];

/** The typed error for a failed call: 401 and 403 as authentication / authorization problems naming what to check. */
export function kubeApiError(init: KubeApiErrorInit): KubeApiError {
  if (init.code === 401) return new KubeAuthenticationError({ ...init, hint: authenticationHint() });
  if (init.code === 403) return new KubeAuthorizationError({ ...init, hint: authorizationHint(init.request) });
  return new KubeApiError(init);
}

/** Builds the typed error from a `Status` object (from a body or an ERROR event). */
export function errorFromStatus(
  status: unknown,
  fallback: { code: number; source: "http" | "in-stream"; request?: string; retryAfterHeader?: string | null },
): KubeApiError {
  const parsed = v.safeParse(StatusSchema, status);
  const s: KubeStatus = parsed.success ? parsed.output : {};
  const headerRetry = parseRetryAfter(fallback.retryAfterHeader ?? null);
  return kubeApiError({
    code: s.code && s.code > 0 ? s.code : fallback.code,
    reason: s.reason,
    message: s.message ?? (parsed.success ? undefined : `unexpected error body: ${JSON.stringify(status)?.slice(0, 200)}`),
    retryAfterSeconds: s.details?.retryAfterSeconds ?? headerRetry,
    causes: s.details?.causes,
    continueToken: s.metadata?.continue || undefined,
    source: fallback.source,
    request: fallback.request,
  });
}

/** Parses a `Retry-After` header (seconds or HTTP date) into seconds. */
export function parseRetryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const when = Date.parse(trimmed);
  if (Number.isNaN(when)) return undefined;
  return Math.max(0, Math.ceil((when - Date.now()) / 1000));
}

/**
 * Reads a non-2xx response into a KubeApiError. Works for JSON with or without
 * content-length, chunked bodies, and non-JSON bodies (proxies, load balancers).
 */
export async function errorFromResponse(res: Response, request: string): Promise<KubeApiError> {
  let text = "";
  try {
    text = await res.text();
  } catch {
    // A body that cannot be read still has a status code.
  }
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const retryAfterHeader = res.headers.get("retry-after");
  if (body && typeof body === "object" && (body as { kind?: unknown }).kind === "Status") {
    return errorFromStatus(body, { code: res.status, source: "http", request, retryAfterHeader });
  }
  return kubeApiError({
    code: res.status,
    reason: reasonForCode(res.status) ?? "",
    message: text ? text.slice(0, 500) : res.statusText || "no body",
    retryAfterSeconds: parseRetryAfter(retryAfterHeader),
    source: "http",
    request,
  });
}

/** The `Status.reason` kube-apiserver uses for an HTTP code, when there is a standard one. */
export function reasonForCode(code: number): string | undefined {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return undefined;
  }
}
