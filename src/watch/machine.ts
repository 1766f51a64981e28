/**
 * The list/watch protocol as an explicit state machine, after kube-rs's
 * `watcher::State` and `step`: a {@link State} union and a {@link step}
 * function from one outcome of the current request (a list page, a watch
 * event, the end of a connection) to the next state, the events to emit and
 * how long to wait. No I/O and no timers: the {@link Reflector} sends the
 * requests a state calls for ({@link listQuery}, {@link watchQuery}), feeds
 * their outcomes here, writes the emitted events to its store as it yields
 * them, and waits the step's {@link Delay} (delay.ts turns it into
 * milliseconds: the backoff and the jitter are the driver's, so `step` is a
 * pure function of the state, the outcome and the store). Rule IDs (L*, W*, B*, S*, R*) are those of
 * `docs/watch-protocol.md`.
 *
 * `step` may reuse the buffers of the state it is given (the `items` of
 * `paging`, the `buffer` of `initialWatch`): the old state is consumed, as
 * in kube-rs, so a long list is not copied once per item.
 * @module
 */
import { KubeApiError } from "../kube/status.ts";
import type { ReconnectCause } from "./metrics.ts";
import { type KubeObject, objectKey, type ReflectorEvent, type RelistCause } from "./types.ts";

/** How the reflector loads a complete snapshot. */
export type InitialListMode = "auto" | "streaming" | "paginated";

/** The first sync, or a later one. */
export type Phase = "initial" | "resync";

/** Where the protocol stands; each state but `empty` names the next (or open) request. */
export type State<T extends KubeObject> =
  /** Never run, or stopped before a snapshot to resume from. */
  | { kind: "empty"; streaming: boolean }
  /** A paginated list (L1–L5): pages so far, keyed; the first page's RV (L3). */
  | {
    kind: "paging";
    phase: Phase;
    cause: RelistCause | undefined;
    /** Page size; undefined for the one unpaginated list after an expired continue token (L5). */
    limit: number | undefined;
    continue: string | undefined;
    resourceVersion: string | undefined;
    items: Map<string, T>;
    pages: number;
  }
  /** A streaming list (S1): initial events buffered until the end marker (S2). */
  | { kind: "initialWatch"; phase: Phase; cause: RelistCause | undefined; buffer: Map<string, T> }
  /** Watching from `resourceVersion`; `errors` counts consecutive watch errors on it (W9). */
  | { kind: "watching"; streaming: boolean; resourceVersion: string; errors: number };

/** A state with a request to make: what a run is in once started, and what every step returns. */
export type ActiveState<T extends KubeObject> = Exclude<State<T>, { kind: "empty" }>;

/** One decoded watch event. */
export type WatchEvent<T extends KubeObject> =
  | { type: "ADDED" | "MODIFIED" | "DELETED"; object: T }
  | { type: "BOOKMARK"; resourceVersion: string | undefined; end: boolean }
  | { type: "ERROR"; error: KubeApiError }
  | { type: "unknown"; wireType: string };

/** What happened to the current request. */
export type Outcome<T extends KubeObject> =
  /** A list page (parsed objects; invalid ones already skipped). */
  | { type: "page"; items: T[]; resourceVersion: string; continue: string | undefined }
  /** A list request failed: a {@link KubeApiError} for non-2xx answers, else a network or decode error. */
  | { type: "list-failed"; error: unknown }
  /** A watch request was answered with a non-2xx status. */
  | { type: "http-error"; error: KubeApiError }
  /** One event of an open watch. */
  | { type: "event"; event: WatchEvent<T> }
  /** The server closed the watch cleanly after `events` lines and `ms`. */
  | { type: "ended"; events: number; ms: number }
  /**
   * The watch broke: `idle` = our inactivity timer (`deadline`: the streaming
   * list's end-marker deadline), `connected` = it had been answered with 200.
   */
  | { type: "failed"; cause: "network" | "decode" | "idle"; error: unknown; connected: boolean; deadline?: boolean };

/** What the step decided, for logs, metrics and health (the reflector renders them). */
export type Note =
  | { kind: "failure"; what: string; error: unknown }
  | { kind: "reconnect"; cause: ReconnectCause }
  | { kind: "expired"; error: KubeApiError; resourceVersion: string }
  | { kind: "continue-expired" }
  | { kind: "fallback"; reason: "rejected" | "deadline"; error: unknown }
  | { kind: "relist-after-errors"; errors: number }
  | { kind: "synced"; streaming: boolean; phase: Phase; cause: RelistCause | undefined; objects: number }
  | { kind: "idle-reconnect"; resourceVersion: string }
  | { kind: "ended"; resourceVersion: string }
  | { kind: "unknown-type"; wireType: string };

/** The result of one {@link step}. */
export interface Step<T extends KubeObject> {
  state: ActiveState<T>;
  /** Events to write to the store and yield, in order. */
  emit: ReflectorEvent<T>[];
  /**
   * `read`: keep reading the open watch. `request`: end the current request
   * (if still open) and, after `delay`, send the one `state` calls for.
   */
  next: "read" | "request";
  /** What to wait before the next request. */
  delay: Delay;
  /** The request ran its course: the server is fine, past failures are forgotten (the backoff starts over). */
  resetBackoff?: true;
  notes: Note[];
}

/** What to wait before the next request; the driver turns it into milliseconds (delay.ts). */
export type Delay =
  /** Nothing: at once. */
  | { kind: "none" }
  /** A failure: the backoff's next delay. */
  | { kind: "backoff" }
  /** A failure the server said when to retry (Retry-After, L7/W10/S6): its delay plus a little jitter; the backoff still grows. */
  | { kind: "retry-after"; ms: number };

const NOW: Delay = Object.freeze({ kind: "none" });

/** The objects as yielded so far (the reflector's store). */
export interface StoreView<T extends KubeObject> {
  get(key: string): T | undefined;
  keys(): Iterable<string>;
}

/** What {@link step} reads besides the state: settings and the store. */
export interface MachineContext<T extends KubeObject> {
  store: StoreView<T>;
  initialList: InitialListMode;
  pageSize: number;
  maxWatchErrorsBeforeRelist: number;
}

/** A watch that closes this fast with no events is a failure (W11, client-go's VeryShortWatchError). */
export const VERY_SHORT_WATCH_MS = 1000;

/** Pages after which a list that keeps returning `continue` is abandoned. */
const MAX_PAGES = 1_000_000;

/** The state of a reflector that has never run. */
export function initialState<T extends KubeObject>(initialList: InitialListMode): State<T> {
  return { kind: "empty", streaming: initialList !== "paginated" };
}

/**
 * The state a run starts in: a watch resumes from its RV (with its error count
 * cleared); anything else means no snapshot to resume from, so a fresh sync —
 * a `resync` with cause `restart` if the store already holds one.
 */
export function start<T extends KubeObject>(state: State<T>, ctx: MachineContext<T>, storeSynced: boolean): ActiveState<T> {
  if (state.kind === "watching") return { ...state, errors: 0 };
  const streaming = state.kind === "initialWatch" || (state.kind === "empty" && state.streaming);
  return sync(streaming, storeSynced ? "resync" : "initial", storeSynced ? "restart" : undefined, ctx);
}

/** L1/L2/L6: the RV-related query of a list page: no resourceVersion ever (a consistent read), `continue` only with the same limit. */
export function listQuery<T extends KubeObject>(state: Extract<State<T>, { kind: "paging" }>): { limit?: number; continue?: string } {
  return { limit: state.limit, continue: state.continue };
}

/** S1/S4/W1: the RV-related query of a watch: a streaming list from RV "" only for a sync, else the last RV. */
export function watchQuery<T extends KubeObject>(
  state: Extract<State<T>, { kind: "initialWatch" | "watching" }>,
): { resourceVersion: string; sendInitialEvents?: true; resourceVersionMatch?: "NotOlderThan" } {
  if (state.kind === "watching") return { resourceVersion: state.resourceVersion };
  return { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan", resourceVersion: "" };
}

/** One transition: `state` plus what happened to its request → the next state, events, delay. */
export function step<T extends KubeObject>(state: State<T>, outcome: Outcome<T>, ctx: MachineContext<T>): Step<T> {
  switch (state.kind) {
    case "empty":
      // Nothing was in flight: start a sync and treat the outcome as a stray.
      return request(start(state, ctx, false));
    case "paging":
      return stepPaging(state, outcome, ctx);
    case "initialWatch":
      return stepInitialWatch(state, outcome, ctx);
    case "watching":
      return stepWatching(state, outcome, ctx);
  }
}

// ------------------------------------------------------------------ paging

function stepPaging<T extends KubeObject>(s: Extract<State<T>, { kind: "paging" }>, o: Outcome<T>, ctx: MachineContext<T>): Step<T> {
  if (o.type === "page") {
    s.resourceVersion ??= o.resourceVersion; // L3: the first page's RV, never an item's
    for (const obj of o.items) s.items.set(objectKey(obj), obj);
    s.pages++;
    if (o.continue) {
      if (s.pages >= MAX_PAGES) return failure<T>(paging(s.phase, s.cause, ctx.pageSize), new Error("list did not terminate"), "list failed");
      s.continue = o.continue; // L2; L4: not synced until a page without `continue`
      return request(s);
    }
    const rv = s.resourceVersion;
    return {
      state: { kind: "watching", streaming: false, resourceVersion: rv, errors: 0 },
      emit: replace(ctx.store, s.items, rv, s.phase, s.cause),
      next: "request",
      delay: NOW,
      notes: [{ kind: "synced", streaming: false, phase: s.phase, cause: s.cause, objects: s.items.size }],
    };
  }
  const error = o.type === "list-failed" || o.type === "http-error" ? o.error : new Error(`unexpected ${o.type} while listing`);
  if (error instanceof KubeApiError && error.isExpired && s.continue !== undefined) {
    // L5: never publish the partial pages, never use the inconsistent continuation the 410
    // offers; like client-go's FullListIfExpired, one unpaginated list, at once.
    return { ...request(paging(s.phase, s.cause, undefined)), notes: [{ kind: "continue-expired" }] };
  }
  const retryAfter = error instanceof KubeApiError ? retryAfterMsOf(error) : undefined; // L7
  return failure<T>(paging(s.phase, s.cause, ctx.pageSize), error, "list failed", retryAfter);
}

// ------------------------------------------------------------ initialWatch

function stepInitialWatch<T extends KubeObject>(s: Extract<State<T>, { kind: "initialWatch" }>, o: Outcome<T>, ctx: MachineContext<T>): Step<T> {
  // S3: any end before the marker discards the buffer; the sync is redone from RV "".
  const again = () => initialWatch<T>(s.phase, s.cause);
  switch (o.type) {
    case "event": {
      const e = o.event;
      switch (e.type) {
        case "ADDED":
        case "MODIFIED":
          s.buffer.set(objectKey(e.object), e.object); // W4/S2: buffered; their RVs are unordered
          return read(s);
        case "DELETED":
          s.buffer.delete(objectKey(e.object));
          return read(s);
        case "BOOKMARK": {
          // B3/S2: only the annotated bookmark ends the list; any other moves nothing.
          if (!e.end || !e.resourceVersion) return read(s);
          const rv = e.resourceVersion;
          return {
            state: { kind: "watching", streaming: true, resourceVersion: rv, errors: 0 },
            emit: replace(ctx.store, s.buffer, rv, s.phase, s.cause),
            next: "read", // the same stream goes on as a normal watch
            delay: NOW,
            notes: [{ kind: "synced", streaming: true, phase: s.phase, cause: s.cause, objects: s.buffer.size }],
          };
        }
        case "ERROR":
          if (!e.error.isExpired && isStreamingRejection(e.error)) return rejected(s, e.error, ctx);
          return failure<T>(again(), e.error, "streaming list ended before its end marker", retryAfterMsOf(e.error));
        case "unknown":
          return { ...read(s), notes: [{ kind: "unknown-type", wireType: e.wireType }] };
      }
      break;
    }
    case "http-error":
      if (!o.error.isExpired && isStreamingRejection(o.error)) return rejected(s, o.error, ctx); // S5
      // S6: 504 TooLarge is retried after retryAfterSeconds; a 410 just means "from RV '' again".
      return failure<T>(again(), o.error, "streaming list ended before its end marker", retryAfterMsOf(o.error));
    case "ended":
      return failure<T>(again(), new Error(`stream ended after ${o.events} events`), "streaming list ended before its end marker");
    case "failed":
      if (o.deadline && ctx.initialList === "auto") {
        // S5: no end marker in time: this server's streaming list is not usable; page instead.
        return { ...request(paging(s.phase, s.cause, ctx.pageSize)), notes: [{ kind: "fallback", reason: "deadline", error: o.error }] };
      }
      return failure<T>(again(), o.error, "streaming list ended before its end marker");
    case "page":
    case "list-failed":
      break;
  }
  return request(again());
}

function rejected<T extends KubeObject>(s: Extract<State<T>, { kind: "initialWatch" }>, error: KubeApiError, ctx: MachineContext<T>): Step<T> {
  if (ctx.initialList === "streaming") return failure<T>(initialWatch<T>(s.phase, s.cause), error, "streaming list rejected");
  return { ...request(paging(s.phase, s.cause, ctx.pageSize)), notes: [{ kind: "fallback", reason: "rejected", error }] };
}

// ---------------------------------------------------------------- watching

function stepWatching<T extends KubeObject>(s: Extract<State<T>, { kind: "watching" }>, o: Outcome<T>, ctx: MachineContext<T>): Step<T> {
  switch (o.type) {
    case "event": {
      const e = o.event;
      switch (e.type) {
        case "ADDED":
        case "MODIFIED":
        case "DELETED": {
          const rv = e.object.metadata.resourceVersion as string; // W4
          return { state: { ...s, resourceVersion: rv }, emit: applyLive(ctx.store, e.type, e.object), next: "read", delay: NOW, notes: [] };
        }
        case "BOOKMARK":
          // W5/B3: a bookmark (annotated or not, here) only advances the resume RV.
          return read(e.resourceVersion ? { ...s, resourceVersion: e.resourceVersion } : s);
        case "ERROR":
          if (e.error.isExpired) return expired(s, e.error, ctx); // W7
          return watchError(s, e.error, "error-event", ctx); // W9
        case "unknown":
          return { ...read(s), notes: [{ kind: "unknown-type", wireType: e.wireType }] }; // W3
      }
      break;
    }
    case "http-error":
      if (o.error.isExpired) return expired(s, o.error, ctx); // W8
      return watchError(s, o.error, "http-error", ctx); // W10: same RV, Retry-After or backoff
    case "ended": {
      const reconnect: Note = { kind: "reconnect", cause: "timeout" };
      if (o.events === 0 && o.ms < VERY_SHORT_WATCH_MS) {
        // W11: a broken server that closes at once must not make us spin.
        const f = failure<T>(s, new Error("watch closed in under 1 s with no events"), "very short watch");
        return { ...f, notes: [reconnect, ...f.notes] };
      }
      // W6: re-watch at once from the last RV, no relist; a watch that ran its course: the server is fine.
      return { ...request({ ...s, errors: 0 }), resetBackoff: true, notes: [reconnect, { kind: "ended", resourceVersion: s.resourceVersion }] };
    }
    case "failed": {
      const reconnect: Note = { kind: "reconnect", cause: o.cause };
      if (o.cause === "idle" && o.connected) {
        // W12: silence after the server answered is a half-open connection, or a quiet watch on
        // a server that sends no bookmarks: resume at once from the same RV.
        return { ...request(s), notes: [reconnect, { kind: "idle-reconnect", resourceVersion: s.resourceVersion }] };
      }
      const f = failure<T>(s, o.error, `watch ${o.cause}`);
      return { ...f, notes: [reconnect, ...f.notes] };
    }
    case "page":
    case "list-failed":
      break;
  }
  return request(s);
}

function expired<T extends KubeObject>(s: Extract<State<T>, { kind: "watching" }>, error: KubeApiError, ctx: MachineContext<T>): Step<T> {
  // W7/W8: never send this RV again; relist (no backoff: the server is answering).
  return {
    ...request(sync(s.streaming, "resync", "expired", ctx)),
    notes: [{ kind: "reconnect", cause: "expired" }, { kind: "expired", error, resourceVersion: s.resourceVersion }],
  };
}

function watchError<T extends KubeObject>(
  s: Extract<State<T>, { kind: "watching" }>,
  error: KubeApiError,
  cause: "error-event" | "http-error",
  ctx: MachineContext<T>,
): Step<T> {
  const errors = s.errors + 1;
  const notes: Note[] = [{ kind: "reconnect", cause }];
  let next: ActiveState<T> = { ...s, errors };
  if (errors >= ctx.maxWatchErrorsBeforeRelist) {
    // W9: the same error again and again on this RV: start over from a fresh list.
    notes.push({ kind: "relist-after-errors", errors });
    next = sync(s.streaming, "resync", "watch-errors", ctx);
  }
  const f = failure<T>(next, error, `watch ${cause}`, retryAfterMsOf(error));
  return { ...f, notes: [...notes, ...f.notes] };
}

// ------------------------------------------------------------------ shared

function sync<T extends KubeObject>(streaming: boolean, phase: Phase, cause: RelistCause | undefined, ctx: MachineContext<T>): ActiveState<T> {
  return streaming ? initialWatch(phase, cause) : paging(phase, cause, ctx.pageSize);
}

function paging<T extends KubeObject>(phase: Phase, cause: RelistCause | undefined, limit: number | undefined): ActiveState<T> {
  return { kind: "paging", phase, cause, limit, continue: undefined, resourceVersion: undefined, items: new Map(), pages: 0 };
}

function initialWatch<T extends KubeObject>(phase: Phase, cause: RelistCause | undefined): ActiveState<T> {
  return { kind: "initialWatch", phase, cause, buffer: new Map() };
}

function read<T extends KubeObject>(state: ActiveState<T>): Step<T> {
  return { state, emit: [], next: "read", delay: NOW, notes: [] };
}

function request<T extends KubeObject>(state: ActiveState<T>): Step<T> {
  return { state, emit: [], next: "request", delay: NOW, notes: [] };
}

/** A failure: retry `state` after the server's Retry-After (plus ≤10 % jitter) or the backoff. */
function failure<T extends KubeObject>(state: ActiveState<T>, error: unknown, what: string, retryAfterMs?: number): Step<T> {
  // Retry-After wins when the server gives one.
  const delay: Delay = retryAfterMs !== undefined ? { kind: "retry-after", ms: retryAfterMs } : { kind: "backoff" };
  return { state, emit: [], next: "request", delay, notes: [{ kind: "failure", what, error }] };
}

/** W10/L7/S6: the server's own retry delay, if it gave one. */
function retryAfterMsOf(error: KubeApiError): number | undefined {
  if (error.retryAfterSeconds !== undefined) return error.retryAfterSeconds * 1000;
  if (error.isTooLargeResourceVersion) return 1000;
  return undefined;
}

/** S5: answers that mean "this server will not do a streaming list". */
export function isStreamingRejection(error: KubeApiError): boolean {
  return error.code === 400 || error.code === 403 || error.code === 404 || error.code === 405 ||
    error.code === 422 || error.code === 501;
}

/**
 * R1/R2/S2: a complete snapshot as the difference from the store: deletes
 * (inferred) for vanished keys, adds for new keys, modifies for changed RVs,
 * delete + add when the uid changed; then `synced`.
 */
export function replace<T extends KubeObject>(
  store: StoreView<T>,
  items: Map<string, T>,
  resourceVersion: string,
  phase: Phase,
  cause: RelistCause | undefined,
): ReflectorEvent<T>[] {
  const out: ReflectorEvent<T>[] = [];
  // A relist's diff is not at any watch position: marked, so a consumer attaches no resume point to it.
  const mark = phase === "resync" ? { relist: true as const } : {};
  for (const key of store.keys()) {
    if (!items.has(key)) out.push({ type: "deleted", object: store.get(key) as T, inferred: true, ...mark });
  }
  for (const [key, obj] of items) {
    const old = store.get(key);
    if (!old) out.push({ type: "added", object: obj, ...mark });
    else if (uidChanged(old, obj)) out.push({ type: "deleted", object: old, inferred: true, ...mark }, { type: "added", object: obj, ...mark });
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) out.push({ type: "modified", object: obj, previous: old, ...mark });
  }
  out.push({ type: "synced", phase, resourceVersion, ...(cause ? { cause } : {}) });
  return out;
}

/** One live watch event as the events to emit (none for no-ops). */
export function applyLive<T extends KubeObject>(store: StoreView<T>, type: "ADDED" | "MODIFIED" | "DELETED", obj: T): ReflectorEvent<T>[] {
  const old = store.get(objectKey(obj));
  if (type === "DELETED") return old ? [{ type: "deleted", object: obj }] : []; // nothing to delete: emitting would invent an event
  if (!old) return [{ type: "added", object: obj }];
  // R2: same name, new object: the delete happened while we were not looking.
  if (uidChanged(old, obj)) return [{ type: "deleted", object: old, inferred: true }, { type: "added", object: obj }];
  if (old.metadata.resourceVersion === obj.metadata.resourceVersion) return [];
  return [{ type: "modified", object: obj, previous: old }];
}

function uidChanged(a: KubeObject, b: KubeObject): boolean {
  const x = a.metadata.uid;
  const y = b.metadata.uid;
  return x !== undefined && y !== undefined && x !== y;
}
