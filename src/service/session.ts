/**
 * The one lifecycle of every subscriber stream — WebSocket, SSE and Connect `Watch` alike:
 * admit (slot, readiness) → resume or snapshot → subscribe → pump → release. The transports only
 * provide a {@link StreamSink}; everything a client can rely on (no `synced` before the hub holds a
 * complete snapshot, exact resume, slow-consumer policy, heartbeats, the slot given back on every
 * path) is decided here, once.
 *
 * Backpressure: while the sink is full, nothing more is taken from the subscription, so its
 * bounded buffer fills and the slow-consumer policy (coalesce / drop / disconnect) decides — the
 * upstream watch never waits. The session waits on the sink's own drain signal.
 * @module
 */
import type { AppK8sClient, SubscribeTarget } from "../flyte/app-client.ts";
import type { WatchResponse } from "../flyte/model.ts";
import { LaggingError, type Receiver, type SubscriptionStart } from "../flyte/subscriptions.ts";
import type { Logger } from "../log.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { Ticker, type TickerStats } from "./ticker.ts";

/** What a stream delivers, whatever the transport. */
export type SessionItem =
  | { kind: "start"; start: SubscriptionStart; snapshotSize: number; position: string; sandbox?: boolean }
  | { kind: "event"; event: WatchResponse; token?: string }
  | { kind: "synced"; token: string; after: "snapshot" | "resume" | "resync" }
  | { kind: "heartbeat"; token?: string }
  | { kind: "error"; code: string; message: string };

/** Where a session's items go (a WebSocket, an SSE response, a Connect stream). */
export interface StreamSink {
  /**
   * Delivers one item. `dropped`: the runtime discarded it (Bun past its backpressure limit), so
   * the client missed data and the stream must end; `closed`: the client is gone.
   */
  send(item: SessionItem): "ok" | "closed" | "dropped";
  /** True while the transport holds more than it should: the session stops taking events. */
  full(): boolean;
  /** Resolves once the sink is no longer full (or `signal` aborts). */
  drained(signal: AbortSignal): Promise<void>;
  /** False for transports that have no place for heartbeats (Connect's `WatchResponse`). */
  readonly heartbeats: boolean;
}

/** What a client asks for. */
export interface StreamRequest {
  target: SubscribeTarget;
  /** Metric label: `app`, `project`, `org`, `all`. */
  targetKind: string;
  snapshot: boolean;
  resume?: string;
}

/** How a stream ended. */
export type StreamEnd =
  | { reason: "closed" } // the client went away or the signal aborted
  | { reason: "lagging"; message: string } // disconnect policy
  | { reason: "dropped" } // the runtime dropped a frame
  | { reason: "ended" }; // the subscription ended (shutdown, stopWatching)

/** A stream slot of one client address; `release` is idempotent. */
export interface Slot {
  readonly addr: string;
  release(): void;
}

/** Why a stream was not admitted: an HTTP status and an error code every transport can map. */
export interface Refusal {
  status: 429 | 503;
  code: "resource_exhausted" | "unavailable";
  message: string;
  reason: "per-client-limit" | "not-synced" | "shutting-down";
}

/** Tuning of the sessions. */
export interface SessionOptions {
  /** Open streams per client address. */
  maxConnectionsPerClient: number;
  /** Heartbeat period (ms). */
  heartbeatMs: number;
  /** How long to wait for this replica to catch up with a resume token from a replica ahead of it. */
  catchUpMs: number;
  /** Time for heartbeats (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
  /** The data is the sandbox's demo apps: every stream's start says so. */
  sandbox?: boolean;
}

/**
 * Every open stream of the service: admission (per-client slots, readiness, shutdown) and the
 * session loop. One instance per service.
 */
export class StreamSessions {
  readonly #client: AppK8sClient;
  readonly #options: SessionOptions;
  readonly #metrics: ServiceMetrics;
  readonly #log: Logger;
  readonly #perClient = new Map<string, number>();
  /** How to stop each open stream. */
  readonly #open = new Set<() => void>();
  /** One timer for every stream's heartbeat (see ticker.ts), not an interval per stream. */
  readonly #heartbeats: Ticker;
  #closing: string | undefined;

  constructor(client: AppK8sClient, options: SessionOptions, metrics: ServiceMetrics, log: Logger) {
    this.#client = client;
    this.#options = options;
    this.#metrics = metrics;
    this.#log = log;
    this.#heartbeats = new Ticker(options.heartbeatMs, undefined, options.clock ?? realClock);
  }

  /** The heartbeat ticker's statistics (for tests and benchmarks: not running once no stream is open). */
  heartbeatStats(): TickerStats {
    return this.#heartbeats.stats();
  }

  /** Streams open now. */
  get open(): number {
    return this.#open.size;
  }

  /** Open slots of one client address (for tests and metrics). */
  slotsOf(addr: string): number {
    return this.#perClient.get(addr) ?? 0;
  }

  /**
   * Admits a new stream from `addr`: a {@link Slot}, or why not. A stream is refused while the hub
   * has no complete snapshot (before the initial sync), so no client is ever told `synced` about
   * an empty or partial state.
   */
  admit(addr: string): Slot | Refusal {
    if (this.#closing !== undefined) {
      return { status: 503, code: "unavailable", message: this.#closing, reason: "shutting-down" };
    }
    if (!this.#client.synced) {
      return {
        status: 503,
        code: "unavailable",
        message: "the initial sync of app KServices is not done yet (see /readyz); retry shortly",
        reason: "not-synced",
      };
    }
    const n = this.#perClient.get(addr) ?? 0;
    if (n >= this.#options.maxConnectionsPerClient) {
      return {
        status: 429,
        code: "resource_exhausted",
        message: `too many open streams from ${addr} (limit ${this.#options.maxConnectionsPerClient})`,
        reason: "per-client-limit",
      };
    }
    this.#perClient.set(addr, n + 1);
    let released = false;
    return {
      addr,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#perClient.get(addr) ?? 1) - 1;
        if (left <= 0) this.#perClient.delete(addr);
        else this.#perClient.set(addr, left);
      },
    };
  }

  /** Ends every open stream and refuses new ones with `reason`. */
  close(reason: string): void {
    this.#closing = reason;
    for (const stop of [...this.#open]) stop();
  }

  /**
   * Runs one stream to its end and releases `slot` (on every path). Never throws for client
   * behaviour; returns why it ended. `signal` aborts when the client leaves.
   */
  async run(slot: Slot, request: StreamRequest, sink: StreamSink, signal: AbortSignal): Promise<StreamEnd> {
    // What stopping does changes as the stream goes: first it only marks it, then (catching up) it
    // aborts the wait, then (subscribed) it closes the subscription.
    let stopped = signal.aborted;
    let onStop: () => void = () => {};
    const stop = () => {
      stopped = true;
      onStop();
    };
    signal.addEventListener("abort", stop, { once: true });
    this.#open.add(stop);
    try {
      if (request.resume !== undefined && !stopped) {
        // A token from a replica slightly ahead of this one: wait briefly, then resume exactly.
        const wait = new AbortController();
        onStop = () => wait.abort();
        await this.#client.catchUp(request.resume, this.#options.catchUpMs, wait.signal);
      }
      if (stopped) return { reason: "closed" };
      return await this.#stream(request, sink, signal, (fn) => (onStop = fn));
    } finally {
      signal.removeEventListener("abort", stop);
      this.#open.delete(stop);
      slot.release();
    }
  }

  /**
   * The stream itself, with no task of its own: the subscription hands each item to the sink in
   * the hub's publishing call while the sink is below its high-water mark (the fast path); a full
   * sink stalls it, and the sink's drain signal drains it (the policy path: coalesce, drop, lag).
   */
  #stream(request: StreamRequest, sink: StreamSink, clientSignal: AbortSignal, onStop: (fn: () => void) => void): Promise<StreamEnd> {
    const client = this.#client;
    const metrics = this.#metrics;
    const log = this.#log;
    const sub = client.subscribe(request.target, { snapshot: request.snapshot, ...(request.resume !== undefined ? { resume: request.resume } : {}) });
    // Taken in the same turn as the subscription: the position its snapshot or replay is consistent at.
    const position = client.token();
    metrics.subscriberOpened(request.targetKind, sub);

    return new Promise<StreamEnd>((resolve) => {
      let end: StreamEnd = { reason: "ended" };
      let stopHeartbeat = () => {};
      let cancelWait: (() => void) | undefined;
      const finish = (error?: Error) => {
        stopHeartbeat();
        cancelWait?.();
        if (error instanceof LaggingError) {
          end = { reason: "lagging", message: error.message };
          sink.send({ kind: "error", code: "lagging", message: error.message });
        }
        metrics.subscriberClosed(request.targetKind, sub);
        resolve(clientSignal.aborted ? { reason: "closed" } : end);
      };
      const deliver = (item: SessionItem): boolean => {
        const r = sink.send(item);
        if (r === "ok") {
          metrics.frameSent(item.kind === "event" ? eventKind(item.event) : item.kind);
          return true;
        }
        if (r === "dropped") {
          metrics.framesDroppedByRuntime++;
          end = { reason: "dropped" };
          log.error("the runtime dropped a frame (send buffer over its limit); closing the stream", { kind: item.kind });
        } else {
          end = { reason: "closed" };
        }
        return false;
      };
      const receiver: Receiver = {
        ready: () => !sink.full(),
        take: (item, pending) =>
          item.synced !== undefined
            ? deliver({ kind: "synced", token: item.token, after: item.synced })
            : deliver({ kind: "event", event: item.event, ...tokenOf(item.token ?? (pending === 0 ? client.token() : undefined)) }),
        stalled: () => {
          metrics.backpressureWaits++;
          const wait = new AbortController();
          cancelWait = () => wait.abort();
          sink.drained(wait.signal).then(() => {
            cancelWait = undefined;
            if (sub.closed) return;
            // Woken but still full: the sink's transport is gone (a drain signal only fires below the mark).
            if (sink.full()) {
              end = { reason: "closed" };
              return sub.close();
            }
            sub.drain();
          });
        },
        ended: finish,
      };
      if (!deliver({ kind: "start", start: sub.start, snapshotSize: sub.snapshotSize, position, ...(this.#options.sandbox ? { sandbox: true } : {}) })) {
        sub.close();
        return finish();
      }
      if (sink.heartbeats) {
        stopHeartbeat = this.#heartbeats.add(() => {
          if (!sub.closed && !sink.full()) deliver({ kind: "heartbeat", token: sub.resumeToken(client.token()) }) || sub.close();
        });
      }
      onStop(() => sub.close());
      // Attached, the subscription's snapshot or replay goes out now, as far as the sink takes it.
      sub.attach(receiver);
    });
  }
}

function tokenOf(token: string | undefined): { token?: string } {
  return token === undefined ? {} : { token };
}

function eventKind(e: WatchResponse): "createEvent" | "updateEvent" | "deleteEvent" {
  return "createEvent" in e ? "createEvent" : "updateEvent" in e ? "updateEvent" : "deleteEvent";
}

/** Whether a request is a stream refused by {@link StreamSessions.admit}. */
export function isRefusal(x: Slot | Refusal): x is Refusal {
  return "status" in x;
}
