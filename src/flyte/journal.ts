/**
 * Resume tokens and the journal of recent app changes behind them.
 *
 * A token is the watch position a client has seen everything up to: for each
 * watched stream (a namespace, or `*` for a cluster-wide watch) the
 * Kubernetes resourceVersion of the last KService event applied. Because the
 * positions are the API server's own resourceVersions, not process-local
 * counters, a token from one replica means the same thing on any other replica
 * watching the same cluster and namespaces. A named cluster (`--cluster`) puts its name in its
 * tokens, so a token from another cluster is told apart (`other-cluster`) instead of being read
 * as a position here; an unnamed cluster's tokens carry no name, as before names existed.
 *
 * The journal keeps the last `capacity` app changes with their positions. A
 * token can be resumed when, for every stream, the journal holds every change
 * after the token's position (its window starts at or before it); then the
 * missed changes are exactly the journal entries after it. Anything else — an
 * unknown stream, a position before the window, a relist since (which loses the
 * intermediate events) — cannot be resumed, and the caller sends a snapshot.
 * @module
 */
import * as v from "valibot";
import { base64UrlToText, textToBase64Url } from "../base64url.ts";
import { compareResourceVersions } from "../watch/resource-version.ts";
import type { WatchResponse } from "./model.ts";

/** One change of one app, as the hub sees it (key = org/project/domain/name). */
export interface AppChange {
  key: string;
  event: WatchResponse;
  /** Resume token of the watch position right after this change (see {@link Journal}). */
  token?: string;
  /** Not a marker (see `SubscriptionItem`, subscriptions.ts). */
  synced?: undefined;
}

/** A watch position: stream (namespace or `*`) → resourceVersion. */
export type Position = Readonly<Record<string, string>>;

const TokenSchema = v.strictObject({
  v: v.literal(1),
  /** The cluster's name, when it has one. */
  c: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(253))),
  p: v.record(v.pipe(v.string(), v.maxLength(253)), v.pipe(v.string(), v.regex(/^[0-9]{1,40}$/))),
});

/** Encodes a position (of the cluster named `cluster`, if named) as an opaque, URL-safe resume token. */
export function encodeToken(position: Position, cluster?: string): string {
  const p: Record<string, string> = {};
  for (const k of Object.keys(position).sort()) p[k] = position[k]!;
  return textToBase64Url(JSON.stringify(cluster ? { v: 1, c: cluster, p } : { v: 1, p }));
}

/** A decoded token: the position, and the name of the cluster it is from (none: unnamed). */
export interface DecodedToken {
  position: Position;
  cluster: string | undefined;
}

/** Decodes a resume token with its cluster; `undefined` when it is not one of ours. */
export function readToken(token: string): DecodedToken | undefined {
  if (token.length > 8192) return undefined;
  const text = base64UrlToText(token);
  if (text === undefined) return undefined;
  try {
    const parsed = v.safeParse(TokenSchema, JSON.parse(text));
    return parsed.success ? { position: parsed.output.p, cluster: parsed.output.c } : undefined;
  } catch {
    return undefined;
  }
}

/** Decodes a resume token's position; `undefined` when it is not one of ours. */
export function decodeToken(token: string): Position | undefined {
  return readToken(token)?.position;
}

/** `a` ≥ `b` for every stream of `b`; undefined when not comparable. */
export function positionCovers(a: Position, b: Position): boolean {
  for (const [stream, rv] of Object.entries(b)) {
    const mine = a[stream];
    if (mine === undefined || (compareResourceVersions(mine, rv) ?? -1) < 0) return false;
  }
  return true;
}

/** One journaled app change. */
export interface JournalEntry {
  stream: string;
  resourceVersion: string;
  change: AppChange;
}

/**
 * Why a token could not be resumed. `other-cluster`: the token names another cluster than this
 * journal's, or one of them is named and the other is not.
 */
export type ResumeFailure = "malformed" | "other-cluster" | "unknown-stream" | "too-old" | "ahead";

/** The result of {@link Journal.since}. */
export type ResumeResult =
  | { ok: true; changes: AppChange[] }
  | { ok: false; reason: ResumeFailure };

/** The cursor per stream and a bounded window of recent changes. */
export class Journal {
  readonly capacity: number;
  /** The name of the cluster the positions are of (none: unnamed); it goes into every token. */
  readonly cluster: string | undefined;
  /** Latest applied resourceVersion per stream. */
  readonly #cursor = new Map<string, string>();
  /** Per stream, the position from which the journal is complete. */
  readonly #base = new Map<string, string>();
  #entries: JournalEntry[] = [];
  #head = 0; // index of the oldest live entry in #entries
  #token: string | undefined;

  constructor(capacity = 10_000, cluster?: string) {
    this.capacity = Math.max(0, capacity);
    this.cluster = cluster || undefined;
  }

  /** Number of changes held. */
  get size(): number {
    return this.#entries.length - this.#head;
  }

  /** The current position (everything applied so far). */
  position(): Position {
    return Object.fromEntries(this.#cursor);
  }

  /** The resume token for the current position (cached until it moves). */
  token(): string {
    this.#token ??= encodeToken(this.position(), this.cluster);
    return this.#token;
  }

  /** The stream listed anew at `resourceVersion`: the journal for it restarts there. */
  reset(stream: string, resourceVersion: string): void {
    this.#base.set(stream, resourceVersion);
    this.#cursor.set(stream, resourceVersion);
    this.#token = undefined;
    const kept = this.#entries.slice(this.#head).filter((e) => e.stream !== stream);
    this.#entries = kept;
    this.#head = 0;
  }

  /** A KService event at `resourceVersion` was applied (whether or not it changed an app). */
  advance(stream: string, resourceVersion: string): void {
    const cur = this.#cursor.get(stream);
    if (cur !== undefined && (compareResourceVersions(resourceVersion, cur) ?? 1) <= 0) return;
    this.#cursor.set(stream, resourceVersion);
    this.#token = undefined;
  }

  /** Records an app change at the current position of `stream`. */
  append(stream: string, change: AppChange): void {
    if (this.capacity === 0) {
      this.#base.set(stream, this.#cursor.get(stream) ?? "");
      return;
    }
    this.#entries.push({ stream, resourceVersion: this.#cursor.get(stream) ?? "", change });
    if (this.size > this.capacity) {
      const evicted = this.#entries[this.#head]!;
      this.#head++;
      // The window of that stream now starts after the evicted change.
      this.#base.set(evicted.stream, evicted.resourceVersion);
      // Compact once the evicted prefix outgrows the window (amortized O(1)), so a small window holds little.
      if (this.#head > Math.min(4096, this.capacity) && this.#head * 2 > this.#entries.length) {
        this.#entries = this.#entries.slice(this.#head);
        this.#head = 0;
      }
    }
  }

  /**
   * The changes after `token` that `match` accepts, or why they cannot be
   * known. A token ahead of this journal (another replica that is further
   * along) is reported as `ahead`; see {@link Journal.covers}.
   */
  since(token: string, match: (change: AppChange) => boolean): ResumeResult {
    const decoded = readToken(token);
    if (!decoded) return { ok: false, reason: "malformed" };
    // Before the streams: another cluster's resourceVersions are not positions here at all.
    if (decoded.cluster !== this.cluster) return { ok: false, reason: "other-cluster" };
    const from = decoded.position;
    const streams = [...this.#cursor.keys()];
    if (streams.length !== Object.keys(from).length || streams.some((s) => from[s] === undefined)) {
      return { ok: false, reason: "unknown-stream" };
    }
    for (const s of streams) {
      const base = this.#base.get(s);
      if (base === undefined) return { ok: false, reason: "too-old" };
      const vsBase = compareResourceVersions(from[s]!, base);
      if (vsBase === undefined || vsBase < 0) return { ok: false, reason: "too-old" };
      if ((compareResourceVersions(from[s]!, this.#cursor.get(s)!) ?? 1) > 0) return { ok: false, reason: "ahead" };
    }
    const changes: AppChange[] = [];
    for (let i = this.#head; i < this.#entries.length; i++) {
      const e = this.#entries[i]!;
      if ((compareResourceVersions(e.resourceVersion, from[e.stream]!) ?? 1) > 0 && match(e.change)) changes.push(e.change);
    }
    return { ok: true, changes };
  }

  /** True when this journal has applied everything up to `token`'s position. */
  covers(token: string): boolean {
    const from = readToken(token);
    return from !== undefined && from.cluster === this.cluster && positionCovers(this.position(), from.position);
  }

  /** False when waiting can never make this journal cover `token` (not a token, or other streams). */
  canCatchUp(token: string): boolean {
    const decoded = readToken(token);
    if (!decoded || decoded.cluster !== this.cluster) return false;
    const from = decoded.position;
    const streams = [...this.#cursor.keys()];
    return streams.length === 0 || (streams.length === Object.keys(from).length && streams.every((s) => from[s] !== undefined));
  }
}
