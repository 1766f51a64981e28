/**
 * One rule for request targets on every runtime (docs/protocol.md, "Paths"). Node (node-server's
 * `new URL`) and Bun (its server, before the handler) resolve dot segments as the URL standard
 * does; Deno hands over the target as sent. So the app resolves them itself ({@link requestPath},
 * Hono's `getPath`): `/x/../v1/apps`, `/v1/./apps` and `/v1/%2e%2e/v1/apps` are routed (and
 * guarded) as the path they resolve to, everywhere. A method outside RFC 9110's is 501, a request
 * target over {@link MAX_TARGET_CHARS} a 414 ({@link installPathRule}).
 * @module
 */
import type { Hono } from "hono";
import { getPath } from "hono/utils/url";
import { errorResponse } from "./errors.ts";

/** Longest request target (path and query) the service reads, in characters (it is ASCII on the wire). */
export const MAX_TARGET_CHARS = 8192;

/** The methods of RFC 9110 (and PATCH, RFC 5789): a route may not have them (405); any other is not a method this service knows (501). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);

/** A `.` or `..` segment (after Hono's decoding, so `%2e` counts, as in the URL standard). */
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/**
 * The path Hono routes by: Hono's own (percent-decoded but for reserved characters: `%2F` stays
 * in its segment), with dot segments removed the way the URL standard removes them (a last `.` or
 * `..` leaves a trailing slash; `..` above the root stays at the root).
 */
export function requestPath(req: Request): string {
  const path = getPath(req);
  return DOT_SEGMENT.test(path) ? removeDotSegments(path) : path;
}

function removeDotSegments(path: string): string {
  const segments = path.split("/").slice(1);
  const out: string[] = [];
  segments.forEach((s, i) => {
    const last = i === segments.length - 1;
    if (s === "..") out.pop();
    if (s === "." || s === "..") {
      if (last) out.push("");
    } else out.push(s);
  });
  return `/${out.join("/")}`;
}

/** The request target's length: the URL from its path on (Hono's `getPath` finds the path the same way). */
function targetChars(url: string): number {
  const start = url.indexOf("/", url.indexOf(":") + 3);
  return start < 0 ? 0 : url.length - start;
}

/**
 * Refuses, before any route, a method this service does not know (501 `unimplemented`) and a
 * request target over {@link MAX_TARGET_CHARS} (414 `invalid_argument`), in the error shape.
 */
export function installPathRule(app: Hono): void {
  app.use("*", async (c, next) => {
    const method = c.req.method;
    if (!KNOWN_METHODS.has(method)) {
      return errorResponse(c, 501, "unimplemented", `${method} is not an HTTP method this service implements`);
    }
    const chars = targetChars(c.req.url);
    if (chars > MAX_TARGET_CHARS) {
      return errorResponse(c, 414, "invalid_argument", `the request target is ${chars} characters; the limit is ${MAX_TARGET_CHARS}`);
    }
    await next();
  });
}
