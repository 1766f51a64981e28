/**
 * Replica counts from a watch on Knative Revisions: `status.actualReplicas` of every Revision in
 * the watched namespaces, kept current as Knative scales, so an app's `currentReplicas` changes when
 * its pods do (Flyte reads the Revision with one GET per conversion, and only when the KService
 * itself changes). Go's `uint32(*actualReplicas)` of an `int32`: a negative count wraps in the
 * conversion; a value that is not an int32 is unknown (Go's client could not decode the Revision).
 * @module
 */
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import { createWatcher, type ObjectWatcher } from "../watch/group.ts";
import type { ReflectorHealth, ReflectorOptions } from "../watch/reflector.ts";
import { KNATIVE_REVISIONS, type KubeObject, objectKey, type ReflectorEvent } from "../watch/types.ts";

/** What is kept of a Revision: its name, namespace, resourceVersion and replica count. */
function slimRevision(obj: KubeObject): KubeObject {
  const n = (obj.status as { actualReplicas?: unknown } | undefined)?.actualReplicas;
  const { name, namespace, resourceVersion, uid } = obj.metadata;
  return {
    metadata: { name, namespace, resourceVersion, uid },
    status: { actualReplicas: typeof n === "number" && Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 ? n : undefined },
  };
}

function replicasOf(obj: KubeObject | undefined): number | undefined {
  return (obj?.status as { actualReplicas?: number } | undefined)?.actualReplicas;
}

/** Options of {@link RevisionReplicas}. */
export interface RevisionReplicasOptions {
  client: KubeClient;
  /** Watched namespaces (`[]`: all). */
  namespaces: string[];
  logger: Logger;
  watch?: Partial<Omit<ReflectorOptions<KubeObject>, "client" | "resource" | "namespace" | "labelSelector" | "parse" | "prune">>;
}

/** The replica count of every Revision, by `namespace/name`, from one watcher. */
export class RevisionReplicas {
  readonly #watcher: ObjectWatcher<KubeObject>;
  readonly #values = new Map<string, number | undefined>();

  constructor(options: RevisionReplicasOptions) {
    this.#watcher = createWatcher<KubeObject>({
      // Never read: the whole spec (the pod template) and managedFields, cut before JSON.parse.
      prune: [["object", "metadata", "managedFields"], ["object", "spec"]],
      ...options.watch,
      parse: slimRevision,
      client: options.client,
      resource: KNATIVE_REVISIONS,
      namespaces: options.namespaces,
      logger: options.logger.child({ component: "revisions" }),
    });
  }

  /** `actualReplicas` of `namespace/name`, when known. */
  get(revision: string): number | undefined {
    return this.#values.get(revision);
  }

  /** True once every watched namespace has been listed. */
  get synced(): boolean {
    return this.#watcher.synced;
  }

  health(): ReflectorHealth {
    return this.#watcher.health();
  }

  /**
   * Runs the watch; each event is applied, then yielded with the Revision whose count changed
   * (`changed`, or undefined when the count stayed the same).
   */
  async *run(signal: AbortSignal): AsyncGenerator<{ event: ReflectorEvent<KubeObject>; changed?: string }, void, undefined> {
    for await (const event of this.#watcher.run(signal)) {
      if (event.type === "synced") {
        yield { event };
        continue;
      }
      const key = objectKey(event.object);
      const before = this.#values.get(key);
      const after = event.type === "deleted" ? undefined : replicasOf(event.object);
      if (event.type === "deleted") this.#values.delete(key);
      else this.#values.set(key, after);
      yield before !== after ? { event, changed: key } : { event };
    }
  }
}
