/**
 * Who may call the API: the `Origin` allow-list, then bearer auth. One rule for every route and
 * transport — REST, SSE and WebSocket on `/v1/*` (app.ts) and AppService over Connect, gRPC-Web
 * and gRPC (connect/handlers.ts) — each answering a refusal in its own error shape.
 *
 * The Origin rule: with no allow-list every request passes. With one, a request without an
 * `Origin` header passes (not a browser), and a request with one passes only if its value is on
 * the list — an empty `Origin:` is a header that names no allowed origin, so it is refused like
 * any other foreign one (browsers never send it; `null` is refused the same way).
 * @module
 */
import type { BearerAuth } from "./auth.ts";

/** Why a request is refused: the metrics reason, the error code and its message. */
export interface AccessRefusal {
  reason: "origin" | "auth";
  code: "permission_denied" | "unauthenticated";
  message: string;
}

/** The parts of a request the rule reads (`undefined`: the header is absent). */
export interface AccessRequest {
  origin: string | undefined;
  authorization: string | undefined;
  /** The `access_token` query parameter, where the route accepts one (browsers cannot set headers on WebSocket/EventSource). */
  accessToken?: string | undefined;
}

/** The access rule of one service. */
export interface AccessGuard {
  /** The refusal for `req`, or undefined when it may proceed. */
  check(req: AccessRequest): Promise<AccessRefusal | undefined>;
}

/** The rule for `origins` (none or empty: any origin) and `auth` (none: no auth). */
export function createAccessGuard(origins: Iterable<string> | undefined, auth: BearerAuth | undefined): AccessGuard {
  const list = origins ? new Set(origins) : undefined;
  const allowed = list?.size ? list : undefined;
  return {
    async check(req) {
      if (allowed && req.origin !== undefined && !allowed.has(req.origin)) {
        return { reason: "origin", code: "permission_denied", message: `origin ${JSON.stringify(req.origin)} is not allowed` };
      }
      if (auth) {
        const presented = req.authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1] ?? req.accessToken;
        if (presented === undefined || !(await auth.verify(presented))) {
          return { reason: "auth", code: "unauthenticated", message: presented === undefined ? "a bearer token is required" : "the bearer token is not valid" };
        }
      }
      return undefined;
    },
  };
}
