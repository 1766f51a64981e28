/**
 * Public types of the sandbox API server.
 * @module
 */
import type { Logger } from "../log.ts";
import type { Clock } from "../watch/clock.ts";

/** The resources the sandbox serves, all in `serving.knative.dev/v1`. */
export type SandboxResource = "services" | "revisions";

/** A Kubernetes object as JSON (the watch engine's type; the sandbox manages its metadata). */
export type { KubeObject } from "../watch/types.ts";

/** Options of a {@link Sandbox}. */
export interface SandboxOptions {
  /** When set, every request needs `Authorization: Bearer <token>`, else 401. */
  token?: string;
  /** Watch-cache window: past events kept per resource (default 1000). Older RVs get 410. */
  historyLimit?: number;
  /** Periodic BOOKMARK cadence for `allowWatchBookmarks=true` watches (default 60000; 0 = never). */
  bookmarkIntervalMs?: number;
  /** The WatchList feature gate (default true). When false, `sendInitialEvents` on a watch gets 422. */
  watchList?: boolean;
  /**
   * The first resourceVersion (default 1). Two sandboxes with the same start and the same writes
   * hand out the same RVs; a time-based start keeps a restarted demo sandbox from looking like
   * the same cluster to resume tokens.
   */
  initialResourceVersion?: number;
  /** Continue-token lifetime (default 300000). */
  continueTtlMs?: number;
  /** How long a request for a future RV waits before answering 504 (default 3000). */
  tooLargeWaitMs?: number;
  /**
   * The clock every sandbox timer and timestamp reads (default the real one): watch timeouts,
   * bookmarks, continue-token expiry, the future-RV wait, restart warm-up, drip faults, request
   * times. Tests pass a `VirtualClock` to run these rules with no real waiting. The pause before
   * an injected `cut` is always real time (it lets written bytes reach the client).
   */
  clock?: Clock;
  logger?: Logger;
  /**
   * Start every streamed response body with one `"\n"` (JSON whitespace) so the HTTP header
   * block reaches the client at once. Bun's server withholds the headers until the first body
   * byte (oven-sh/bun PR #33660), so without it `await fetch()` of a quiet watch never resolves.
   * {@link startSandbox} turns it on when running on Bun. Default false.
   */
  leadingNewline?: boolean;
}

/** One HTTP request as the sandbox saw it (recorded before authentication). */
export interface RequestRecord {
  method: string;
  path: string;
  /** Query parameters; for a repeated key the last value. */
  query: Record<string, string>;
  /** Arrival time, ms of the sandbox's clock (since the epoch on the real clock). */
  time: number;
  /** HTTP status of the answer, once known (200 for a watch as soon as it starts streaming). */
  status?: number;
}

/** Request kinds a fault rule can match. */
export type FaultVerb = "list" | "watch" | "get" | "create" | "update" | "patch" | "delete";

/** What a matched request gets instead of (or on top of) its normal answer. */
export type FaultAction =
  | {
    type: "status";
    code: number;
    reason?: string;
    message?: string;
    retryAfterSeconds?: number;
    /** Watch only: HTTP 200, one `ERROR` event carrying the Status, then a clean close. */
    inStream?: boolean;
    causes?: { reason?: string; message?: string; field?: string }[];
  }
  | { type: "cut"; afterEvents?: number; midLine?: boolean }
  | { type: "stall"; afterEvents?: number }
  | { type: "close"; afterEvents?: number }
  | { type: "garbage"; afterEvents?: number; line?: string }
  | { type: "drip"; chunkBytes: number; delayMs: number };

/** A fault to inject into matching requests. */
export interface FaultRule {
  /** Which requests match (default: any resource request). */
  verb?: FaultVerb;
  resource?: SandboxResource;
  /** How many matching requests get the fault (default 1); `Infinity` allowed. */
  times?: number;
  action: FaultAction;
}

/** A rule once added. */
export interface FaultHandle {
  /** Removes the rule (no effect if already used up). */
  remove(): void;
  /** How many requests it has been applied to. */
  readonly used: number;
}

/** Adds and clears fault rules; rules apply in the order added. */
export interface FaultInjector {
  add(rule: FaultRule): FaultHandle;
  clear(): void;
  /** Rules not yet used up or removed. */
  readonly pending: number;
}
