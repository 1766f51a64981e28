/**
 * What AppService's handlers read from requests, checked after protobuf-es has decoded them
 * (proto3 JSON shapes), and the Connect error that names the field at fault.
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import * as v from "valibot";
import { subscribeTarget } from "../../flyte/hub.ts";
import { type ClusterInfo, otherCluster } from "../info.ts";
import { Name } from "../schemas.ts";

// Identities are names as in the REST API: before the first sync they reach label and field selectors.
const OptionalName = v.optional(v.union([v.literal(""), Name], "must be letters, digits, '.', '_' or '-', starting and ending with a letter or digit"), "");
export const IdentifierJson = v.object({
  org: v.optional(v.string(), ""),
  project: v.optional(v.string(), ""),
  domain: v.optional(v.string(), ""),
  name: v.optional(v.string(), ""),
});
export const AppIdJson = v.object({ org: OptionalName, project: Name, domain: Name, name: Name });
export const ProjectJson = v.object({ organization: OptionalName, domain: OptionalName, name: Name });
/** `common.ClusterIdentifier`. */
export const ClusterIdJson = v.object({ organization: OptionalName, name: Name });
export const WatchRequestJson = v.object({
  org: v.optional(v.string()),
  clusterId: v.optional(v.unknown()),
  project: v.optional(v.unknown()),
  appId: v.optional(v.unknown()),
});
export const ListRequestJson = v.object({
  request: v.optional(v.object({ limit: v.optional(v.number(), 0), token: v.optional(v.string(), "") })),
  org: v.optional(v.string()),
  clusterId: v.optional(v.unknown()),
  project: v.optional(v.object({ organization: OptionalName, domain: OptionalName, name: OptionalName })),
});
export const GetRequestJson = v.object({ appId: v.optional(IdentifierJson), ingress: v.optional(v.unknown()) });

/** An `invalid_argument` naming the request field at fault. */
export function invalid(field: string, issues: v.BaseIssue<unknown>[]): ConnectError {
  const issue = issues[0];
  const path = issue?.path?.map((p) => String(p.key)).join(".");
  return new ConnectError(`${field}${path ? `.${path}` : ""}: ${issue?.message ?? "is not valid"}`, Code.InvalidArgument);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Checks a `cluster_id` against the cluster served: `invalid_argument` when it is malformed,
 * `not_found` naming the cluster served when it is another (or this one has no name).
 */
export function clusterOf(json: unknown, cluster: ClusterInfo): void {
  const id = v.safeParse(ClusterIdJson, json);
  if (!id.success) throw invalid("clusterId", id.issues);
  const other = otherCluster(cluster, { name: id.output.name, ...(id.output.organization ? { organization: id.output.organization } : {}) });
  if (other) throw new ConnectError(other, Code.NotFound);
}

/** The subscription target of a `WatchRequest` (Flyte: only `appId`; here also `project`, `org` and this `cluster_id`). */
export function watchTargetOf(json: unknown, cluster: ClusterInfo): ReturnType<typeof subscribeTarget> {
  const req = v.safeParse(WatchRequestJson, json);
  if (!req.success) throw invalid("WatchRequest", req.issues);
  const r = req.output;
  if (r.clusterId !== undefined) {
    // This cluster: every app of it.
    clusterOf(r.clusterId, cluster);
    return subscribeTarget({});
  }
  if (r.appId !== undefined) {
    const id = v.safeParse(AppIdJson, r.appId);
    if (!id.success) throw invalid("appId", id.issues);
    const { org, project, domain, name } = id.output;
    return subscribeTarget({ org, project, domain, name });
  }
  if (r.project !== undefined) {
    const p = v.safeParse(ProjectJson, r.project);
    if (!p.success) throw invalid("project", p.issues);
    const { organization, domain, name } = p.output;
    return subscribeTarget({ org: organization, project: name, domain: domain || undefined });
  }
  if (r.org !== undefined) {
    const org = v.safeParse(Name, r.org);
    if (!org.success) throw new ConnectError(`org: ${org.issues[0].message}`, Code.InvalidArgument);
    return subscribeTarget({ org: r.org });
  }
  // No target: every app (Flyte sends a snapshot of all apps and then never a live event).
  return subscribeTarget({});
}
