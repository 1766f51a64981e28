/**
 * The KService → App stream: every watched KService converted (Flyte's `kserviceToApp`, with the
 * replica count from its ready Revision), keyed by the identity of its `flyte.org/app-id`
 * annotation, and each identity's App handed to the hub. Labels, names and namespaces never decide
 * an identity: two KServices that claim one app-id are one app, shown from one of them (the one
 * Flyte's Deploy would have named, else the oldest), and a warning names the others.
 * @module
 */
import type { KubeClient } from "../kube/client.ts";
import { type Logger, silentLogger } from "../log.ts";
import type { WatcherOptions } from "../watch/group.ts";
import type { PrunePaths } from "../watch/prune.ts";
import type { ReflectorOptions } from "../watch/reflector.ts";
import { KNATIVE_SERVICES, type KubeObject } from "../watch/types.ts";
import { AppConversionError, type AppConverter } from "./convert.ts";
import { type AppHub, appKey } from "./hub.ts";
import type { App } from "./model.ts";
import { KServiceName } from "./naming.ts";
import { APP_MANAGED_SELECTOR } from "./queries.ts";
import { oddIdentity, visible } from "../visible.ts";

/** Tuning of the app watches (timeouts, backoff, initial list mode, a caller's own prune or parse). */
export type KServiceWatchTuning = Partial<Omit<ReflectorOptions<KubeObject>, "client" | "resource" | "namespace" | "labelSelector">>;

/** What the app KService watch never reads: `spec` and `metadata.managedFields` (watch-event form). */
export const KSERVICE_PRUNE: PrunePaths = [["object", "metadata", "managedFields"], ["object", "spec"]];

/**
 * The options of the app KService watch, exactly as `AppK8sClient` builds them (the B1
 * benchmark's "product path" runs these too): the label selector, and {@link KSERVICE_PRUNE} cut at
 * the byte level before JSON.parse (`prune.ts`) from watch lines and (as `items.*.…`) list pages.
 * Pruning is on for every runtime: BENCHMARKS.md B1, product path pruned ÷ unpruned, same run, same
 * bytes (2026-12-02 05:30 UTC): Node 1.12×, Deno 1.06×, Bun 1.14×. With a caller's own
 * `watch.prune`, `slimKService` drops what that leaves after parsing.
 */
export function kserviceWatcherOptions(
  client: KubeClient,
  namespaces: string[],
  watch: KServiceWatchTuning = {},
  logger: Logger = silentLogger,
): WatcherOptions<KubeObject> {
  const { parse } = watch;
  // Only a caller's own prune can leave managedFields or spec in the parsed object.
  const slim = watch.prune === undefined ? undefined : slimKService;
  return {
    // Never read: cut before JSON.parse from watch lines and (as items.*.…) list pages (B1, B2).
    prune: KSERVICE_PRUNE,
    ...watch,
    parse: parse && slim ? (obj) => slim(parse(obj)) : parse ?? slim,
    client,
    resource: KNATIVE_SERVICES,
    namespaces,
    labelSelector: APP_MANAGED_SELECTOR,
    logger,
  };
}

/**
 * What the watch keeps of a KService: everything the conversion reads (metadata without
 * `managedFields`, and `status`). `managedFields` and `spec` (the pod template; the app's spec comes
 * from the `flyte.org/spec` annotation) are about half of a KService's bytes and are never read.
 */
export function slimKService<T extends KubeObject>(obj: T): T {
  // The reflector's byte-level `prune` already cut both from watch lines and list pages: nothing
  // to rebuild. The rebuild stays for what pruning passes through (a caller's own `prune`).
  if (obj.spec === undefined && obj.metadata.managedFields === undefined) return obj;
  // Rebuilt rather than `delete`d: V8 turns an object a property was deleted from into a slower,
  // larger dictionary-mode object.
  const { managedFields: _managedFields, ...metadata } = obj.metadata;
  const { spec: _spec, metadata: _metadata, ...rest } = obj;
  return { ...rest, metadata } as T;
}

/** `namespace/name` of the Revision a KService's replica count comes from, or "". */
export function revisionOf(ksvc: KubeObject): string {
  const rev = (ksvc.status as { latestReadyRevisionName?: unknown } | undefined)?.latestReadyRevisionName;
  return typeof rev === "string" && rev !== "" ? `${ksvc.metadata.namespace ?? ""}/${rev}` : "";
}

/** What is derived from one KService (the object itself stays in the watcher's store). */
interface Converted {
  /** Undefined when the KService is not an app (no or a malformed app-id). */
  app?: App;
  appKey?: string;
  revision: string;
}

/** Options of {@link KServiceApps}. */
export interface KServiceAppsOptions {
  hub: AppHub;
  /** Converts each KService (its owner, the app client, shares it with its queries). */
  converter: AppConverter;
  logger: Logger;
  /** `actualReplicas` of a Revision (`namespace/name`), when known. */
  replicas(revision: string): number | undefined;
  /**
   * The KService under `namespace/name` in the watcher's store (written before each event reaches
   * {@link KServiceApps.apply}): the one place the objects are held.
   */
  kservice(key: string): KubeObject | undefined;
  /** Counts conversion failures. */
  onConversionError(): void;
}

/** See the module documentation. */
export class KServiceApps {
  readonly #o: KServiceAppsOptions;
  readonly #byKsvc = new Map<string, Converted>();
  /** KServices (keys) by the identity they claim. */
  readonly #byId = new Map<string, Set<string>>();
  /** KService keys by the Revision (`namespace/name`) their replica count comes from. */
  readonly #byRevision = new Map<string, Set<string>>();
  /** Identities whose duplicates were already reported (the set of claimants, as text). */
  readonly #reported = new Map<string, string>();
  /** KService key → the odd identity already logged for it. */
  readonly #odd = new Map<string, string>();
  /** KService key → how its project/domain labels disagree with its app-id (F7). */
  readonly #mismatched = new Map<string, string>();

  constructor(options: KServiceAppsOptions) {
    this.#o = options;
  }

  /** KServices held. */
  get size(): number {
    return this.#byKsvc.size;
  }

  /** Whether some KService takes its replica count from `revision` (`namespace/name`). */
  uses(revision: string): boolean {
    return this.#byRevision.has(revision);
  }

  /** The Revisions (`namespace/name`) some KService takes its replica count from. */
  revisions(): IterableIterator<string> {
    return this.#byRevision.keys();
  }

  /**
   * One KService changed (`undefined`: it is gone). `stream` is the journal stream of the watch
   * event (resumable); unset for changes no KService watch position stands for.
   */
  apply(key: string, ksvc: KubeObject | undefined, stream?: string): void {
    const prev = this.#byKsvc.get(key);
    let next: Converted | undefined;
    if (ksvc) {
      next = { revision: revisionOf(ksvc) };
      try {
        next.app = this.#o.converter.convert(ksvc, { currentReplicas: next.revision ? this.#o.replicas(next.revision) : undefined, logger: this.#o.logger });
        next.appKey = appKey(next.app.metadata?.id);
        this.#reportOdd(key, next.app.metadata?.id);
        this.#checkLabels(key, ksvc, next.app.metadata?.id);
      } catch (err) {
        this.#o.onConversionError();
        this.#mismatched.delete(key);
        this.#o.logger.warn("KService cannot be converted to an app; skipped", {
          ksvc: key,
          error: err instanceof AppConversionError ? err.message : String(err),
        });
      }
      this.#byKsvc.set(key, next);
    } else {
      if (!prev) return;
      this.#byKsvc.delete(key);
      this.#odd.delete(key);
      this.#mismatched.delete(key);
    }
    if (prev?.revision !== next?.revision) {
      if (prev?.revision) this.#unindex(this.#byRevision, prev.revision, key);
      if (next?.revision) this.#index(this.#byRevision, next.revision, key);
    }
    if (prev?.appKey !== next?.appKey) {
      if (prev?.appKey) this.#unindex(this.#byId, prev.appKey, key);
      if (next?.appKey) this.#index(this.#byId, next.appKey, key);
      // The identity it claimed before now shows another claimant's App, or none.
      if (prev?.appKey) this.#show(prev.appKey, stream);
    }
    if (next?.appKey) this.#show(next.appKey, stream);
  }

  /** A Revision's replica count changed: re-convert the KServices that read it. */
  revisionChanged(revision: string, stream?: string): void {
    const keys = this.#byRevision.get(revision);
    if (!keys) return;
    for (const key of [...keys]) {
      const ksvc = this.#byKsvc.has(key) ? this.#o.kservice(key) : undefined;
      if (ksvc) this.apply(key, ksvc, stream);
    }
  }

  /** Forgets everything (the watch stopped). */
  clear(): void {
    this.#byKsvc.clear();
    this.#byId.clear();
    this.#byRevision.clear();
    this.#reported.clear();
    this.#odd.clear();
    this.#mismatched.clear();
  }

  /** KServices whose `flyte.org/project` or `flyte.org/domain` label disagrees with their app-id. */
  get identityMismatches(): number {
    return this.#mismatched.size;
  }

  /**
   * F7: the App's identity is the app-id annotation (Flyte's conversion reads nothing else), but
   * Flyte's List selects by the project and domain labels, so a KService whose labels say one
   * project and whose app-id says another can show up in a project it was not labelled for.
   * Served as Flyte's conversion gives it, counted (a gauge) and said once per KService.
   */
  #checkLabels(key: string, ksvc: KubeObject, id: { project?: string; domain?: string } | undefined): void {
    const labels = ksvc.metadata?.labels ?? {};
    const diffs: string[] = [];
    for (const part of ["project", "domain"] as const) {
      const label = labels[`flyte.org/${part}`];
      if (label !== undefined && label !== (id?.[part] ?? "")) diffs.push(`${part} label ${JSON.stringify(visible(label))} ≠ app-id ${JSON.stringify(visible(id?.[part] ?? ""))}`);
    }
    if (diffs.length === 0) {
      this.#mismatched.delete(key);
      return;
    }
    const text = diffs.join("; ");
    if (this.#mismatched.get(key) === text) return;
    this.#mismatched.set(key, text);
    this.#o.logger.warn("a KService's flyte.org/project or flyte.org/domain label disagrees with its flyte.org/app-id; the app is served under its app-id's project", {
      ksvc: key,
      mismatch: text,
    });
  }

  /**
   * An identity that is hard to address or to read is served as Flyte gives it, and said once per
   * KService and identity (not on every status change), with the parts escaped for the log.
   */
  #reportOdd(key: string, id: { org?: string; project?: string; domain?: string; name?: string } | undefined): void {
    const why = id ? oddIdentity(id) : undefined;
    if (!why || !id) return;
    const text = `${id.org}\u0000${id.project}\u0000${id.domain}\u0000${id.name}`;
    if (this.#odd.get(key) === text) return;
    this.#odd.set(key, text);
    this.#o.logger.warn("an app identity is hard to address or display; served as Flyte gives it", {
      ksvc: key,
      reason: why,
      app: { org: visible(id.org ?? ""), project: visible(id.project ?? ""), domain: visible(id.domain ?? ""), name: visible(id.name ?? "") },
    });
  }

  /** Hands the hub the App an identity has now. */
  #show(id: string, stream: string | undefined): void {
    const claimants = this.#byId.get(id);
    const winner = claimants ? this.#winner(id, claimants) : undefined;
    const k = winner !== undefined ? this.#byKsvc.get(winner) : undefined;
    this.#o.hub.set(id, k?.app, winner ?? "", stream);
  }

  /**
   * The KService an identity's App is shown from when several claim it: the one named as Flyte's
   * Deploy names it (`KServiceName`), else the oldest (`creationTimestamp`), else the first by key.
   */
  #winner(id: string, claimants: Set<string>): string | undefined {
    if (claimants.size <= 1) {
      this.#reported.delete(id);
      return claimants.values().next().value;
    }
    const ranked = [...claimants].map((key) => {
      const k = this.#byKsvc.get(key)!;
      const meta = this.#o.kservice(key)?.metadata;
      const named = k.app?.metadata?.id && meta?.name === KServiceName(k.app.metadata.id) ? 0 : 1;
      return { key, named, created: meta?.creationTimestamp ?? "\uffff" };
    }).sort((a, b) => a.named - b.named || (a.created < b.created ? -1 : a.created > b.created ? 1 : 0) || (a.key < b.key ? -1 : 1));
    const text = ranked.map((r) => r.key).join(",");
    if (this.#reported.get(id) !== text) {
      this.#reported.set(id, text);
      this.#o.logger.warn("several KServices claim one app identity; the app is shown from one of them", {
        app: id,
        shownFrom: ranked[0]!.key,
        ignored: ranked.slice(1).map((r) => r.key),
      });
    }
    return ranked[0]!.key;
  }

  #index(map: Map<string, Set<string>>, k: string, key: string): void {
    let set = map.get(k);
    if (!set) map.set(k, set = new Set());
    set.add(key);
  }

  #unindex(map: Map<string, Set<string>>, k: string, key: string): void {
    const set = map.get(k);
    if (set?.delete(key) && set.size === 0) map.delete(k);
  }
}

