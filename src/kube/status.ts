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
  override readonly name = "KubeApiError";
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
  }) {
    const reason = init.reason ?? "";
    const where = init.request ? ` (${init.request})` : "";
    super(`Kubernetes API ${init.code}${reason ? ` ${reason}` : ""}: ${init.message ?? "no message"}${where}`);
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

/** Builds the typed error from a `Status` object (from a body or an ERROR event). */
export function errorFromStatus(
  status: unknown,
  fallback: { code: number; source: "http" | "in-stream"; request?: string; retryAfterHeader?: string | null },
): KubeApiError {
  const parsed = v.safeParse(StatusSchema, status);
  const s: KubeStatus = parsed.success ? parsed.output : {};
  const headerRetry = parseRetryAfter(fallback.retryAfterHeader ?? null);
  return new KubeApiError({
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
  return new KubeApiError({
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
