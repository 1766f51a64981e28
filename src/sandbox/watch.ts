/**
 * WATCH, modelled on the apiserver's watch cache (cacher): synthetic ADDEDs for RV ""/"0",
 * replay from history for RV=N, streaming lists (sendInitialEvents), bookmarks, selector
 * transitions as ADDED/DELETED, and in-stream ERROR events for 410 and "too large".
 * Rule IDs (W*, B*, S*) are the watch protocol's (docs/watch-protocol.md, "Rules → tests").
 * @module
 */
import type { Logger } from "../log.ts";
import { expired, type StatusBody, tooLargeResourceVersion } from "./errors.ts";
import { parseResourceVersion, type ListQuery } from "./query.ts";
import { API_VERSION, RESOURCES } from "./resources.ts";
import type { FieldSelector, LabelSelector } from "./selector.ts";
import type { ObjectStore, StoreEvent } from "./store.ts";
import { type Bytes, type ChunkSource, sourceOf, utf8 } from "./stream.ts";
import type { TimerSet } from "./timers.ts";
import type { KubeObject, SandboxResource } from "./types.ts";

/** Annotation of the bookmark that ends a streaming list's initial burst. */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Everything a watch session needs to know up front. */
export interface WatchPlan {
  resource: SandboxResource;
  /** Only objects in this namespace (undefined = all). */
  namespace: string | undefined;
  label: LabelSelector;
  field: FieldSelector;
  /** Synthetic ADDED objects, in the (deliberately non-RV) order they are sent. */
  initial: KubeObject[];
  /** RV of the initial-events-end bookmark sent after `initial`, if any. */
  endBookmarkRV: number | undefined;
  /** History events to send before live ones. */
  replay: StoreEvent[];
  /** The RV the client is known to be at (bookmarks are only sent when newer). */
  startRV: number;
  allowBookmarks: boolean;
  timeoutMs: number;
}

/** A BOOKMARK: an object of the watched kind carrying only metadata.resourceVersion (B1). */
function bookmarkLine(resource: SandboxResource, rv: number, initialEventsEnd: boolean): string {
  const metadata = initialEventsEnd
    ? { annotations: { [INITIAL_EVENTS_END]: "true" }, resourceVersion: String(rv) }
    : { resourceVersion: String(rv) };
  const object = { kind: RESOURCES[resource].kind, apiVersion: API_VERSION, metadata };
  return `${JSON.stringify({ type: "BOOKMARK", object })}\n`;
}

/** A watch that sends one ERROR event and ends (how the cacher reports errors after headers). */
export function errorSource(status: StatusBody): ChunkSource {
  return sourceOf([utf8(`${JSON.stringify({ type: "ERROR", object: status })}\n`)]);
}

/** Tuning shared by all sessions. */
export interface WatchHubOptions {
  /** A watcher more than this many events behind is ended without an ERROR (like the cacher). */
  historyLimit: number;
  bookmarkIntervalMs: number;
  logger: Logger;
}

/** Routes committed writes to open watch sessions. */
export class WatchHub {
  readonly store: ObjectStore;
  readonly timers: TimerSet;
  readonly options: WatchHubOptions;
  readonly #sessions: Record<SandboxResource, Set<WatchSession>> = { services: new Set(), revisions: new Set() };
  readonly #unsubscribe: () => void;
  /** Object JSON is the same for every watcher, so each stored object is serialised once. */
  readonly #json = new WeakMap<object, string>();
  #disposed = false;

  constructor(store: ObjectStore, timers: TimerSet, options: WatchHubOptions) {
    this.store = store;
    this.timers = timers;
    this.options = options;
    this.#unsubscribe = store.subscribe((ev) => {
      for (const s of this.#sessions[ev.resource]) s.push(ev);
    });
  }

  /** Opens a session; it starts receiving live events immediately. */
  open(plan: WatchPlan): WatchSession {
    const s = new WatchSession(this, plan);
    this.#sessions[plan.resource].add(s);
    // A request that was still waiting when the sandbox was disposed gets an empty stream.
    if (this.#disposed) s.end();
    return s;
  }

  /** @internal One watch event's line, the object's JSON cached for every session. */
  eventLine(type: string, obj: KubeObject): string {
    let json = this.#json.get(obj);
    if (json === undefined) {
      json = JSON.stringify(obj);
      this.#json.set(obj, json);
    }
    return `{"type":"${type}","object":${json}}\n`;
  }

  /** @internal */
  remove(s: WatchSession): void {
    this.#sessions[s.resource].delete(s);
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.services.size + this.#sessions.revisions.size;
  }

  /** Ends every session cleanly. */
  endAll(): void {
    for (const r of Object.values(this.#sessions)) for (const s of [...r]) s.end();
  }

  /** Ends every session and stops listening to the store. */
  dispose(): void {
    this.#disposed = true;
    this.#unsubscribe();
    for (const r of Object.values(this.#sessions)) for (const s of [...r]) s.cancel();
  }
}

/** One watch stream: initial burst, replay, then live events and bookmarks; one line per chunk. */
export class WatchSession implements ChunkSource {
  readonly resource: SandboxResource;
  readonly #hub: WatchHub;
  readonly #plan: WatchPlan;
  #initialIndex = 0;
  #endBookmarkRV: number | undefined;
  /** Pending events; a head index avoids O(n) shifts. */
  #queue: (StoreEvent | undefined)[];
  #head = 0;
  #lastSentRV: number;
  #bookmarkDue = false;
  #ending = false;
  #done = false;
  #wake: (() => void) | undefined;
  readonly #clear: (() => void)[] = [];
  #clearPeriodic: () => void = () => {};

  constructor(hub: WatchHub, plan: WatchPlan) {
    this.#hub = hub;
    this.#plan = plan;
    this.resource = plan.resource;
    this.#endBookmarkRV = plan.endBookmarkRV;
    this.#queue = [...plan.replay];
    this.#lastSentRV = plan.startRV;
    const timers = hub.timers;
    // timeoutSeconds ends the stream cleanly, with no ERROR (§1.7).
    this.#clear.push(timers.set(() => this.end(), plan.timeoutMs, "watch-timeout"));
    // bookmarkIntervalMs 0 turns periodic and pre-timeout bookmarks off (the server "ignores"
    // allowWatchBookmarks, B2); the initial-events-end marker is protocol and is still sent.
    const interval = hub.options.bookmarkIntervalMs;
    if (plan.allowBookmarks && interval > 0) {
      const arm = () => {
        this.#clearPeriodic = timers.set(() => {
          this.#requestBookmark();
          arm();
        }, interval, "bookmark");
      };
      arm();
      // cache_watcher.go sends one ~2 s before the deadline; shorter watches get it half-way.
      const before = Math.min(2000, plan.timeoutMs / 2);
      this.#clear.push(timers.set(() => this.#requestBookmark(), plan.timeoutMs - before, "pre-timeout-bookmark"));
    }
  }

  /** Live event from the store. */
  push(ev: StoreEvent): void {
    if (this.#done || this.#ending) return;
    this.#queue.push(ev);
    if (this.#queue.length - this.#head > this.#hub.options.historyLimit) {
      // The cacher drops a watcher that cannot keep up, without an ERROR event (§1.3 item 4).
      this.#hub.options.logger.warn("sandbox: watcher fell too far behind; ending its stream", {
        resource: this.resource,
        pending: this.#queue.length - this.#head,
      });
      this.#queue = [];
      this.#head = 0;
      this.#ending = true;
    }
    this.#wake?.();
  }

  /** Ends the stream cleanly at the next read. */
  end(): void {
    this.#ending = true;
    this.#wake?.();
  }

  cancel(): void {
    this.#finish();
    this.#wake?.();
  }

  tryNext(): Bytes | null | undefined {
    if (this.#done) return null;
    if (this.#ending) {
      this.#finish();
      return null;
    }
    const line = this.#nextLine();
    return line === undefined ? undefined : utf8(line);
  }

  async next(): Promise<Bytes | null> {
    for (;;) {
      if (this.#done) return null;
      if (this.#ending) {
        this.#finish();
        return null;
      }
      const line = this.#nextLine();
      if (line !== undefined) return utf8(line);
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  #requestBookmark(): void {
    this.#bookmarkDue = true;
    this.#wake?.();
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    for (const c of this.#clear) c();
    this.#clearPeriodic();
    this.#queue = [];
    this.#head = 0;
    this.#hub.remove(this);
  }

  #nextLine(): string | undefined {
    const plan = this.#plan;
    if (this.#initialIndex < plan.initial.length) {
      // Synthetic ADDEDs do not move the bookmark baseline: their RVs are unordered (#49745).
      return this.#hub.eventLine("ADDED", plan.initial[this.#initialIndex++]!);
    }
    if (this.#endBookmarkRV !== undefined) {
      const rv = this.#endBookmarkRV;
      this.#endBookmarkRV = undefined;
      this.#lastSentRV = Math.max(this.#lastSentRV, rv);
      return bookmarkLine(this.resource, rv, true);
    }
    while (this.#head < this.#queue.length) {
      const ev = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      const line = this.#convert(ev);
      if (line !== undefined) {
        this.#lastSentRV = ev.rv;
        return line;
      }
    }
    if (this.#bookmarkDue) {
      this.#bookmarkDue = false;
      // Only when newer than what this watcher was already sent (cacheWatcher.process).
      const rv = this.#hub.store.rv;
      if (rv > this.#lastSentRV) {
        this.#lastSentRV = rv;
        return bookmarkLine(this.resource, rv, false);
      }
    }
    return undefined;
  }

  #matches(obj: KubeObject): boolean {
    return this.#plan.label.matches(obj.metadata.labels) && this.#plan.field.matches(obj);
  }

  /** cache_watcher.go convertToWatchEvent: selector transitions become ADDED / DELETED. */
  #convert(ev: StoreEvent): string | undefined {
    const ns = this.#plan.namespace;
    if (ns !== undefined && ev.object.metadata.namespace !== ns) return undefined;
    const cur = ev.type !== "DELETED" && this.#matches(ev.object);
    const old = ev.prev !== undefined && this.#matches(ev.prev);
    if (cur && old) return this.#hub.eventLine("MODIFIED", ev.object);
    if (cur) return this.#hub.eventLine("ADDED", ev.object);
    if (!old) return undefined;
    if (ev.type === "DELETED") return this.#hub.eventLine("DELETED", ev.object);
    // Stopped matching: DELETED with the previous state stamped with this event's RV.
    const prev = ev.prev!;
    return this.#hub.eventLine("DELETED", { ...prev, metadata: { ...prev.metadata, resourceVersion: String(ev.rv) } });
  }
}

/** What starting a watch needs from the sandbox. */
export interface WatchContext {
  readonly store: ObjectStore;
  readonly hub: WatchHub;
  readonly watchList: boolean;
  /** Waits (up to tooLargeWaitMs) until the global RV reaches `rv`; false on timeout. */
  waitForRV(rv: number): Promise<boolean>;
  /** A random default timeout, like the apiserver's [minRequestTimeout, 2×minRequestTimeout). */
  defaultTimeoutMs(): number;
}

function snapshot(ctx: WatchContext, resource: SandboxResource, namespace: string | undefined, q: ListQuery): KubeObject[] {
  const out: KubeObject[] = [];
  for (const obj of ctx.store.objects(resource).values()) {
    if (namespace !== undefined && obj.metadata.namespace !== namespace) continue;
    if (q.labelSelector.matches(obj.metadata.labels) && q.fieldSelector.matches(obj)) out.push(obj);
  }
  // Deliberately NOT in RV order (kubernetes#49745): newest first, so a client that resumes
  // from the last synthetic ADDED would replay history it already has.
  return out.sort((a, b) => Number(b.metadata.resourceVersion) - Number(a.metadata.resourceVersion));
}

/**
 * Starts a watch after validation. Errors past this point are in-stream ERROR events, as
 * the cacher does once the request has been admitted (§1.3 item 1); a malformed RV is a 400.
 */
export async function startWatch(
  ctx: WatchContext,
  resource: SandboxResource,
  namespace: string | undefined,
  q: ListQuery,
): Promise<ChunkSource> {
  const rvText = q.resourceVersion;
  const rv = rvText === "" || rvText === "0" ? undefined : parseResourceVersion(rvText);
  if (rv !== undefined && rv > ctx.store.rv && !(await ctx.waitForRV(rv))) {
    return errorSource(tooLargeResourceVersion(rv, ctx.store.rv).status);
  }
  const base = {
    resource,
    namespace,
    label: q.labelSelector,
    field: q.fieldSelector,
    allowBookmarks: q.allowWatchBookmarks,
    timeoutMs: q.timeoutSeconds !== undefined ? q.timeoutSeconds * 1000 : ctx.defaultTimeoutMs(),
  };
  const store = ctx.store;
  // Streaming list: explicit, or a plain ""/"0" watch that a gate-on server defaults to one (§1.2).
  const streaming = q.sendInitialEvents === true ||
    (q.sendInitialEvents === undefined && rv === undefined);
  if (streaming) {
    const initial = snapshot(ctx, resource, namespace, q);
    const syncRV = store.rv;
    const endMarker = q.allowWatchBookmarks && (q.sendInitialEvents === true || ctx.watchList);
    return ctx.hub.open({ ...base, initial, endBookmarkRV: endMarker ? syncRV : undefined, replay: [], startRV: syncRV });
  }
  if (rv === undefined) {
    // sendInitialEvents=false with RV ""/"0": start at the most recent RV, no initial state.
    return ctx.hub.open({ ...base, initial: [], endBookmarkRV: undefined, replay: [], startRV: store.rv });
  }
  const compacted = store.compactedRV(resource);
  if (rv < compacted) {
    // watch_cache.go: "too old resource version: %d (%d)" with the oldest replayable RV.
    return errorSource(expired(`too old resource version: ${rv} (${compacted})`).status);
  }
  return ctx.hub.open({ ...base, initial: [], endBookmarkRV: undefined, replay: store.eventsSince(resource, rv), startRV: rv });
}
