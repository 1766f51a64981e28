/**
 * `Status` bodies exactly as kube-apiserver writes them (field order included), and the
 * error type the sandbox throws: a {@link KubeApiError} that also carries its Status body.
 * @module
 */
import { KubeApiError, type KubeStatusCause, reasonForCode as kubeReasonForCode } from "../kube/status.ts";
import { GROUP, qualifiedResource } from "./resources.ts";
import type { SandboxResource } from "./types.ts";

/** A `metav1.Status` failure as JSON. */
export interface StatusBody {
  kind: "Status";
  apiVersion: "v1";
  metadata: { continue?: string; resourceVersion?: string };
  status: "Failure";
  message: string;
  reason: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: KubeStatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** A failed sandbox operation; `status` is the body the HTTP API answers with. */
export class SandboxError extends KubeApiError {
  readonly status: StatusBody;
  constructor(status: StatusBody) {
    super({
      code: status.code,
      reason: status.reason,
      message: status.message,
      retryAfterSeconds: status.details?.retryAfterSeconds,
      causes: status.details?.causes,
      continueToken: status.metadata.continue,
    });
    this.status = status;
  }
}

/** Builds a Status body; `details` is left out when empty, like the apiserver's omitempty. */
export function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: StatusBody["details"],
  metadata: StatusBody["metadata"] = {},
): StatusBody {
  const body: StatusBody = { kind: "Status", apiVersion: "v1", metadata, status: "Failure", message, reason, code };
  if (details && Object.keys(details).length > 0) {
    // Re-insert `code` after `details`, matching the Go struct's field order.
    delete (body as Partial<StatusBody>).code;
    body.details = details;
    body.code = code;
  }
  return body;
}

/** The reason for an HTTP code: kube's table, else a generic fallback (the server always names one). */
export function reasonForCode(code: number): string {
  return kubeReasonForCode(code) ?? (code >= 500 ? "InternalError" : "Unknown");
}

const err = (body: StatusBody) => new SandboxError(body);

/** 404 for a named object. */
export function notFound(resource: SandboxResource, name: string): SandboxError {
  return err(statusBody(404, "NotFound", `${qualifiedResource(resource)} "${name}" not found`, {
    name,
    group: GROUP,
    kind: resource,
  }));
}

/** 404 for a path the server does not serve. */
export function pathNotFound(): SandboxError {
  return err(statusBody(404, "NotFound", "the server could not find the requested resource", {}));
}

export function alreadyExists(resource: SandboxResource, name: string): SandboxError {
  return err(statusBody(409, "AlreadyExists", `${qualifiedResource(resource)} "${name}" already exists`, {
    name,
    group: GROUP,
    kind: resource,
  }));
}

/** 409 Conflict from a failed optimistic-concurrency or precondition check. */
export function conflict(resource: SandboxResource, name: string, why?: string): SandboxError {
  const tail = why ?? "the object has been modified; please apply your changes to the latest version and try again";
  return err(statusBody(409, "Conflict", `Operation cannot be fulfilled on ${qualifiedResource(resource)} "${name}": ${tail}`, {
    name,
    group: GROUP,
    kind: resource,
  }));
}

export function badRequest(message: string): SandboxError {
  return err(statusBody(400, "BadRequest", message));
}

/** One field error of a 422 (`field.Error`). */
export interface FieldError {
  /** `FieldValueForbidden`, `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`. */
  type: string;
  field: string;
  /** The error body, e.g. `Forbidden: sendInitialEvents is forbidden for list`. */
  detail: string;
}

/** 422 Invalid, formatted like `apierrors.NewInvalid`. */
export function invalid(qualifiedKind: string, kind: string, group: string, name: string, errors: FieldError[]): SandboxError {
  const parts = errors.map((e) => `${e.field}: ${e.detail}`);
  const joined = parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`;
  return err(statusBody(422, "Invalid", `${qualifiedKind} "${name}" is invalid: ${joined}`, {
    name: name || undefined,
    group,
    kind,
    causes: errors.map((e) => ({ reason: e.type, message: e.detail, field: e.field })),
  }));
}

/** 422 on the query parameters (kind ListOptions in group meta.k8s.io). */
export function invalidListOptions(errors: FieldError[]): SandboxError {
  return invalid("ListOptions.meta.k8s.io", "ListOptions", "meta.k8s.io", "", errors);
}

/** 410 Expired; `continueToken` is the inconsistent continuation offered for an expired token. */
export function expired(message: string, continueToken?: string): SandboxError {
  return err(statusBody(410, "Expired", message, undefined, continueToken ? { continue: continueToken } : {}));
}

/** 504 for a resourceVersion the server has not reached (`storage.NewTooLargeResourceVersionError`). */
export function tooLargeResourceVersion(requested: number, current: number): SandboxError {
  return err(statusBody(504, "Timeout", `Timeout: Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  }));
}

export function unauthorized(): SandboxError {
  return err(statusBody(401, "Unauthorized", "Unauthorized"));
}

export function methodNotAllowed(): SandboxError {
  return err(statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}));
}

export function unsupportedMediaType(contentType: string): SandboxError {
  return err(statusBody(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json (got "${contentType}")`,
  ));
}

export function internalError(message: string): SandboxError {
  return err(statusBody(500, "InternalError", `Internal error occurred: ${message}`, {
    causes: [{ message }],
  }));
}

/** The Status of an injected `status` fault. */
export function faultStatus(action: {
  code: number;
  reason?: string;
  message?: string;
  retryAfterSeconds?: number;
  causes?: KubeStatusCause[];
}): StatusBody {
  const details: StatusBody["details"] = {};
  if (action.causes?.length) details.causes = action.causes;
  if (action.retryAfterSeconds !== undefined) details.retryAfterSeconds = action.retryAfterSeconds;
  return statusBody(
    action.code,
    action.reason ?? reasonForCode(action.code),
    action.message ?? `injected fault: HTTP ${action.code}`,
    details,
  );
}
