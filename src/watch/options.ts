/**
 * The reflector's options, and how they become its parts: the defaults of every timeout and
 * limit, the logger's fields, the request wiring (`requests.ts`), the report and the backoff.
 * Kept apart from the driver (`reflector.ts`) so that the driver reads as the loop it is.
 * @module
 */
import type { KubeClient } from "../kube/client.ts";
import { type Logger, silentLogger } from "../log.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import { type Clock, realClock } from "./clock.ts";
import { Connection } from "./connection.ts";
import { WatchDecoder } from "./decode.ts";
import type { InitialListMode, MachineContext } from "./machine.ts";
import type { ReflectorMetrics } from "./metrics.ts";
import { DEFAULT_MAX_LINE_BYTES } from "./ndjson.ts";
import { JsonPruner, listPathsOf, type PrunePaths } from "./prune.ts";
import { ReflectorReport } from "./report.ts";
import type { CollectionRequests } from "./requests.ts";
import type { ObjectStore } from "./store.ts";
import { collectionPath, type KubeObject, type ResourceRef } from "./types.ts";

/** Options for {@link Reflector}. */
export interface ReflectorOptions<T extends KubeObject> {
  client: KubeClient;
  resource: ResourceRef;
  /** One namespace; omit for all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** List page size (L1). Default 500. */
  pageSize?: number;
  /**
   * `auto` (default): try a streaming list (`sendInitialEvents`) and fall back
   * to a paginated list if the server rejects it (S5). `streaming` / `paginated`
   * force one path.
   */
  initialList?: InitialListMode;
  /** Server-side watch timeout, drawn uniformly from [min, max) seconds (W1). Default [300, 600). */
  watchTimeoutSeconds?: { min: number; max: number };
  /** Abort a connection that delivers no bytes for this long (W12). Default 60 s. */
  idleTimeoutMs?: number;
  /**
   * Give up on a request that has no response headers after this long: enforced by the
   * reflector itself, since not every runtime's `fetch` has a connect timeout or ends the
   * wait when aborted. Default 30 s.
   */
  connectTimeoutMs?: number;
  /** Give up on a streaming list that has not reached its end marker after this long (S5). Default 120 s. */
  streamingSyncTimeoutMs?: number;
  /** Retry backoff (W10). Default 0.8 s ×2 → 8 s, each delay in [d/2, d], reset after a healthy watch or 2 min. */
  backoff?: Partial<BackoffOptions>;
  /** Longest accepted watch line. Default 16 MiB. */
  maxLineBytes?: number;
  /** Consecutive watch errors (non-410) after which the reflector relists (W9). Default 3. */
  maxWatchErrorsBeforeRelist?: number;
  /**
   * Opt-in: key paths cut out at the byte level, before the bytes are decoded
   * and parsed (see `prune.ts`), e.g.
   * `[["object", "metadata", "managedFields"], ["object", "spec"]]` when the
   * consumer never reads them. Given in watch-event form (`object.…`); they
   * apply to every watch line (streaming lists included) and, as
   * `["items", "*", …]` ({@link listPathsOf}), to every paginated list page,
   * so every object the reflector stores or yields lacks those fields. Paths
   * outside `object` apply to watch lines only.
   */
  prune?: PrunePaths;
  /** Validates / transforms each object (e.g. strips managedFields). Throw to reject the object. */
  parse?: (obj: KubeObject) => T;
  logger?: Logger;
  /** Random source for timeouts and jitter (tests). */
  random?: () => number;
  /** Time for every timeout, backoff and timestamp (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
}

/** Options of one {@link Reflector.run}. */
export interface RunOptions {
  /**
   * The consumer writes each event to the store as it takes it ({@link Reflector.commit}), not
   * the reflector as it yields it. For a merge of several reflectors (group.ts): each runs one
   * event ahead of the merged stream, so its store must not show that event before the merge
   * hands it on.
   */
  consumerCommits?: boolean;
}

/** What the driver reads of its options after the parts are built. */
export interface DriverOptions {
  namespace: string | undefined;
  labelSelector: string | undefined;
  fieldSelector: string | undefined;
  watchTimeoutSeconds: { min: number; max: number };
  streamingSyncTimeoutMs: number;
  random: () => number;
  initialList: InitialListMode;
}

/** A reflector's parts, built from its options. */
export interface ReflectorParts<T extends KubeObject> {
  o: DriverOptions;
  io: CollectionRequests<T>;
  report: ReflectorReport;
  backoff: Backoff;
  clock: Clock;
  ctx: MachineContext<T>;
}

/** Builds a reflector's parts: every default is decided here. */
export function reflectorParts<T extends KubeObject>(options: ReflectorOptions<T>, store: ObjectStore<T>, metrics: ReflectorMetrics): ReflectorParts<T> {
  const clock = options.clock ?? realClock;
  const random = options.random ?? Math.random;
  const initialList = options.initialList ?? "auto";
  const idleMs = options.idleTimeoutMs ?? 60_000;
  const connectMs = options.connectTimeoutMs ?? 30_000;
  const log: Logger = (options.logger ?? silentLogger).child({
    component: "reflector",
    resource: options.resource.plural,
    namespace: options.namespace ?? "*",
    ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
  });
  const report = new ReflectorReport({ metrics, log, clock, resource: options.resource, namespace: options.namespace, idleTimeoutMs: idleMs });
  const path = collectionPath(options.resource, options.namespace);
  const listPaths = options.prune ? listPathsOf(options.prune) : [];
  return {
    o: {
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      watchTimeoutSeconds: options.watchTimeoutSeconds ?? { min: 300, max: 600 },
      streamingSyncTimeoutMs: options.streamingSyncTimeoutMs ?? 120_000,
      random,
      initialList,
    },
    io: {
      client: options.client,
      path,
      metrics,
      decoder: new WatchDecoder<T>({ metrics, log, parse: options.parse, path }),
      clock,
      // Readiness must not wait for the retry loop: a half-open watch is unhealthy as soon as it is found.
      connection: (signal, what) =>
        new Connection(signal, { idleMs, connectMs, clock, onExpire: (reason) => report.unhealthy(`${what}: ${reason.message}`) }),
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      pruner: options.prune && options.prune.length > 0 ? new JsonPruner(options.prune) : undefined,
      listPruner: listPaths.length > 0 ? new JsonPruner(listPaths) : undefined,
    },
    report,
    backoff: new Backoff(options.backoff, random, () => clock.now()),
    clock,
    ctx: { store, initialList, pageSize: options.pageSize ?? 500, maxWatchErrorsBeforeRelist: options.maxWatchErrorsBeforeRelist ?? 3 },
  };
}
