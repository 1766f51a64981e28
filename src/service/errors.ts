/**
 * The one shape of every HTTP error (docs/protocol.md): `{"code", "message", …}` with a status.
 * @module
 */
import type { Context } from "hono";

/** The error codes of the HTTP API (Connect's names). */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
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
