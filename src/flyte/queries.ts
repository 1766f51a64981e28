/**
 * Flyte's `List` and `GetApp`, answered from the hub once it is synced (no API-server round trip,
 * no conversion per request, across every watched namespace), and from the API server only before
 * the first sync. Both filter and key by the app-id identity — the same identity every stream uses
 * — not by labels or KService names, which can disagree with it.
 * @module
 */
import { base64UrlToText, textToBase64Url } from "../base64url.ts";
import type { KubeClient } from "../kube/client.ts";
import { errorFromResponse } from "../kube/status.ts";
import type { Logger } from "../log.ts";
import { collectionPath, KNATIVE_SERVICES, type KubeObject } from "../watch/types.ts";
import { goQuote } from "./gostrings.ts";
import type { AppHub } from "./hub.ts";
import type { App, Identifier } from "./model.ts";
import { KServiceName } from "./naming.ts";

/** The label every Flyte-managed KService carries. */
export const APP_MANAGED_SELECTOR = "flyte.org/app-managed=true";

/** No app has that identity. */
export class AppNotFoundError extends Error {
  override readonly name = "AppNotFoundError";
}

/** A `List` page token that is not one this service hands out. */
export class InvalidPageTokenError extends Error {
  override readonly name = "InvalidPageTokenError";
}

/**
 * Flyte's `GetApp` not-found text: `KService <name> not found: <the Kubernetes error>` (it wraps the
 * API server's NotFound with `%w`); the Kubernetes part is the Status message the server sent, or
 * the one it would send when the lookup did not go through a GET of that name.
 */
export function notFoundText(name: string, kubernetesMessage?: string): string {
  return `KService ${name} not found: ${kubernetesMessage ?? `services.serving.knative.dev ${goQuote(name)} not found`}`;
}

/** A page token: the KService (`namespace/name`) the previous page ended with. Opaque, the same on every replica. */
function encodePageToken(after: string): string {
  return textToBase64Url(JSON.stringify({ v: 1, after }));
}

function decodePageToken(token: string): string {
  try {
    const text = token.length <= 2048 && token !== "" ? base64UrlToText(token) : undefined;
    if (text === undefined) throw new Error("not base64url");
    const json = JSON.parse(text);
    if (json?.v !== 1 || typeof json.after !== "string") throw new Error("not a page token");
    return json.after;
  } catch {
    throw new InvalidPageTokenError("the page token is not valid: use the token a previous page returned");
  }
}

/** What the queries need besides the hub. */
export interface QuerySource {
  hub: AppHub;
  /** True once the hub holds a complete snapshot. */
  readonly synced: boolean;
  client: KubeClient;
  /** Watched namespaces (`[]`: all). */
  namespaces: readonly string[];
  /** Converts a KService read from the API server (before the first sync). */
  convert(ksvc: KubeObject): App;
  logger: Logger;
  onConversionError(): void;
}

/**
 * Flyte's `List`: apps of a project and domain (either may be empty: no filter), in KService order,
 * `limit` per page (0: all) and a `token` to continue after the previous page. `org` (appwatch's;
 * Flyte's data plane refuses it): only that org's apps — before the first sync it is applied to
 * the API server's page, which then may hold fewer than `limit` (the org is an annotation, no label).
 */
export async function listApps(src: QuerySource, project: string, domain: string, limit: number, token: string, org = ""): Promise<{ apps: App[]; token: string }> {
  if (!src.synced) {
    const page = await listFromApi(src, project, domain, limit, token);
    return org ? { apps: page.apps.filter((a) => (a.metadata?.id?.org ?? "") === org), token: page.token } : page;
  }
  const after = token ? decodePageToken(token) : undefined;
  const matching = src.hub.list().filter((s) => {
    const id = s.app.metadata?.id;
    return (project === "" || (id?.project ?? "") === project) && (domain === "" || (id?.domain ?? "") === domain) &&
      (org === "" || (id?.org ?? "") === org) && (after === undefined || s.source > after);
  });
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const more = limit > 0 && matching.length > limit;
  return { apps: page.map((s) => s.app), token: more ? encodePageToken(page[page.length - 1]!.source) : "" };
}

/** Flyte's `GetApp`: the app of `id` (any org unless `id.org` is given), or {@link AppNotFoundError}. */
export async function getApp(src: QuerySource, id: Identifier): Promise<App> {
  const name = KServiceName(id);
  if (src.synced) {
    const found = src.hub.get(id);
    if (!found) {
      // appwatch's exact identity: the app exists, in another org than the one asked for
      if (id.org && src.hub.get({ ...id, org: "" })) throw new AppNotFoundError(`app ${id.org}/${id.project}/${id.domain}/${id.name} not found`);
      throw new AppNotFoundError(notFoundText(name));
    }
    return found.app;
  }
  return await getFromApi(src, id, name);
}

// ---- before the first sync: the API server, as Flyte does (first namespace, labels, continue)

async function listFromApi(src: QuerySource, project: string, domain: string, limit: number, token: string): Promise<{ apps: App[]; token: string }> {
  const selector = [APP_MANAGED_SELECTOR, project ? `flyte.org/project=${project}` : "", domain ? `flyte.org/domain=${domain}` : ""].filter(Boolean).join(",");
  const body = await src.client.json({
    path: collectionPath(KNATIVE_SERVICES, src.namespaces[0]),
    query: { labelSelector: selector, limit: limit > 0 ? limit : undefined, continue: token || undefined },
  }) as { items?: KubeObject[]; metadata?: { continue?: string } };
  const apps: App[] = [];
  for (const item of body.items ?? []) {
    try {
      apps.push(src.convert(item));
    } catch (err) {
      src.onConversionError();
      src.logger.warn(`Skipping KService ${item.metadata?.name}: failed to convert to app: ${(err as Error).message}`);
    }
  }
  return { apps, token: body.metadata?.continue ?? "" };
}

/** Same identity, the org only when asked for one (the KService name alone collides: `b-c/d/a` and `c/d/a-b`). */
function sameIdentity(app: App, id: Identifier): boolean {
  const got = app.metadata?.id;
  return (got?.project ?? "") === (id.project ?? "") && (got?.domain ?? "") === (id.domain ?? "") && (got?.name ?? "") === (id.name ?? "") &&
    (!id.org || got?.org === id.org);
}

async function getFromApi(src: QuerySource, id: Identifier, name: string): Promise<App> {
  if (src.namespaces.length === 0) {
    const body = await src.client.json({
      path: collectionPath(KNATIVE_SERVICES),
      query: { labelSelector: APP_MANAGED_SELECTOR, fieldSelector: `metadata.name=${name}` },
    }) as { items?: KubeObject[] };
    for (const o of body.items ?? []) {
      const app = tryConvert(src, o);
      if (app && sameIdentity(app, id)) return app;
    }
    throw new AppNotFoundError(notFoundText(name));
  }
  let notFound: string | undefined;
  for (const namespace of src.namespaces) {
    const res = await src.client.request({ path: `${collectionPath(KNATIVE_SERVICES, namespace)}/${encodeURIComponent(name)}` });
    if (res.status === 404) {
      const status = await res.json().catch(() => undefined) as { message?: unknown } | undefined;
      notFound ??= typeof status?.message === "string" ? status.message : undefined;
      continue;
    }
    if (!res.ok) throw await errorFromResponse(res, `GET KService ${name}`);
    const app = tryConvert(src, await res.json() as KubeObject);
    if (app && sameIdentity(app, id)) return app;
  }
  throw new AppNotFoundError(notFoundText(name, notFound));
}

function tryConvert(src: QuerySource, ksvc: KubeObject): App | undefined {
  try {
    return src.convert(ksvc);
  } catch {
    return undefined;
  }
}
