/**
 * The reflector: list + watch one Kubernetes collection and keep an exact,
 * current copy of it, emitting only true changes. It follows client-go's
 * reflector and the checklist in `docs/watch-protocol.md` (rule IDs L*, W*,
 * B*, S*, R*, T* are cited inline).
 *
 * Shape, after kube-rs's watcher: the protocol is the pure state machine of
 * `machine.ts` (which request next, what each outcome means, how long to
 * wait); this file is the driver: it sends the request a state calls for
 * (`requests.ts`: a list page, or one watch connection read line by line),
 * steps each outcome, turns the step's delay into milliseconds (`delay.ts`),
 * writes the emitted events to the store as the consumer pulls them, and
 * reports (`report.ts`). {@link Reflector.run} is the one generator.
 * Only an `AbortSignal` (or the consumer leaving the loop) stops it.
 * @module
 */
import type { KubeClient, Query } from "../kube/client.ts";
import { type Logger, silentLogger } from "../log.ts";
import { Backoff, type BackoffOptions, sleep } from "./backoff.ts";
import { type Clock, realClock } from "./clock.ts";
import { Connection } from "./connection.ts";
import { WatchDecoder } from "./decode.ts";
import { delayMs as delayOf } from "./delay.ts";
import {
  type InitialListMode,
  initialState,
  listQuery,
  type MachineContext,
  type Outcome,
  start,
  type State,
  step,
  type Step,
  watchQuery,
} from "./machine.ts";
import { newReflectorMetrics, type ReflectorMetrics } from "./metrics.ts";
import { DEFAULT_MAX_LINE_BYTES } from "./ndjson.ts";
import { JsonPruner, listPathsOf, type PrunePaths } from "./prune.ts";
import { ReflectorReport, type ReflectorHealth } from "./report.ts";
import { type CollectionRequests, listPage, WatchStream } from "./requests.ts";
import { ObjectStore, type StoreSnapshot } from "./store.ts";
import { collectionPath, type KubeObject, objectKey, type ReflectorEvent, type ResourceRef } from "./types.ts";

export type { InitialListMode } from "./machine.ts";

export type { ReflectorHealth } from "./report.ts";

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

/**
 * List+watch one collection. `run(signal)` yields {@link ReflectorEvent}s;
 * `store` holds the current objects; `metrics` counts everything.
 *
 * @example
 * ```ts ignore
 * const reflector = new Reflector({ client, resource: KNATIVE_SERVICES, namespace: "flyte",
 *   labelSelector: "flyte.org/app-managed=true" });
 * for await (const event of reflector.run(signal)) console.log(event.type);
 * ```
 */
export class Reflector<T extends KubeObject = KubeObject> {
  /** The current objects; updated just before each event is yielded. */
  readonly store: ObjectStore<T> = new ObjectStore<T>();
  /** Counters for the metrics endpoint. */
  readonly metrics: ReflectorMetrics = newReflectorMetrics();

  readonly #o: {
    namespace: string | undefined;
    labelSelector: string | undefined;
    fieldSelector: string | undefined;
    watchTimeoutSeconds: { min: number; max: number };
    streamingSyncTimeoutMs: number;
    random: () => number;
  };
  readonly #io: CollectionRequests<T>;
  readonly #report: ReflectorReport;
  readonly #backoff: Backoff;
  readonly #clock: Clock;
  readonly #ctx: MachineContext<T>;
  #running = false;
  /** The event being yielded, until it is written to the store; with the state to commit after it, for a step's last event. */
  #pending: { event: ReflectorEvent<T>; state: State<T> | undefined } | undefined;
  /**
   * Where the protocol stands, as of the events yielded so far: a step's state
   * is committed just before its last event is yielded (at once if it emits
   * none), so a consumer that stops after any event resumes exactly there.
   */
  #state: State<T>;

  constructor(options: ReflectorOptions<T>) {
    const clock = this.#clock = options.clock ?? realClock;
    const random = options.random ?? Math.random;
    const initialList = options.initialList ?? "auto";
    const idleMs = options.idleTimeoutMs ?? 60_000;
    const connectMs = options.connectTimeoutMs ?? 30_000;
    this.#o = {
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      watchTimeoutSeconds: options.watchTimeoutSeconds ?? { min: 300, max: 600 },
      streamingSyncTimeoutMs: options.streamingSyncTimeoutMs ?? 120_000,
      random,
    };
    const log: Logger = (options.logger ?? silentLogger).child({
      component: "reflector",
      resource: options.resource.plural,
      namespace: options.namespace ?? "*",
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
    });
    const report = this.#report = new ReflectorReport({
      metrics: this.metrics,
      log,
      clock,
      resource: options.resource,
      namespace: options.namespace,
      idleTimeoutMs: idleMs,
    });
    this.#backoff = new Backoff(options.backoff, random, () => clock.now());
    const path = collectionPath(options.resource, options.namespace);
    const listPaths = options.prune ? listPathsOf(options.prune) : [];
    this.#io = {
      client: options.client,
      path,
      metrics: this.metrics,
      decoder: new WatchDecoder<T>({ metrics: this.metrics, log, parse: options.parse, path }),
      clock,
      // Readiness must not wait for the retry loop: a half-open watch is unhealthy as soon as it is found.
      connection: (signal, what) =>
        new Connection(signal, { idleMs, connectMs, clock, onExpire: (reason) => report.unhealthy(`${what}: ${reason.message}`) }),
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      pruner: options.prune && options.prune.length > 0 ? new JsonPruner(options.prune) : undefined,
      listPruner: listPaths.length > 0 ? new JsonPruner(listPaths) : undefined,
    };
    this.#state = initialState(initialList);
    this.#ctx = {
      store: this.store,
      initialList,
      pageSize: options.pageSize ?? 500,
      maxWatchErrorsBeforeRelist: options.maxWatchErrorsBeforeRelist ?? 3,
    };
  }

  /** The namespace watched (undefined: all namespaces). */
  get namespace(): string | undefined {
    return this.#o.namespace;
  }

  /** True once the store holds a complete snapshot. */
  get synced(): boolean {
    return this.store.synced;
  }

  /** A consistent copy of the store (objects sorted by key, its resourceVersion, synced). */
  snapshot(): StoreSnapshot<T> {
    return this.store.snapshot();
  }

  /**
   * Whether the reflector is currently in contact with the API server: false
   * (with the reason) from a failed request, or from the moment a watch is
   * found silent, until the next list completes or the next watch is answered with 200.
   */
  get health(): ReflectorHealth {
    return this.#report.health;
  }

  /** The resourceVersion the next watch resumes from (undefined before sync / after 410). */
  get resumeResourceVersion(): string | undefined {
    return this.#state.kind === "watching" ? this.#state.resourceVersion : undefined;
  }

  /**
   * Lists, then watches forever, yielding only true changes of the store plus
   * `synced` markers. Never ends on its own: only `signal` (or the consumer
   * leaving the loop) stops it, and stopping aborts every request and clears
   * every timer. One run at a time.
   */
  async *run(signal?: AbortSignal, options: RunOptions = {}): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    const consumerCommits = options.consumerCommits === true;
    if (this.#running) throw new Error("Reflector.run: already running");
    this.#running = true;
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted) stop.abort(signal.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let state: State<T> = start(this.#state, this.#ctx, this.store.synced);
    this.#commit(state);
    let delayMs = 0;
    /** The open watch connection, read until a step calls for the next request. */
    let watch: WatchStream<T> | undefined;
    try {
      while (!stop.signal.aborted) {
        if (watch === undefined) {
          if (delayMs > 0) {
            await sleep(delayMs, stop.signal, this.#clock, "backoff");
            if (stop.signal.aborted) break;
          }
          if (state.kind === "initialWatch" || state.kind === "watching") watch = this.#openWatch(state, stop.signal);
        }
        const outcome: Outcome<T> | undefined = watch
          ? await watch.next()
          : await listPage(this.#io, this.#listQuery(state), stop.signal);
        if (outcome === undefined) break; // aborted
        const s: Step<T> = step(state, outcome, this.#ctx);
        if (watch && s.next === "request") {
          await watch.close();
          watch = undefined;
        } else if (watch && state.kind === "initialWatch" && s.state.kind === "watching") watch.synced();
        delayMs = s.next === "request" ? delayOf(s.delay, s.resetBackoff === true, this.#backoff, this.#o.random) : 0;
        for (const note of s.notes) this.#report.note(note, s, delayMs);
        state = s.state;
        const n = s.emit.length;
        if (n === 0) {
          this.#commit(state);
          continue;
        }
        // A consumer holding an event is not a silent server.
        watch?.pause();
        for (let i = 0; i < n; i++) {
          const event = s.emit[i]!;
          this.#pending = { event, state: i === n - 1 ? state : undefined };
          if (!consumerCommits) this.commit();
          yield event;
          this.commit(); // resumed: the consumer has it (if it did not commit it itself)
        }
        watch?.resume();
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
      await watch?.close();
      this.#pending = undefined; // never taken: the consumer left before it
      this.#running = false;
    }
  }

  /**
   * Writes the event yielded last to the store (and commits the state that came with it), once:
   * for a run with {@link RunOptions.consumerCommits}, the consumer calls it as it takes the event.
   */
  commit(): void {
    const p = this.#pending;
    if (p === undefined) return;
    this.#pending = undefined;
    this.#write(p.event);
    if (p.state !== undefined) this.#commit(p.state);
  }

  /** L1/L2: the machine's query of a list page (no resourceVersion ever) with the selectors. */
  #listQuery(state: State<T>): Query {
    if (state.kind !== "paging") throw new Error(`Reflector: a list page requested in state ${state.kind}`);
    return { labelSelector: this.#o.labelSelector, fieldSelector: this.#o.fieldSelector, ...listQuery(state) };
  }

  /** One watch connection for `state`: W1's randomized server timeout, bookmarks, the machine's RV. */
  #openWatch(state: Extract<State<T>, { kind: "initialWatch" | "watching" }>, signal: AbortSignal): WatchStream<T> {
    const { min, max } = this.#o.watchTimeoutSeconds;
    const query: Query = {
      watch: 1,
      allowWatchBookmarks: true, // W1; also needed for the S1 end marker
      timeoutSeconds: Math.floor(min + this.#o.random() * (max - min)),
      labelSelector: this.#o.labelSelector,
      fieldSelector: this.#o.fieldSelector,
      ...watchQuery(state),
    };
    const deadline = state.kind === "initialWatch" ? this.#o.streamingSyncTimeoutMs : undefined;
    return new WatchStream(this.#io, query, signal, deadline, {
      connected: () => this.#report.healthy(),
      // Recovery: the next failure starts from the shortest delay again.
      proven: () => this.#backoff.reset(),
    });
  }

  #commit(state: State<T>): void {
    this.#state = state;
    if (state.kind === "watching") {
      this.store.setResourceVersion(state.resourceVersion);
      this.metrics.lastResourceVersion = state.resourceVersion;
    }
  }

  #write(event: ReflectorEvent<T>): void {
    const { store, metrics } = this;
    switch (event.type) {
      case "added":
      case "modified":
        store.set(event.object);
        metrics.emitted[event.type]++;
        break;
      case "deleted":
        store.delete(objectKey(event.object));
        metrics.emitted.deleted++;
        if (event.inferred) metrics.emitted.inferredDeleted++;
        break;
      case "synced":
        store.setResourceVersion(event.resourceVersion);
        store.markSynced(true);
        metrics.lastResourceVersion = event.resourceVersion;
        metrics.emitted.synced++;
        break;
    }
  }
}
