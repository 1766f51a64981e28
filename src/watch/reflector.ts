/**
 * The reflector: list + watch one Kubernetes collection and keep an exact,
 * current copy of it, emitting only true changes. It follows client-go's
 * reflector and the checklist in `docs/watch-protocol.md` (rule IDs L*, W*,
 * B*, S*, R*, T* are cited inline).
 *
 * Shape: the protocol is the state machine of `machine.ts` (which request
 * next, what each outcome means); this file drives it: it sends the requests,
 * decodes what comes back, feeds each outcome to `step`, writes the emitted
 * events to the store as the consumer pulls them, and waits out the delays.
 * Only an `AbortSignal` (or the consumer leaving the loop) stops it.
 * @module
 */
import type { KubeClient, Query } from "../kube/client.ts";
import { KubeTransportError } from "../kube/errors.ts";
import { errorFromResponse, errorFromStatus, KubeApiError } from "../kube/status.ts";
import { type Logger, silentLogger } from "../log.ts";
import * as v from "valibot";
import { Backoff, type BackoffOptions, sleep } from "./backoff.ts";
import { type Clock, realClock, type TimerHandle } from "./clock.ts";
import {
  type InitialListMode,
  initialState,
  listQuery,
  type MachineContext,
  type Note,
  start,
  type State,
  step,
  type Step,
  type WatchEvent,
  watchQuery,
} from "./machine.ts";
import { newReflectorMetrics, type ReflectorMetrics } from "./metrics.ts";
import { DEFAULT_MAX_LINE_BYTES, NdjsonError, ndjsonValues } from "./ndjson.ts";
import { JsonPruner, listPathsOf, type PrunePaths } from "./prune.ts";
import { ObjectStore, type StoreSnapshot } from "./store.ts";
import {
  collectionPath,
  INITIAL_EVENTS_END_ANNOTATION,
  isKubeObject,
  isRawWatchEvent,
  type KubeObject,
  ListPageSchema,
  objectKey,
  RawWatchEventSchema,
  type ReflectorEvent,
  type ResourceRef,
} from "./types.ts";

export type { InitialListMode } from "./machine.ts";

/** Contact with the API server: healthy, or not with the last failure. */
export interface ReflectorHealth {
  healthy: boolean;
  reason?: string;
  /** ms since epoch of the last change of `healthy`. */
  since: number;
}

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

/** Thrown into a connection's AbortController when it goes quiet for too long. */
class IdleTimeoutError extends Error {
  override readonly name = "IdleTimeoutError";
}

/**
 * List+watch one collection. `run(signal)` yields {@link ReflectorEvent}s;
 * `store` holds the current objects; `metrics` counts everything.
 *
 * ```ts
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

  readonly #o: Required<Omit<ReflectorOptions<T>, "namespace" | "labelSelector" | "fieldSelector" | "parse" | "backoff" | "prune">> & {
    namespace: string | undefined;
    labelSelector: string | undefined;
    fieldSelector: string | undefined;
    parse: ((obj: KubeObject) => T) | undefined;
  };
  readonly #log: Logger;
  readonly #pruner: JsonPruner | undefined;
  /** {@link ReflectorOptions.prune} in list-page form (`items.*.…`), for paginated list pages. */
  readonly #listPruner: JsonPruner | undefined;
  readonly #backoff: Backoff;
  readonly #path: string;
  readonly #clock: Clock;
  readonly #ctx: MachineContext<T>;
  #running = false;
  #health: ReflectorHealth;
  /**
   * Where the protocol stands, as of the events yielded so far: a step's state
   * is committed just before its last event is yielded (at once if it emits
   * none), so a consumer that stops after any event resumes exactly there.
   */
  #state: State<T>;

  constructor(options: ReflectorOptions<T>) {
    this.#o = {
      client: options.client,
      resource: options.resource,
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      pageSize: options.pageSize ?? 500,
      initialList: options.initialList ?? "auto",
      watchTimeoutSeconds: options.watchTimeoutSeconds ?? { min: 300, max: 600 },
      idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
      streamingSyncTimeoutMs: options.streamingSyncTimeoutMs ?? 120_000,
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      maxWatchErrorsBeforeRelist: options.maxWatchErrorsBeforeRelist ?? 3,
      parse: options.parse,
      logger: options.logger ?? silentLogger,
      random: options.random ?? Math.random,
      clock: options.clock ?? realClock,
    };
    this.#clock = this.#o.clock;
    this.#health = { healthy: false, reason: "not started", since: this.#clock.now() };
    this.#log = this.#o.logger.child({
      component: "reflector",
      resource: options.resource.plural,
      namespace: options.namespace ?? "*",
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
    });
    this.#backoff = new Backoff(options.backoff, this.#o.random, () => this.#clock.now());
    this.#pruner = options.prune && options.prune.length > 0 ? new JsonPruner(options.prune) : undefined;
    const listPaths = options.prune ? listPathsOf(options.prune) : [];
    this.#listPruner = listPaths.length > 0 ? new JsonPruner(listPaths) : undefined;
    this.#path = collectionPath(options.resource, options.namespace);
    this.#state = initialState(this.#o.initialList);
    this.#ctx = {
      store: this.store,
      backoff: this.#backoff,
      random: this.#o.random,
      initialList: this.#o.initialList,
      pageSize: this.#o.pageSize,
      maxWatchErrorsBeforeRelist: this.#o.maxWatchErrorsBeforeRelist,
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
    return this.#health;
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
  async *run(signal?: AbortSignal): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    if (this.#running) throw new Error("Reflector.run: already running");
    this.#running = true;
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted) stop.abort(signal.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let state = start(this.#state, this.#ctx, this.store.synced);
    this.#commit(state);
    let delayMs = 0;
    try {
      while (!stop.signal.aborted) {
        if (delayMs > 0) {
          await sleep(delayMs, stop.signal, this.#clock, "backoff");
          if (stop.signal.aborted) break;
        }
        const s = state.kind === "paging" ? await this.#page(state, stop.signal) : yield* this.#watch(state, stop.signal);
        if (!s) break; // aborted
        yield* this.#emit(s, undefined);
        state = s.state;
        delayMs = s.delayMs;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
      this.#running = false;
    }
  }

  // ------------------------------------------------------------ stepping

  /** A step's notes, then its events: each written to the store just before it is yielded. */
  async *#emit(s: Step<T>, conn: Connection | undefined): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    for (const note of s.notes) this.#note(note, s);
    const n = s.emit.length;
    if (n === 0) return this.#commit(s.state);
    // A consumer holding an event is not a silent server.
    conn?.pause();
    for (let i = 0; i < n; i++) {
      const event = s.emit[i]!;
      this.#write(event);
      if (i === n - 1) this.#commit(s.state);
      yield event;
    }
    conn?.resume();
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

  /** Renders what a step decided as counters, health and log lines. */
  #note(note: Note, s: Step<T>): void {
    const m = this.metrics;
    switch (note.kind) {
      case "failure":
        this.#failed(note.error, note.what, s.delayMs, s.state.kind === "watching" ? s.state.resourceVersion : undefined);
        break;
      case "reconnect":
        m.reconnects[note.cause]++;
        break;
      case "expired":
        m.expired++;
        this.#log.info("resourceVersion expired, relisting", { resourceVersion: note.resourceVersion, message: note.error.message });
        break;
      case "continue-expired":
        m.expired++;
        this.#log.info("continue token expired during list, retrying with one full list");
        break;
      case "fallback":
        if (note.reason === "deadline") this.#log.warn("streaming list did not finish in time, falling back to paginated list");
        else {
          const e = note.error instanceof KubeApiError ? note.error : undefined;
          this.#log.info("streaming list not available, falling back to paginated list", { code: e?.code, reason: e?.reason });
        }
        break;
      case "relist-after-errors":
        this.#log.warn("repeated watch errors, relisting", { errors: note.errors });
        break;
      case "synced": {
        m.lists++;
        if (note.streaming) m.streamingLists++;
        else this.#markHealthy();
        if (note.phase === "resync") m.relists++;
        const resourceVersion = s.state.kind === "watching" ? s.state.resourceVersion : undefined;
        this.#log.info(note.phase === "initial" ? "initial sync done" : "resynced", {
          objects: note.objects,
          resourceVersion,
          ...(note.cause ? { cause: note.cause } : {}),
        });
        break;
      }
      case "idle-reconnect":
        // Debug, not info: on a quiet resource without bookmarks this happens every idle period.
        // Health already turned unhealthy when the timer fired, until the next watch is answered.
        this.#log.debug("no data within the idle timeout, reconnecting", { idleTimeoutMs: this.#o.idleTimeoutMs, resourceVersion: note.resourceVersion });
        break;
      case "ended":
        this.#log.debug("watch ended cleanly, resuming", { resourceVersion: note.resourceVersion });
        break;
      case "unknown-type":
        this.#log.warn("unknown watch event type skipped", { type: note.wireType }); // W3
        break;
    }
  }

  #markHealthy(): void {
    if (!this.#health.healthy) this.#health = { healthy: true, since: this.#clock.now() };
  }

  #markUnhealthy(reason: string): void {
    this.#health = { healthy: false, reason, since: this.#clock.now() };
  }

  /** A connection for one request; its idle/connect timers flip health the moment they fire. */
  #connection(signal: AbortSignal, what: string): Connection {
    return new Connection(signal, {
      idleMs: this.#o.idleTimeoutMs,
      connectMs: this.#o.connectTimeoutMs,
      clock: this.#clock,
      // Readiness must not wait for the retry loop: a half-open watch is unhealthy as soon as it is found.
      onExpire: (reason) => this.#markUnhealthy(`${what}: ${reason.message}`),
    });
  }

  /** Counts and logs a failure; the caller then waits `delayMs` (backoff or Retry-After). */
  #failed(error: unknown, what: string, delayMs: number, resourceVersion: string | undefined): void {
    this.metrics.failures++;
    this.#markUnhealthy(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    const fields = { ...describeError(error), retryInMs: Math.round(delayMs), resourceVersion };
    if (error instanceof KubeApiError && (error.code === 403 || error.code === 401)) {
      // Permission problems need a person, not a retry: say exactly what is missing.
      this.#log.error(`${what}: ${error.code === 403 ? "forbidden" : "unauthorized"}`, { ...fields, hint: this.#permissionHint(error.code) });
    } else {
      this.#log.warn(what, fields);
    }
  }

  #permissionHint(code: number): string {
    const { group, plural } = this.#o.resource;
    const resource = group ? `${plural}.${group}` : plural;
    const scope = this.#o.namespace ? `in namespace "${this.#o.namespace}"` : "cluster-wide (all namespaces)";
    return code === 403
      ? `appwatch needs the verbs get, list and watch on ${resource} ${scope}; grant them with a Role and RoleBinding like deploy/rbac.yaml`
      : "the API server rejected the credentials; check the token, token file or exec plugin of the kubeconfig user";
  }

  // ---------------------------------------------------------------- list

  /** One list page (L1/L2: the machine's query, no resourceVersion ever); undefined when aborted. */
  async #page(state: Extract<State<T>, { kind: "paging" }>, signal: AbortSignal): Promise<Step<T> | undefined> {
    const query: Query = { labelSelector: this.#o.labelSelector, fieldSelector: this.#o.fieldSelector, ...listQuery(state) };
    try {
      const body = await this.#getJson(query, signal);
      const parsed = v.safeParse(ListPageSchema, body);
      if (!parsed.success) throw new Error(`invalid list response: ${v.summarize(parsed.issues)}`);
      this.metrics.listPages++;
      const items: T[] = [];
      for (const raw of parsed.output.items) {
        const obj = this.#parseObject(raw);
        if (obj) items.push(obj);
      }
      const { resourceVersion, continue: cont } = parsed.output.metadata;
      return step(state, { type: "page", items, resourceVersion, continue: cont || undefined }, this.#ctx);
    } catch (err) {
      if (signal.aborted) return undefined;
      return step(state, { type: "list-failed", error: err }, this.#ctx);
    }
  }

  /** GET a JSON document, guarded by the inactivity timer (a stalled list must not hang forever). */
  async #getJson(query: Query, signal: AbortSignal): Promise<unknown> {
    const conn = this.#connection(signal, "list");
    try {
      const res = await conn.connect(this.#o.client.request({ path: this.#path, query, signal: conn.signal }));
      if (!res.ok) throw await errorFromResponse(res, `GET ${this.#path}`);
      const all = await this.#readBody(res, conn);
      // The page as one array we own: pruned in place (items.*.… paths), then only the kept bytes are decoded.
      const kept = this.#listPruner ? this.#listPruner.pruneInPlace(all) : all.length;
      return JSON.parse(new TextDecoder().decode(kept === all.length ? all : all.subarray(0, kept)));
    } catch (err) {
      throw conn.translate(err);
    } finally {
      conn.dispose();
    }
  }

  /**
   * The whole body as one Uint8Array. With a Content-Length the chunks are read
   * straight into one array of that size (no chunk list, no second copy); else
   * (or if the body turns out longer) collected and joined.
   */
  async #readBody(res: Response, conn: Connection): Promise<Uint8Array> {
    const reader = (res.body ?? new Response("").body!).getReader();
    const declared = Number(res.headers.get("content-length") ?? NaN);
    let buf = Number.isSafeInteger(declared) && declared > 0 && declared <= 1 << 30 ? new Uint8Array(declared) : undefined;
    const chunks: Uint8Array[] = [];
    let length = 0;
    // Cancel the reader on abort too: not every runtime ends a pending body read when the request aborts.
    const onAbort = () => reader.cancel(conn.signal.reason).catch(() => {});
    conn.signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (conn.signal.aborted) throw conn.translate(conn.signal.reason);
        if (done) break;
        conn.touch();
        this.metrics.bytes += value.length;
        if (buf && length + value.length <= buf.length) buf.set(value, length);
        else {
          if (buf) {
            chunks.push(buf.subarray(0, length)); // longer than declared: fall back to collecting
            buf = undefined;
          }
          chunks.push(value);
        }
        length += value.length;
      }
    } finally {
      conn.signal.removeEventListener("abort", onAbort);
      reader.releaseLock();
    }
    if (buf) return length === buf.length ? buf : buf.subarray(0, length);
    if (chunks.length === 1) return new Uint8Array(chunks[0]!); // a copy (a Node Buffer's slice() is a view): pruning writes into it
    const all = new Uint8Array(length);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    return all;
  }

  // ---------------------------------------------------------------- watch

  /**
   * One watch connection, stepped event by event; returns the step that ends it
   * (undefined when aborted). From `initialWatch` it is a streaming list (S1)
   * whose end marker turns it into a normal watch on the same stream.
   */
  async *#watch(
    state: Extract<State<T>, { kind: "initialWatch" | "watching" }>,
    signal: AbortSignal,
  ): AsyncGenerator<ReflectorEvent<T>, Step<T> | undefined, undefined> {
    const { min, max } = this.#o.watchTimeoutSeconds;
    const query: Query = {
      watch: 1,
      allowWatchBookmarks: true, // W1; also needed for the S1 end marker
      timeoutSeconds: Math.floor(min + this.#o.random() * (max - min)),
      labelSelector: this.#o.labelSelector,
      fieldSelector: this.#o.fieldSelector,
      ...watchQuery(state),
    };
    const conn = this.#connection(signal, "watch");
    if (state.kind === "initialWatch") conn.deadline(this.#o.streamingSyncTimeoutMs);
    const started = this.#clock.now();
    let events = 0;
    let connected = false; // the server answered 200: silence after this is not a failure to connect
    let proven = false; // the first data or bookmark: this connection works
    this.metrics.watches++;
    try {
      const res = await conn.connect(this.#o.client.request({ path: this.#path, query, signal: conn.signal }));
      if (!res.ok) return step(state, { type: "http-error", error: await errorFromResponse(res, `GET ${this.#path}?watch`) }, this.#ctx);
      connected = true;
      this.#markHealthy();
      if (!res.body) return step(state, { type: "ended", events, ms: this.#clock.now() - started }, this.#ctx);
      const lines = ndjsonValues(res.body, {
        signal: conn.signal,
        maxLineBytes: this.#o.maxLineBytes,
        prune: this.#pruner,
        onChunk: (n) => {
          this.metrics.bytes += n;
          conn.touch();
        },
      });
      for await (const raw of lines) {
        events++;
        this.metrics.lastEventTime = this.#clock.now();
        const event = this.#decode(raw, events);
        if (!proven && event.type !== "ERROR") {
          proven = true;
          this.#backoff.reset(); // recovery: the next failure starts from the shortest delay again
        }
        const s = step(state, { type: "event", event }, this.#ctx);
        if (s.next === "request") return s;
        if (state.kind === "initialWatch" && s.state.kind === "watching") conn.deadline(undefined);
        state = s.state as typeof state;
        yield* this.#emit(s, conn);
      }
      return step(state, { type: "ended", events, ms: this.#clock.now() - started }, this.#ctx);
    } catch (err) {
      if (signal.aborted) return undefined;
      if (conn.expired === "connect") return step(state, { type: "failed", cause: "network", error: conn.signal.reason, connected }, this.#ctx);
      if (conn.expired) {
        return step(state, { type: "failed", cause: "idle", error: conn.signal.reason, connected, deadline: conn.expired === "deadline" }, this.#ctx);
      }
      if (err instanceof NdjsonError) {
        this.metrics.decodeErrors++;
        return step(state, { type: "failed", cause: "decode", error: err, connected }, this.#ctx);
      }
      return step(state, { type: "failed", cause: "network", error: err, connected }, this.#ctx);
    } finally {
      conn.dispose();
    }
  }

  /** One watch line as a {@link WatchEvent}, counted by wire type; a malformed line throws (a decode failure). */
  #decode(raw: unknown, line: number): WatchEvent<T> {
    if (!isRawWatchEvent(raw)) {
      const issues = v.safeParse(RawWatchEventSchema, raw);
      const why = issues.success ? "unexpected shape" : v.summarize(issues.issues);
      throw new NdjsonError("malformed-json", line, JSON.stringify(raw).slice(0, 200), `not a watch event: ${why}`);
    }
    const { type, object } = raw;
    switch (type) {
      case "ADDED":
      case "MODIFIED":
      case "DELETED": {
        this.metrics.events[type === "ADDED" ? "added" : type === "MODIFIED" ? "modified" : "deleted"]++;
        const obj = this.#parseObject(object);
        if (!obj) {
          throw new NdjsonError("malformed-json", line, JSON.stringify(object).slice(0, 200), "watch event object is not a valid Kubernetes object");
        }
        return { type, object: obj };
      }
      case "BOOKMARK":
        this.metrics.events.bookmark++;
        // B1: a bookmark need carry nothing but metadata.resourceVersion.
        return {
          type,
          resourceVersion: object.metadata?.resourceVersion,
          end: object.metadata?.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === "true",
        };
      case "ERROR":
        this.metrics.events.error++;
        return { type, error: errorFromStatus(object, { code: 500, source: "in-stream", request: `GET ${this.#path}?watch` }) };
      default:
        this.metrics.events.unknown++;
        return { type: "unknown", wireType: type };
    }
  }

  #parseObject(raw: unknown): T | undefined {
    if (!isKubeObject(raw)) {
      this.#log.warn("skipping invalid object", { excerpt: JSON.stringify(raw)?.slice(0, 200) });
      return undefined;
    }
    const obj = raw;
    if (!this.#o.parse) return obj as T;
    try {
      return this.#o.parse(obj);
    } catch (err) {
      this.#log.warn("object rejected by parse()", { key: objectKey(obj), error: (err as Error).message });
      return undefined;
    }
  }
}

/**
 * One request's abort controller plus its timers: a connect deadline until
 * the response headers arrive, and an inactivity timer. The inactivity timer
 * counts only time spent waiting for the server: it is paused while the
 * consumer holds an event, so a slow consumer never looks like a dead connection.
 */
class Connection {
  readonly #ac = new AbortController();
  readonly #parent: AbortSignal;
  readonly #onParentAbort = () => this.#ac.abort(this.#parent.reason);
  readonly #idleMs: number;
  readonly #connectMs: number;
  readonly #clock: Clock;
  readonly #onExpire: ((reason: Error) => void) | undefined;
  #timer: TimerHandle | undefined;
  #deadline: TimerHandle | undefined;
  #last: number;
  #paused = false;
  /** Which of our own timers aborted the request, if one did. */
  expired: "idle" | "connect" | "deadline" | undefined;

  constructor(parent: AbortSignal, o: { idleMs: number; connectMs: number; clock: Clock; onExpire?: (reason: Error) => void }) {
    this.#parent = parent;
    this.#idleMs = o.idleMs;
    this.#connectMs = o.connectMs;
    this.#clock = o.clock;
    this.#onExpire = o.onExpire;
    this.#last = o.clock.now();
    if (parent.aborted) this.#ac.abort(parent.reason);
    parent.addEventListener("abort", this.#onParentAbort, { once: true });
    this.#arm(o.idleMs);
  }

  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  /**
   * The request's response, or a {@link ConnectTimeoutError} after the connect
   * timeout, or the abort reason once aborted — whether or not the runtime's
   * fetch reacts to the abort. A response
   * that arrives too late has its body cancelled.
   */
  connect(request: Promise<Response>): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const finish = () => {
        settled = true;
        this.#clock.clearTimeout(timer);
        this.#ac.signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        if (settled) return;
        finish();
        reject(this.#ac.signal.reason);
      };
      const timer = this.#clock.setTimeout(() => {
        if (settled) return;
        this.#expire("connect", new ConnectTimeoutError(`connect timeout: no response headers after ${this.#connectMs} ms`));
      }, this.#connectMs, "connect");
      if (this.#ac.signal.aborted) return onAbort();
      this.#ac.signal.addEventListener("abort", onAbort, { once: true });
      request.then(
        (res) => {
          if (settled) return void res.body?.cancel().catch(() => {});
          finish();
          resolve(res);
        },
        (err: unknown) => {
          if (settled) return;
          finish();
          reject(err);
        },
      );
    });
  }

  // One timer, re-armed only when it fires early (for the rest of the budget): cheaper than re-arming per chunk.
  #arm(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => this.#check(), ms, "idle");
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#ac.signal.aborted || this.#paused) return; // resume() re-arms
    const quiet = this.#clock.now() - this.#last;
    if (quiet >= this.#idleMs) this.#expire("idle", new IdleTimeoutError(`no data for ${this.#idleMs} ms`));
    else this.#arm(this.#idleMs - quiet);
  }

  touch(): void {
    this.#last = this.#clock.now();
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#last = this.#clock.now();
    if (this.#timer === undefined && !this.#ac.signal.aborted) this.#arm(this.#idleMs);
  }

  /** Aborts the connection if it is still open after `ms` (undefined clears it). */
  deadline(ms: number | undefined): void {
    this.#clock.clearTimeout(this.#deadline);
    this.#deadline = undefined;
    if (ms !== undefined) {
      this.#deadline = this.#clock.setTimeout(
        () => this.#expire("deadline", new StreamingDeadlineError(`no end marker after ${ms} ms`)),
        ms,
        "streaming-deadline",
      );
    }
  }

  #expire(kind: "idle" | "connect" | "deadline", reason: Error): void {
    if (this.#ac.signal.aborted) return;
    this.expired = kind;
    this.#onExpire?.(reason);
    this.#ac.abort(reason);
  }

  /** Maps an error caused by one of our own timers to that timer's reason. */
  translate(err: unknown): unknown {
    return this.expired ? this.#ac.signal.reason : err;
  }

  dispose(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#clock.clearTimeout(this.#deadline);
    this.#timer = undefined;
    this.#deadline = undefined;
    this.#parent.removeEventListener("abort", this.#onParentAbort);
    if (!this.#ac.signal.aborted) this.#ac.abort();
  }
}

/** No response headers within the connect timeout. */
class ConnectTimeoutError extends Error {
  override readonly name = "ConnectTimeoutError";
}

class StreamingDeadlineError extends IdleTimeoutError {}

function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof KubeApiError) {
    return { error: error.message, code: error.code, reason: error.reason };
  }
  // Its message already names the URL and the system error; the runtime's "fetch failed" adds nothing.
  if (error instanceof KubeTransportError) return { error: error.message, code: error.code };
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return { error: `${error.name}: ${error.message}${detail}` };
  }
  return { error: String(error) };
}
