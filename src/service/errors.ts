/**
 * The one shape of every HTTP error (docs/protocol.md): `{"code", "message", …}` with a status,
 * also for requests no route serves (404, or 405 with `Allow` when the path has routes for other
 * methods) and for handler failures (500).
 * @module
 */
import type { Context, Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import type { Logger } from "../log.ts";

/** The error codes of the HTTP API (Connect's names). */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "unimplemented"
  | "unauthenticated"
  | "permission_denied"
  | "resource_exhausted"
  | "unavailable"
  | "internal"
  | "failed_precondition";

/** A JSON error response. */
export function errorResponse(c: Context, status: number, code: ErrorCode, message: string, extra: Record<string, unknown> = {}): Response {
  return c.json({ code, message, ...extra }, status as 400);
}

/**
 * Answers unmatched requests and thrown errors of `app` in the contract's shape. Call it once the
 * routes are registered or not: the methods of each path are read from `app.routes` on the first
 * unmatched request, so the route table is never written twice.
 */
export function installErrorContract(app: Hono, log: Logger): void {
  let methods: TrieRouter<string> | undefined;
  const allowed = (path: string): string[] => {
    if (!methods) {
      methods = new TrieRouter<string>();
      // Middleware (`use`) registers as ALL on every path; only real routes say which methods a path has.
      for (const r of app.routes) if (r.method !== "ALL") methods.add(r.method, r.path, r.method);
    }
    const found = new Set<string>();
    for (const m of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      if (methods.match(m, path)[0].length > 0) found.add(m);
    }
    if (found.has("GET")) found.add("HEAD"); // Hono answers HEAD with the GET route
    return [...found];
  };
  app.notFound((c) => {
    const method = c.req.method;
    const allow = allowed(c.req.path);
    if (allow.length > 0 && !allow.includes(method)) {
      c.header("Allow", allow.join(", "));
      return errorResponse(c, 405, "unimplemented", `${method} is not allowed on ${c.req.path}: use ${allow.join(" or ")}`);
    }
    return errorResponse(c, 404, "not_found", `no route for ${method} ${c.req.path}`);
  });
  app.onError((err, c) => {
    log.error("request failed", { method: c.req.method, path: c.req.path, error: err instanceof Error ? err.message : String(err) });
    return errorResponse(c, 500, "internal", "internal error");
  });
}
