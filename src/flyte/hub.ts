/**
 * The app hub: the Apps subscribers are shown, one per identity, and everything that follows from
 * them — change events with resume tokens, the journal behind those tokens, subscriptions with
 * their index, snapshots and replays. The KService side (`kservices.ts`) decides which App an
 * identity has; the hub turns each decision into at most one event.
 * @module
 */
import type { Logger } from "../log.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { Journal } from "./journal.ts";
import { type App, appOf, type Identifier, type WatchEventKind, watchEventKind, type WatchResponse } from "./model.ts";
import type { AppChange } from "./journal.ts";
import { type SlowConsumerPolicy, Subscription } from "./subscriptions.ts";

/**
 * What a subscription receives:
 * - a bare app name (the seed's form) or `""` for everything;
 * - `{ project, domain, name, org? }`: exactly that app;
 * - `{ project, domain, org? }`: every app of a project and domain;
 * - `{ org }`: every app of an org.
 */
export type SubscribeTarget =
  | string
  | { org?: string; project: string; domain: string; name: string }
  | { org?: string; project: string; domain: string; name?: undefined }
  | { org?: string; project: string; domain?: undefined; name?: undefined }
  | { org: string; project?: undefined; domain?: undefined; name?: undefined };

/** What a watch asks for, by the parts it names (validated by the caller), and its kind for metrics. */
export function subscribeTarget(p: { org?: string; project?: string; domain?: string; name?: string }): { target: SubscribeTarget; kind: "app" | "project" | "org" | "all" } {
  const org = p.org ? { org: p.org } : {};
  const { project, domain, name } = p;
  if (project !== undefined && domain !== undefined && name !== undefined) return { target: { ...org, project, domain, name }, kind: "app" };
  if (project !== undefined) return { target: domain !== undefined ? { ...org, project, domain } : { ...org, project }, kind: "project" };
  if (p.org) return { target: { org: p.org }, kind: "org" };
  // No target: every app.
  return { target: "", kind: "all" };
}

/** The `appwatch_app_events_total` counter (its `kind` label) of each event kind. */
const EVENT_COUNTER = { createEvent: "create", updateEvent: "update", deleteEvent: "delete" } as const satisfies Record<WatchEventKind, string>;

/** Options of {@link AppHub.subscribe}. */
export interface SubscribeOptions {
  /** Start with a `createEvent` for every matching app. */
  snapshot?: boolean;
  /**
   * A resume token from an earlier subscription (any replica): start with exactly the changes
   * after it. When that is not possible the subscription starts with a snapshot instead and
   * {@link Subscription.start} says why.
   */
  resume?: string;
}

/** One App as the hub shows it, with the KService it comes from (`namespace/name`). */
export interface Shown {
  app: App;
  appKey: string;
  /** `namespace/name` of the KService (list order, and the KService name Get reports). */
  source: string;
}

/** Counters the hub keeps (part of the client's metrics). */
export interface HubMetrics {
  events: { create: number; update: number; delete: number };
  /** Changes of a KService that did not change its App (no event sent). */
  unchanged: number;
  subscribers: number;
  /** Subscriptions started by kind. */
  starts: { snapshot: number; resumed: number; live: number; resumeFailed: number };
}

/** `org/project/domain/name` (proto3 JSON omits empty parts: they count as ""). */
export function appKey(id: Identifier | undefined): string {
  return `${id?.org ?? ""}/${id?.project ?? ""}/${id?.domain ?? ""}/${id?.name ?? ""}`;
}

/** `project/domain/name`: how Flyte's Get finds an app (it ignores the org). */
function pdnKey(id: Identifier | undefined): string {
  return `${id?.project ?? ""}/${id?.domain ?? ""}/${id?.name ?? ""}`;
}

/** Where a subscription is indexed for publishing (see {@link AppHub}). */
function indexKey(target: SubscribeTarget): string {
  if (typeof target === "string" || target.project === undefined || target.domain === undefined) return "";
  return target.name !== undefined ? `a\n${target.project}\n${target.domain}\n${target.name}` : `p\n${target.project}\n${target.domain}`;
}

/** Whether an identity is one a target asks for (empty parts of an identity count as ""). */
export function matcher(target: SubscribeTarget): (id: Identifier | undefined) => boolean {
  if (typeof target === "string") return target === "" ? () => true : (id) => (id?.name ?? "") === target;
  return (id) => {
    if (!id) return false;
    if (target.org !== undefined && target.org !== "" && id.org !== target.org) return false;
    if (target.project !== undefined && (id.project ?? "") !== target.project) return false;
    if (target.domain !== undefined && (id.domain ?? "") !== target.domain) return false;
    if (target.name !== undefined && (id.name ?? "") !== target.name) return false;
    return true;
  };
}

/**
 * Deep equality of two JSON-like values as `JSON.stringify` would see them (object properties
 * whose value is `undefined` count as absent; key order does not matter).
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    const v = x[k];
    if (v === undefined) continue;
    n++;
    if (!sameJson(v, y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) n--;
  return n === 0;
}

/** Options of {@link AppHub}. */
export interface AppHubOptions {
  policy: SlowConsumerPolicy;
  bufferSize: number;
  /** How many recent app changes are kept for resuming (0: none). */
  resumeWindow: number;
  /** The cluster's name, when it has one: resume tokens carry it (see {@link Journal}). */
  cluster?: string;
  logger: Logger;
  metrics: HubMetrics;
  /** Time for catch-up deadlines. Default: the real clock. */
  clock?: Clock;
}

/** See the module documentation. */
export class AppHub {
  readonly journal: Journal;
  readonly #options: AppHubOptions;
  readonly #shown = new Map<string, Shown>(); // by appKey
  readonly #byPdn = new Map<string, Set<string>>(); // project/domain/name → appKeys
  readonly #subs = new Set<Subscription>();
  /**
   * Candidates by index key: exact-app targets under `a\n<project>\n<domain>\n<name>`, project
   * targets under `p\n<project>\n<domain>`, everything else under "" (scanned for every change). A
   * pre-filter only: the matcher still decides, so publishing costs O(matching subscribers +
   * unindexed ones), not O(all subscribers).
   */
  readonly #index = new Map<string, Set<Subscription>>();
  /** Waiters for the journal to move (see {@link catchUp}). */
  readonly #moved = new Set<() => void>();

  constructor(options: AppHubOptions) {
    this.#options = options;
    this.journal = new Journal(options.resumeWindow, options.cluster);
  }

  /** Apps shown now. */
  get size(): number {
    return this.#shown.size;
  }

  /** Every App shown now, in KService order (`namespace/name`, as the API server lists). */
  list(): Shown[] {
    return [...this.#shown.values()].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  }

  /** The App of an identity: exact with `org`, else any org's (as Flyte's Get, which ignores it). */
  get(id: Identifier): Shown | undefined {
    if (id.org) return this.#shown.get(appKey(id));
    const keys = this.#byPdn.get(pdnKey(id));
    if (!keys) return undefined;
    return [...keys].map((k) => this.#shown.get(k)!).sort((a, b) => (a.appKey < b.appKey ? -1 : 1))[0];
  }

  /**
   * Shows `app` for identity `key` (`undefined`: the identity has no app any more) and publishes
   * the change. `stream` is the journal stream of the watch event behind it (resumable); unset for
   * changes no watch position stands for (live only). `source` is the KService's `namespace/name`.
   */
  set(key: string, app: App | undefined, source: string, stream?: string): void {
    const prev = this.#shown.get(key);
    if (!app) {
      if (!prev) return;
      this.#shown.delete(key);
      this.#unindexPdn(prev);
      this.#publish({ deleteEvent: { app: prev.app } }, prev, stream);
      return;
    }
    const next: Shown = { app, appKey: key, source };
    this.#shown.set(key, next);
    if (!prev) {
      const pdn = pdnKey(app.metadata?.id);
      let keys = this.#byPdn.get(pdn);
      if (!keys) this.#byPdn.set(pdn, keys = new Set());
      keys.add(key);
      return this.#publish({ createEvent: { app } }, next, stream);
    }
    if (sameJson(prev.app, app)) {
      this.#options.metrics.unchanged++;
      return;
    }
    this.#publish({ updateEvent: { updatedApp: app } }, next, stream);
  }

  /** Ends every subscription and forgets every App (the watch stopped). */
  clear(): void {
    for (const s of [...this.#subs]) s.close();
    this.#shown.clear();
    this.#byPdn.clear();
  }

  /** A watch event at `resourceVersion` of `stream` was applied (whether or not it changed an app). */
  advance(stream: string, resourceVersion: string): void {
    this.journal.advance(stream, resourceVersion);
    this.#wakeMoved();
  }

  /** The initial sync (per stream, its list resourceVersion): tokens start here. */
  synced(positions: Record<string, string>): void {
    for (const [stream, rv] of Object.entries(positions)) this.journal.reset(stream, rv);
    this.#wakeMoved();
  }

  /**
   * `stream` was listed anew at `resourceVersion`: the diff it produced has been published (without
   * resume tokens: a relist's intermediate positions cannot be resumed), tokens from before it
   * cannot be resumed, and every subscriber is told where its state is consistent again.
   */
  relisted(stream: string, resourceVersion: string): void {
    this.journal.reset(stream, resourceVersion);
    const token = this.journal.token();
    for (const sub of this.#subs) sub.mark("resync", token);
    this.#wakeMoved();
  }

  /** The resume token of the current position. */
  token(): string {
    return this.journal.token();
  }

  /**
   * Waits (up to `timeoutMs`) until this hub has applied everything up to `token` — for a token
   * from a replica that is slightly ahead. Resolves whether or not it got there; woken by the
   * journal moving, not by polling.
   */
  async catchUp(token: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (!this.journal.canCatchUp(token)) return false; // malformed or foreign: answer at once (with a snapshot)
    if (this.journal.covers(token)) return true;
    const clock = this.#options.clock ?? realClock;
    return await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clock.clearTimeout(timer);
        this.#moved.delete(check);
        signal?.removeEventListener("abort", onAbort);
        resolve(ok);
      };
      const check = () => {
        if (this.journal.covers(token)) done(true);
      };
      const onAbort = () => done(false);
      const timer = clock.setTimeout(() => done(false), timeoutMs, "catch-up");
      if (signal?.aborted) return done(false);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#moved.add(check);
    });
  }

  /**
   * Subscribes to app events. With `snapshot: true` the subscription first yields a `createEvent`
   * for every matching app (its `snapshotSize` says how many), then live events: no gap, no
   * duplicate.
   */
  subscribe(target: SubscribeTarget, options: SubscribeOptions = {}): Subscription {
    const metrics = this.#options.metrics;
    const match = matcher(target);
    const key = indexKey(target);
    const sub = new Subscription({
      matches: match,
      policy: this.#options.policy,
      bufferSize: this.#options.bufferSize,
      logger: this.#options.logger,
      onClose: (s) => {
        this.#subs.delete(s);
        const slot = this.#index.get(key);
        if (slot?.delete(s) && slot.size === 0) this.#index.delete(key);
        metrics.subscribers = this.#subs.size;
      },
    });
    // Everything below is synchronous with event delivery: the snapshot or the replay is exactly
    // the state before the next event, so there is no gap and no duplicate.
    let snapshot = options.snapshot ?? false;
    if (options.resume !== undefined) {
      const replay = this.journal.since(options.resume, (c) => match(appOf(c.event).metadata?.id));
      if (replay.ok) {
        sub.preload(replay.changes, { snapshot: false, from: options.resume, token: this.journal.token() });
        sub.start = { kind: "resumed", replayed: replay.changes.length };
        snapshot = false;
      } else {
        sub.start = { kind: "snapshot", resumeFailed: replay.reason };
        snapshot = true;
        metrics.starts.resumeFailed++;
      }
    }
    if (snapshot) {
      const items = [...this.#shown.values()].filter((k) => match(k.app.metadata?.id)).sort((a, b) => a.appKey.localeCompare(b.appKey));
      sub.preload(items.map((k) => ({ key: k.appKey, event: { createEvent: { app: k.app } } })), { token: this.journal.token() });
      if (sub.start.kind !== "snapshot") sub.start = { kind: "snapshot" };
    }
    metrics.starts[sub.start.kind]++;
    this.#subs.add(sub);
    if (!sub.closed) {
      let slot = this.#index.get(key);
      if (!slot) this.#index.set(key, slot = new Set());
      slot.add(sub);
    }
    metrics.subscribers = this.#subs.size;
    return sub;
  }

  #publish(event: WatchResponse, shown: Shown, stream: string | undefined): void {
    this.#options.metrics.events[EVENT_COUNTER[watchEventKind(event)]]++;
    const change: AppChange = { key: shown.appKey, event };
    if (stream !== undefined) {
      change.token = this.journal.token();
      this.journal.append(stream, change);
    }
    const id = shown.app.metadata?.id;
    this.#pushTo(this.#index.get(""), id, change);
    if (id) {
      this.#pushTo(this.#index.get(`a\n${id.project ?? ""}\n${id.domain ?? ""}\n${id.name ?? ""}`), id, change);
      this.#pushTo(this.#index.get(`p\n${id.project ?? ""}\n${id.domain ?? ""}`), id, change);
    }
  }

  #pushTo(candidates: Set<Subscription> | undefined, id: Identifier | undefined, change: AppChange): void {
    if (!candidates) return;
    for (const sub of candidates) {
      if (sub.matches(id)) sub.push(change);
    }
  }

  #unindexPdn(prev: Shown): void {
    const pdn = pdnKey(prev.app.metadata?.id);
    const keys = this.#byPdn.get(pdn);
    if (keys?.delete(prev.appKey) && keys.size === 0) this.#byPdn.delete(pdn);
  }

  #wakeMoved(): void {
    for (const check of [...this.#moved]) check();
  }
}
