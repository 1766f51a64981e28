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
import type { Query } from "../kube/client.ts";
import { type Backoff, sleep } from "./backoff.ts";
import type { Clock } from "./clock.ts";
import { delayMs as delayOf } from "./delay.ts";
import { initialState, listQuery, type MachineContext, type Outcome, start, type State, step, type Step, watchQuery } from "./machine.ts";
import { newReflectorMetrics, type ReflectorMetrics } from "./metrics.ts";
import { type DriverOptions, type ReflectorOptions, reflectorParts, type RunOptions } from "./options.ts";
import type { ReflectorHealth, ReflectorReport } from "./report.ts";
import { type CollectionRequests, listPage, WatchStream } from "./requests.ts";
import { ObjectStore, type StoreSnapshot } from "./store.ts";
import { type KubeObject, objectKey, type ReflectorEvent } from "./types.ts";

export type { InitialListMode } from "./machine.ts";

export type { ReflectorHealth } from "./report.ts";

export type { ReflectorOptions, RunOptions } from "./options.ts";

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

  readonly #o: DriverOptions;
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
    const parts = reflectorParts(options, this.store, this.metrics);
    this.#o = parts.o;
    this.#io = parts.io;
    this.#report = parts.report;
    this.#backoff = parts.backoff;
    this.#clock = parts.clock;
    this.#ctx = parts.ctx;
    this.#state = initialState(parts.o.initialList);
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
