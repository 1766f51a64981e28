/**
 * The reflector: list + watch one Kubernetes collection and keep an exact,
 * current copy of it, emitting only true changes. It follows client-go's
 * reflector and the checklist in `docs/watch-protocol.md` (rule IDs L*, W*,
 * B*, S*, R*, T* are cited inline).
 *
 * Shape: an explicit state machine (`sync` → `watch` → `watch` … → `sync`)
 * driven by one async generator, so the consumer pulls events in order and
 * the store always reflects exactly the events yielded so far. Only an
 * `AbortSignal` (or the consumer leaving the loop) stops it.
 * @module
 */
import type { KubeClient, Query } from "../kube/client.ts";
import { errorFromResponse, errorFromStatus, KubeApiError } from "../kube/status.ts";
import { type Logger, silentLogger } from "../log.ts";
import * as v from "valibot";
import { Backoff, type BackoffOptions, sleep } from "./backoff.ts";
import { type ReconnectCause, newReflectorMetrics, type ReflectorMetrics } from "./metrics.ts";
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
  type RelistCause,
  type ResourceRef,
} from "./types.ts";

/** How the reflector loads a complete snapshot. */
export type InitialListMode = "auto" | "streaming" | "paginated";

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
  /** Give up on a streaming list that has not reached its end marker after this long (S5). Default 120 s. */
  streamingSyncTimeoutMs?: number;
  /** Retry backoff (W10). Default: client-go's 0.8 s ×2 → 30 s, jitter 1.0, reset after 2 min. */
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
}

/** Result of one watch connection. */
type WatchOutcome =
  | { kind: "ended"; events: number; ms: number }
  | { kind: "expired"; error: KubeApiError }
  | { kind: "failed"; cause: ReconnectCause; error: unknown; events: number; ms: number; retryAfterMs?: number; connected?: boolean }
  | { kind: "rejected"; error: KubeApiError }
  | { kind: "aborted" };

/** Thrown into a connection's AbortController when it goes quiet for too long. */
class IdleTimeoutError extends Error {
  override readonly name = "IdleTimeoutError";
}

const VERY_SHORT_WATCH_MS = 1000;

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
  #streaming: boolean;
  #running = false;
  #health: ReflectorHealth = { healthy: false, reason: "not started", since: Date.now() };
  /** Resume point: undefined until a sync completes, and after a 410 (W7: never reused). */
  #rv: string | undefined;

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
      streamingSyncTimeoutMs: options.streamingSyncTimeoutMs ?? 120_000,
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      maxWatchErrorsBeforeRelist: options.maxWatchErrorsBeforeRelist ?? 3,
      parse: options.parse,
      logger: options.logger ?? silentLogger,
      random: options.random ?? Math.random,
    };
    this.#log = this.#o.logger.child({
      component: "reflector",
      resource: options.resource.plural,
      namespace: options.namespace ?? "*",
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
    });
    this.#backoff = new Backoff(options.backoff, this.#o.random);
    this.#pruner = options.prune && options.prune.length > 0 ? new JsonPruner(options.prune) : undefined;
    const listPaths = options.prune ? listPathsOf(options.prune) : [];
    this.#listPruner = listPaths.length > 0 ? new JsonPruner(listPaths) : undefined;
    this.#path = collectionPath(options.resource, options.namespace);
    this.#streaming = this.#o.initialList !== "paginated";
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
   * (with the last failure) from a failed request until the next list completes
   * or the next watch is answered with 200.
   */
  get health(): ReflectorHealth {
    return this.#health;
  }

  /** The resourceVersion the next watch resumes from (undefined before sync / after 410). */
  get resumeResourceVersion(): string | undefined {
    return this.#rv;
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
    let phase: "initial" | "resync" = this.store.synced ? "resync" : "initial";
    let cause: RelistCause | undefined = this.store.synced ? "restart" : undefined;
    let watchErrors = 0;
    try {
      while (!stop.signal.aborted) {
        let outcome: WatchOutcome;
        if (this.#rv === undefined) {
          if (this.#streaming) {
            outcome = yield* this.#watch(stop.signal, { phase, cause });
            if (outcome.kind === "rejected") {
              if (this.#o.initialList === "streaming") {
                await this.#fail(outcome.error, "streaming list rejected", stop.signal);
              } else {
                this.#log.info("streaming list not available, falling back to paginated list", {
                  code: outcome.error.code,
                  reason: outcome.error.reason,
                });
                this.#streaming = false;
              }
              continue;
            }
            if (this.#rv === undefined) {
              // S3: the stream ended before its end marker; the partial buffer is gone.
              if (outcome.kind === "aborted") break;
              if (outcome.kind === "failed" && outcome.cause === "idle" && this.#o.initialList === "auto" &&
                outcome.error instanceof StreamingDeadlineError) {
                this.#log.warn("streaming list did not finish in time, falling back to paginated list");
                this.#streaming = false;
                continue;
              }
              await this.#fail(outcomeError(outcome), "streaming list ended before its end marker", stop.signal, retryAfter(outcome));
              continue;
            }
            phase = "resync";
          } else {
            try {
              yield* this.#listAndReplace(stop.signal, phase, cause);
            } catch (err) {
              if (stop.signal.aborted) break;
              await this.#fail(err, "list failed", stop.signal, err instanceof KubeApiError ? retryAfterMsOf(err) : undefined);
              continue;
            }
            phase = "resync";
            continue;
          }
        } else {
          outcome = yield* this.#watch(stop.signal, undefined);
        }

        // Decide how to continue after a watch connection ended.
        switch (outcome.kind) {
          case "aborted":
            return;
          case "ended": {
            this.metrics.reconnects.timeout++;
            if (outcome.events === 0 && outcome.ms < VERY_SHORT_WATCH_MS) {
              // W11: a very short empty watch is a failure, else a broken server makes us spin.
              await this.#fail(new Error("watch closed in under 1 s with no events"), "very short watch", stop.signal);
            } else {
              watchErrors = 0;
              this.#log.debug("watch ended cleanly, resuming", { resourceVersion: this.#rv });
            }
            break; // W6: re-watch from the last RV, no relist
          }
          case "expired": {
            // W7/W8: never send this RV again; relist.
            this.metrics.expired++;
            this.metrics.reconnects.expired++;
            this.#log.info("resourceVersion expired, relisting", {
              resourceVersion: this.#rv,
              message: outcome.error.message,
            });
            this.#rv = undefined;
            phase = "resync";
            cause = "expired";
            watchErrors = 0;
            break;
          }
          case "rejected":
          case "failed": {
            const error = outcome.error;
            const reconnectCause = outcome.kind === "failed" ? outcome.cause : "http-error";
            this.metrics.reconnects[reconnectCause]++;
            if (reconnectCause === "idle" && outcome.kind === "failed" && outcome.connected) {
              // W12: silence after the server answered is what a half-open connection looks like,
              // and also a quiet, healthy watch when the server sends no bookmarks: resume at once,
              // without alarm. Silence before any answer is a failure (backoff below).
              this.#log.info("no data within the idle timeout, reconnecting", {
                idleTimeoutMs: this.#o.idleTimeoutMs,
                resourceVersion: this.#rv,
              });
              break;
            }
            if (reconnectCause === "error-event" || reconnectCause === "http-error") watchErrors++;
            if (watchErrors >= this.#o.maxWatchErrorsBeforeRelist) {
              // W9: repeated errors on the same RV: start over from a fresh list.
              this.#log.warn("repeated watch errors, relisting", { errors: watchErrors });
              this.#rv = undefined;
              phase = "resync";
              cause = "watch-errors";
              watchErrors = 0;
            }
            await this.#fail(error, `watch ${reconnectCause}`, stop.signal, retryAfter(outcome));
            break;
          }
        }
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stop.abort();
      this.#running = false;
    }
  }

  #markHealthy(): void {
    if (!this.#health.healthy) this.#health = { healthy: true, since: Date.now() };
  }

  /** Logs a failure and waits out the backoff (or the server's Retry-After). */
  async #fail(error: unknown, what: string, signal: AbortSignal, retryAfterMs?: number): Promise<void> {
    if (signal.aborted) return;
    this.metrics.failures++;
    this.#health = { healthy: false, reason: `${what}: ${error instanceof Error ? error.message : String(error)}`, since: Date.now() };
    const backoffMs = this.#backoff.next();
    // Retry-After wins when the server gives one; a little jitter keeps many watchers apart.
    const delay = retryAfterMs !== undefined ? retryAfterMs * (1 + 0.1 * this.#o.random()) : backoffMs;
    const fields = { ...describeError(error), retryInMs: Math.round(delay), resourceVersion: this.#rv };
    if (error instanceof KubeApiError && (error.code === 403 || error.code === 401)) {
      // Permission problems need a person, not a retry: say exactly what is missing.
      this.#log.error(`${what}: ${error.code === 403 ? "forbidden" : "unauthorized"}`, { ...fields, hint: this.#permissionHint(error.code) });
    } else {
      this.#log.warn(what, fields);
    }
    await sleep(delay, signal);
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

  /** L1–L5: a consistent paginated list; yields the diff against the store, then `synced`. */
  async *#listAndReplace(
    signal: AbortSignal,
    phase: "initial" | "resync",
    cause: RelistCause | undefined,
  ): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    let page;
    try {
      page = await this.#listAll(signal, this.#o.pageSize);
    } catch (err) {
      if (!(err instanceof ContinueExpiredError)) throw err;
      // L5: never publish a partial snapshot, never use the inconsistent continuation;
      // like client-go's FullListIfExpired, fall back to one unpaginated list.
      this.metrics.expired++;
      this.#log.info("continue token expired during list, retrying with one full list");
      page = await this.#listAll(signal, undefined);
    }
    this.metrics.lists++;
    if (phase === "resync") this.metrics.relists++;
    this.#markHealthy();
    yield* this.#replace(page.items, page.resourceVersion, phase, cause); // L3: resumes from the list RV, never an item's
  }

  async #listAll(signal: AbortSignal, limit: number | undefined): Promise<{ items: Map<string, T>; resourceVersion: string }> {
    const items = new Map<string, T>();
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    let pageNo = 0;
    do {
      pageNo++;
      // L1/L2: no resourceVersion (a consistent read), and never one next to `continue`.
      const query: Query = {
        labelSelector: this.#o.labelSelector,
        fieldSelector: this.#o.fieldSelector,
        limit,
        continue: cont,
      };
      const body = await this.#getJson(query, signal);
      const parsed = v.safeParse(ListPageSchema, body);
      if (!parsed.success) throw new Error(`invalid list response: ${v.summarize(parsed.issues)}`);
      this.metrics.listPages++;
      resourceVersion ??= parsed.output.metadata.resourceVersion; // L3: first page's RV
      for (const raw of parsed.output.items) {
        const obj = this.#parseObject(raw);
        if (obj) items.set(objectKey(obj), obj);
      }
      cont = parsed.output.metadata.continue || undefined; // L4: done only when empty
      if (cont && pageNo > 1_000_000) throw new Error("list did not terminate");
    } while (cont);
    return { items, resourceVersion };
  }

  /** GET a JSON document, guarded by the inactivity timer (a stalled list must not hang forever). */
  async #getJson(query: Query, signal: AbortSignal): Promise<unknown> {
    const conn = new Connection(signal, this.#o.idleTimeoutMs);
    try {
      const res = await this.#o.client.request({ path: this.#path, query, signal: conn.signal });
      if (!res.ok) {
        const err = await errorFromResponse(res, `GET ${this.#path}`);
        if (err.isExpired && query.continue) throw new ContinueExpiredError(err);
        throw err;
      }
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
    if (chunks.length === 1) return chunks[0]!.slice(); // a copy: pruning writes into it
    const all = new Uint8Array(length);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    return all;
  }

  /**
   * R1/R2/S2: replace the store with a complete snapshot, emitting only true
   * differences: deletes (inferred) for vanished keys, adds for new keys,
   * modifies for changed RVs, delete+add when the uid changed; then `synced`.
   */
  async *#replace(
    items: Map<string, T>,
    resourceVersion: string,
    phase: "initial" | "resync",
    cause: RelistCause | undefined,
  ): AsyncGenerator<ReflectorEvent<T>, void, undefined> {
    const store = this.store;
    for (const key of [...store.keys()]) {
      if (items.has(key)) continue;
      const old = store.get(key) as T;
      store.delete(key);
      this.metrics.emitted.deleted++;
      this.metrics.emitted.inferredDeleted++;
      yield { type: "deleted", object: old, inferred: true };
    }
    for (const [key, obj] of items) {
      const old = store.get(key);
      if (!old) {
        store.set(obj);
        this.metrics.emitted.added++;
        yield { type: "added", object: obj };
      } else if (uidChanged(old, obj)) {
        store.delete(key);
        this.metrics.emitted.deleted++;
        this.metrics.emitted.inferredDeleted++;
        yield { type: "deleted", object: old, inferred: true };
        store.set(obj);
        this.metrics.emitted.added++;
        yield { type: "added", object: obj };
      } else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
        store.set(obj);
        this.metrics.emitted.modified++;
        yield { type: "modified", object: obj, previous: old };
      }
    }
    store.setResourceVersion(resourceVersion);
    this.metrics.lastResourceVersion = resourceVersion;
    store.markSynced(true);
    // Before the marker is yielded: a consumer may stop right there, and the next
    // run must resume from this snapshot instead of listing again.
    this.#rv = resourceVersion;
    this.metrics.emitted.synced++;
    this.#log.info(phase === "initial" ? "initial sync done" : "resynced", {
      objects: store.size,
      resourceVersion,
      ...(cause ? { cause } : {}),
    });
    yield { type: "synced", phase, resourceVersion, ...(cause ? { cause } : {}) };
  }

  // ---------------------------------------------------------------- watch

  /**
   * One watch connection. With `initial` set it is a streaming list (S1): events
   * are buffered until the `initial-events-end` bookmark, then the store is
   * replaced and the same stream continues as a normal watch.
   */
  async *#watch(
    signal: AbortSignal,
    initial: { phase: "initial" | "resync"; cause: RelistCause | undefined } | undefined,
  ): AsyncGenerator<ReflectorEvent<T>, WatchOutcome, undefined> {
    const { min, max } = this.#o.watchTimeoutSeconds;
    const timeoutSeconds = Math.floor(min + this.#o.random() * (max - min));
    const query: Query = {
      watch: 1,
      allowWatchBookmarks: true, // W1; also needed for the S1 end marker
      timeoutSeconds,
      labelSelector: this.#o.labelSelector,
      fieldSelector: this.#o.fieldSelector,
    };
    if (initial) {
      // S1 with RV "" (a consistent read); S4: only here, never on resume.
      query.sendInitialEvents = true;
      query.resourceVersionMatch = "NotOlderThan";
      query.resourceVersion = "";
    } else {
      query.resourceVersion = this.#rv;
    }
    const conn = new Connection(signal, this.#o.idleTimeoutMs);
    if (initial) conn.deadline(this.#o.streamingSyncTimeoutMs);
    const started = Date.now();
    let events = 0;
    let buffer: Map<string, T> | undefined = initial ? new Map() : undefined;
    let connected = false; // the server answered 200: silence after this is not a failure to connect
    this.metrics.watches++;
    try {
      const res = await this.#o.client.request({ path: this.#path, query, signal: conn.signal });
      connected = res.ok;
      if (res.ok) this.#markHealthy();
      if (!res.ok) {
        const error = await errorFromResponse(res, `GET ${this.#path}?watch`);
        if (error.isExpired) return { kind: "expired", error }; // W8
        if (initial && isStreamingRejection(error)) return { kind: "rejected", error }; // S5
        return { kind: "failed", cause: "http-error", error, events, ms: Date.now() - started, retryAfterMs: retryAfterMsOf(error) };
      }
      if (!res.body) return { kind: "ended", events, ms: Date.now() - started };
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
        this.metrics.lastEventTime = Date.now();
        if (!isRawWatchEvent(raw)) {
          const issues = v.safeParse(RawWatchEventSchema, raw);
          const why = issues.success ? "unexpected shape" : v.summarize(issues.issues);
          throw new NdjsonError("malformed-json", events, JSON.stringify(raw).slice(0, 200), `not a watch event: ${why}`);
        }
        const { type, object } = raw;
        switch (type) {
          case "ADDED":
          case "MODIFIED":
          case "DELETED": {
            this.metrics.events[type === "ADDED" ? "added" : type === "MODIFIED" ? "modified" : "deleted"]++;
            const obj = this.#parseObject(object);
            if (!obj) {
              throw new NdjsonError("malformed-json", events, JSON.stringify(object).slice(0, 200), "watch event object is not a valid Kubernetes object");
            }
            if (buffer) {
              // W4/S2: initial events are unordered; buffer them, do not take their RVs.
              if (type === "DELETED") buffer.delete(objectKey(obj));
              else buffer.set(objectKey(obj), obj);
              continue;
            }
            this.#rv = obj.metadata.resourceVersion; // W4
            this.store.setResourceVersion(this.#rv as string);
            this.metrics.lastResourceVersion = this.#rv as string;
            const change = this.#apply(type, obj);
            if (change) {
              conn.pause();
              for (const event of change) yield event;
              conn.resume();
            }
            break;
          }
          case "BOOKMARK": {
            this.metrics.events.bookmark++;
            const rv = object.metadata?.resourceVersion;
            const isEnd = object.metadata?.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === "true";
            if (buffer && initial) {
              if (!isEnd || !rv) continue; // before the marker, bookmarks do not move the resume RV
              // S2: the snapshot is complete; swap it in atomically (as a diff).
              const items = buffer;
              buffer = undefined;
              conn.deadline(undefined);
              this.metrics.lists++;
              this.metrics.streamingLists++;
              if (initial.phase === "resync") this.metrics.relists++;
              conn.pause();
              yield* this.#replace(items, rv, initial.phase, initial.cause);
              conn.resume();
              continue;
            }
            if (rv) {
              // W5/B3: a bookmark only advances the resume RV.
              this.#rv = rv;
              this.store.setResourceVersion(rv);
              this.metrics.lastResourceVersion = rv;
            }
            break;
          }
          case "ERROR": {
            this.metrics.events.error++;
            const error = errorFromStatus(object, { code: 500, source: "in-stream", request: `GET ${this.#path}?watch` });
            if (error.isExpired) return { kind: "expired", error }; // W7
            if (buffer && initial && isStreamingRejection(error)) return { kind: "rejected", error };
            // W9: end this stream; the caller backs off and re-watches (or relists if it repeats).
            return { kind: "failed", cause: "error-event", error, events, ms: Date.now() - started, retryAfterMs: retryAfterMsOf(error) };
          }
          default: {
            // W3: unknown types are logged and skipped.
            this.metrics.events.unknown++;
            this.#log.warn("unknown watch event type skipped", { type });
          }
        }
      }
      return { kind: "ended", events, ms: Date.now() - started };
    } catch (err) {
      if (signal.aborted) return { kind: "aborted" };
      const ms = Date.now() - started;
      if (conn.idle) return { kind: "failed", cause: "idle", error: conn.signal.reason, events, ms, connected };
      if (err instanceof NdjsonError) {
        this.metrics.decodeErrors++;
        return { kind: "failed", cause: "decode", error: err, events, ms };
      }
      return { kind: "failed", cause: "network", error: err, events, ms };
    } finally {
      conn.dispose();
    }
  }

  /** Applies one live watch event to the store; returns the events to emit (none for no-ops). */
  #apply(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): ReflectorEvent<T>[] | undefined {
    const store = this.store;
    const key = objectKey(obj);
    const old = store.get(key);
    if (type === "DELETED") {
      if (!old) return undefined; // nothing to delete: emitting would invent an event
      store.delete(key);
      this.metrics.emitted.deleted++;
      return [{ type: "deleted", object: obj }];
    }
    if (!old) {
      store.set(obj);
      this.metrics.emitted.added++;
      return [{ type: "added", object: obj }];
    }
    if (uidChanged(old, obj)) {
      // R2: same name, new object: the delete happened while we were not looking.
      store.delete(key);
      store.set(obj);
      this.metrics.emitted.deleted++;
      this.metrics.emitted.inferredDeleted++;
      this.metrics.emitted.added++;
      return [{ type: "deleted", object: old, inferred: true }, { type: "added", object: obj }];
    }
    if (old.metadata.resourceVersion === obj.metadata.resourceVersion) return undefined;
    store.set(obj);
    this.metrics.emitted.modified++;
    return [{ type: "modified", object: obj, previous: old }];
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
 * One request's abort controller plus its inactivity timer. The timer counts
 * only time spent waiting for the server: it is paused while the consumer
 * holds an event, so a slow consumer never looks like a dead connection.
 */
class Connection {
  readonly #ac = new AbortController();
  readonly #parent: AbortSignal;
  readonly #onParentAbort = () => this.#ac.abort(this.#parent.reason);
  readonly #idleMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #deadline: ReturnType<typeof setTimeout> | undefined;
  #last = Date.now();
  #paused = false;
  idle = false;

  constructor(parent: AbortSignal, idleMs: number) {
    this.#parent = parent;
    this.#idleMs = idleMs;
    if (parent.aborted) this.#ac.abort(parent.reason);
    parent.addEventListener("abort", this.#onParentAbort, { once: true });
    // One coarse interval per connection is cheaper than re-arming a timer per chunk.
    this.#timer = setInterval(() => {
      if (!this.#paused && Date.now() - this.#last > idleMs) this.#expire(new IdleTimeoutError(`no data for ${idleMs} ms`));
    }, Math.max(5, Math.floor(idleMs / 4)));
  }

  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  touch(): void {
    this.#last = Date.now();
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#last = Date.now();
  }

  /** Aborts the connection if it is still open after `ms` (undefined clears it). */
  deadline(ms: number | undefined): void {
    clearTimeout(this.#deadline);
    this.#deadline = undefined;
    if (ms !== undefined) {
      this.#deadline = setTimeout(() => this.#expire(new StreamingDeadlineError(`no end marker after ${ms} ms`)), ms);
    }
  }

  #expire(reason: Error): void {
    if (this.#ac.signal.aborted) return;
    this.idle = true;
    this.#ac.abort(reason);
  }

  /** Maps an error caused by our own idle abort to that reason. */
  translate(err: unknown): unknown {
    return this.idle ? this.#ac.signal.reason : err;
  }

  dispose(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#deadline);
    this.#timer = undefined;
    this.#parent.removeEventListener("abort", this.#onParentAbort);
    if (!this.#ac.signal.aborted) this.#ac.abort();
  }
}

class StreamingDeadlineError extends IdleTimeoutError {}

/** A 410 on a continuation page (L5). */
class ContinueExpiredError extends Error {
  override readonly name = "ContinueExpiredError";
  override readonly cause: KubeApiError;
  constructor(cause: KubeApiError) {
    super(cause.message);
    this.cause = cause;
  }
}

function uidChanged(a: KubeObject, b: KubeObject): boolean {
  const x = a.metadata.uid;
  const y = b.metadata.uid;
  return x !== undefined && y !== undefined && x !== y;
}

/** S5: answers that mean "this server will not do a streaming list". */
function isStreamingRejection(error: KubeApiError): boolean {
  return error.code === 400 || error.code === 403 || error.code === 404 || error.code === 405 ||
    error.code === 422 || error.code === 501;
}

function retryAfterMsOf(error: KubeApiError): number | undefined {
  if (error.retryAfterSeconds !== undefined) return error.retryAfterSeconds * 1000;
  if (error.isTooLargeResourceVersion) return 1000; // L7/S6
  return undefined;
}

function retryAfter(outcome: WatchOutcome): number | undefined {
  return outcome.kind === "failed" ? outcome.retryAfterMs : undefined;
}

function outcomeError(outcome: WatchOutcome): unknown {
  switch (outcome.kind) {
    case "failed":
    case "expired":
    case "rejected":
      return outcome.error;
    case "ended":
      return new Error(`stream ended after ${outcome.events} events`);
    default:
      return new Error(outcome.kind);
  }
}

function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof KubeApiError) {
    return { error: error.message, code: error.code, reason: error.reason };
  }
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return { error: `${error.name}: ${error.message}${detail}` };
  }
  return { error: String(error) };
}
