/**
 * The checks `AppK8sClient.startWatching` makes before it watches: one `limit=1` list of app
 * KServices per watched namespace, so a missing Knative or missing permissions fail with an
 * error that names the cause and the fix, not a watch that retries forever; and one of Revisions,
 * whose absence only costs the replica counts.
 * @module
 */
import type { KubeClient } from "../kube/client.ts";
import { errorFromResponse } from "../kube/status.ts";
import type { Logger } from "../log.ts";
import { collectionPath, KNATIVE_REVISIONS, KNATIVE_SERVICES } from "../watch/types.ts";
import { APP_MANAGED_SELECTOR } from "./queries.ts";

/** Knative Serving is not installed: the `serving.knative.dev/v1` `services` resource does not exist. */
export class KnativeNotInstalledError extends Error {
  override readonly name = "KnativeNotInstalledError";
}

/** The credentials may not list/watch Knative Services (403). */
export class AppsForbiddenError extends Error {
  override readonly name = "AppsForbiddenError";
}

/**
 * Lists one app KService in each of `namespaces` (cluster-wide when empty). 404:
 * {@link KnativeNotInstalledError}; 403: {@link AppsForbiddenError}; any other failure: the
 * Kubernetes error as it came.
 */
export async function preflight(client: KubeClient, namespaces: readonly string[], signal?: AbortSignal): Promise<void> {
  const targets = namespaces.length ? namespaces : [undefined];
  for (const ns of targets) {
    const res = await client.request({ path: collectionPath(KNATIVE_SERVICES, ns), query: { limit: 1, labelSelector: APP_MANAGED_SELECTOR }, signal });
    if (res.ok) {
      await res.body?.cancel();
      continue;
    }
    const err = await errorFromResponse(res, `GET ${collectionPath(KNATIVE_SERVICES, ns)}`);
    if (err.code === 404) {
      throw new KnativeNotInstalledError(
        "Knative Serving is not installed: the API server has no services.serving.knative.dev (serving.knative.dev/v1) resource",
      );
    }
    if (err.code === 403) {
      throw new AppsForbiddenError(
        `not allowed to read Knative Services ${ns ? `in namespace "${ns}"` : "cluster-wide"}: appwatch needs get, list and watch on services.serving.knative.dev (and list and watch on revisions.serving.knative.dev); see deploy/rbac.yaml. Server said: ${err.message}`,
      );
    }
    throw err;
  }
}

/**
 * Whether the Revisions in `namespaces` (cluster-wide when empty) can be read, by one `limit=1`
 * list each. 403 or 404: a warning naming the grant, and false (replica counts stay unset); any
 * other failure: the Kubernetes error as it came.
 */
export async function revisionsReadable(client: KubeClient, namespaces: readonly string[], log: Logger, signal?: AbortSignal): Promise<boolean> {
  for (const ns of namespaces.length ? namespaces : [undefined]) {
    const res = await client.request({ path: collectionPath(KNATIVE_REVISIONS, ns), query: { limit: 1 }, signal });
    if (res.ok) {
      await res.body?.cancel();
      continue;
    }
    const err = await errorFromResponse(res, `GET ${collectionPath(KNATIVE_REVISIONS, ns)}`);
    if (err.code === 403 || err.code === 404) {
      log.warn("cannot watch Knative Revisions: currentReplicas stays unset (grant list and watch on revisions.serving.knative.dev; see deploy/rbac.yaml)", { error: err.message });
      return false;
    }
    throw err;
  }
  return true;
}
