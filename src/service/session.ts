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
import { watchEventKind, type WatchResponse } from "../flyte/model.ts";
import { LaggingError, type Receiver, type Subscription, type SubscriptionItem, type SubscriptionStart } from "../flyte/subscriptions.ts";
import type { Logger } from "../log.ts";
import type { SessionItem } from "./frames.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { Ticker, type TickerStats } from "./ticker.ts";
import type { SendResult } from "./adapters/types.ts";

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
  | { reason: "ended" } // the subscription ended (shutdown, stopWatching)
  | { reason: "failed"; message: string }; // a bug: a sink threw (logged)

/** Called once with how a stream ended. */
export type StreamDone = (end: StreamEnd) => void;

/** A running stream (see {@link StreamSessions.start}). */
export interface StreamHandle {
  /** Ends it because the client left; idempotent. */
  stop(): void;
}

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
  readonly #core: Core;
  readonly #perClient = new Map<string, number>();
  #closing: string | undefined;

  constructor(client: AppK8sClient, options: SessionOptions, metrics: ServiceMetrics, log: Logger) {
    this.#core = { client, options, metrics, log, open: new Set(), heartbeats: new Ticker(options.heartbeatMs, undefined, options.clock ?? realClock) };
  }

  /** The heartbeat ticker's statistics (for tests and benchmarks: not running once no stream is open). */
  heartbeatStats(): TickerStats {
    return this.#core.heartbeats.stats();
  }

  /** Streams open now. */
  get open(): number {
    return this.#core.open.size;
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
    if (!this.#core.client.synced) {
      return {
        status: 503,
        code: "unavailable",
        message: `the initial sync of app KServices is not done yet${this.#core.client.lastWatchError ? ` (last watch error: ${this.#core.client.lastWatchError})` : ""}; see /readyz, retry shortly`,
        reason: "not-synced",
      };
    }
    const n = this.#perClient.get(addr) ?? 0;
    if (n >= this.#core.options.maxConnectionsPerClient) {
      return {
        status: 429,
        code: "resource_exhausted",
        message: `too many open streams from ${addr} (limit ${this.#core.options.maxConnectionsPerClient})`,
        reason: "per-client-limit",
      };
    }
    this.#perClient.set(addr, n + 1);
    return new ClientSlot(addr, this.#perClient);
  }

  /** Ends every open stream and refuses new ones with `reason`. */
  close(reason: string): void {
    this.#closing = reason;
    for (const session of [...this.#core.open]) session.stop(false);
  }

  /**
   * Opens one stream: `done` is called once, with why it ended, and `slot` is released then (on
   * every path). Never throws for client behaviour. The stream has no task of its own: the
   * subscription hands each item to the sink in the hub's publishing call while the sink is below
   * its high-water mark (the fast path); a full sink stalls it, and the sink's drain signal
   * drains it (the policy path: coalesce, drop, lag).
   */
  start(slot: Slot, request: StreamRequest, sink: StreamSink, done: StreamDone): StreamHandle {
    const session = new Session(this.#core, slot, request, sink, done);
    this.#core.open.add(session);
    session.start();
    return session;
  }

  /** {@link start} as a promise; `signal` aborts when the client leaves. */
  run(slot: Slot, request: StreamRequest, sink: StreamSink, signal: AbortSignal): Promise<StreamEnd> {
    return new Promise<StreamEnd>((resolve) => {
      let handle: StreamHandle | undefined;
      const onAbort = () => handle?.stop();
      signal.addEventListener("abort", onAbort, { once: true });
      handle = this.start(slot, request, sink, (end) => {
        signal.removeEventListener("abort", onAbort);
        resolve(end);
      });
      if (signal.aborted) handle.stop();
    });
  }
}

/** What every session of one service shares. */
interface Core {
  readonly client: AppK8sClient;
  readonly options: SessionOptions;
  readonly metrics: ServiceMetrics;
  readonly log: Logger;
  /** Every open session (what shutdown ends). */
  readonly open: Set<Session>;
  /** One timer for every stream's heartbeat (see ticker.ts), not an interval per stream. */
  readonly heartbeats: Ticker;
}

/** A stream slot of one client address. */
class ClientSlot implements Slot {
  readonly addr: string;
  readonly #perClient: Map<string, number>;
  #released = false;

  constructor(addr: string, perClient: Map<string, number>) {
    this.addr = addr;
    this.#perClient = perClient;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    const left = (this.#perClient.get(this.addr) ?? 1) - 1;
    if (left <= 0) this.#perClient.delete(this.addr);
    else this.#perClient.set(this.addr, left);
  }
}

/**
 * One stream: the subscription's receiver, its heartbeat and its end, as one object — an idle
 * subscriber holds this, its subscription and its transport, and no closure, promise or task.
 */
class Session implements Receiver, StreamHandle {
  readonly #core: Core;
  readonly #slot: Slot;
  readonly #request: StreamRequest;
  readonly #sink: StreamSink;
  #done: StreamDone | undefined;
  #sub: Subscription | undefined;
  #end: StreamEnd = { reason: "ended" };
  #stopped = false;
  #clientGone = false;
  /** A catch-up or a drain being waited for. */
  #wait: AbortController | undefined;

  constructor(core: Core, slot: Slot, request: StreamRequest, sink: StreamSink, done: StreamDone) {
    this.#core = core;
    this.#slot = slot;
    this.#request = request;
    this.#sink = sink;
    this.#done = done;
  }

  start(): void {
    const resume = this.#request.resume;
    if (resume === undefined) return this.#subscribe();
    // A token from a replica slightly ahead of this one: wait briefly, then resume exactly.
    const wait = this.#wait = new AbortController();
    this.#core.client.catchUp(resume, this.#core.options.catchUpMs, wait.signal).then(() => {
      this.#wait = undefined;
      if (this.#stopped) {
        this.#clientGone = true;
        return this.#finish();
      }
      this.#subscribe();
    });
  }

  /** Ends the stream: the client left (`clientGone`), or the service is shutting down. */
  stop(clientGone = true): void {
    if (clientGone) this.#clientGone = true;
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#sub) this.#sub.close(); // → ended() → #finish()
    else this.#wait?.abort(); // catching up: its end finishes
  }

  #subscribe(): void {
    const { client, metrics, options } = this.#core;
    const request = this.#request;
    const sub = client.subscribe(request.target, { snapshot: request.snapshot, ...(request.resume !== undefined ? { resume: request.resume } : {}) });
    this.#sub = sub;
    // Taken in the same turn as the subscription: the position its snapshot or replay is consistent at.
    const position = client.token();
    metrics.subscriberOpened(request.targetKind, sub);
    if (!this.#deliver({ kind: "start", start: sub.start, snapshotSize: sub.snapshotSize, position, ...(options.sandbox ? { sandbox: true } : {}) })) {
      sub.close();
      return this.#finish();
    }
    if (this.#sink.heartbeats) this.#core.heartbeats.enroll(this);
    // Attached, the subscription's snapshot or replay goes out now, as far as the sink takes it.
    sub.attach(this);
  }

  // The subscription's receiver.

  ready(): boolean {
    return !this.#sink.full();
  }

  take(item: SubscriptionItem, pending: number): boolean {
    if (item.synced !== undefined) return this.#deliver({ kind: "synced", token: item.token, after: item.synced });
    const token = item.token ?? (pending === 0 ? this.#core.client.token() : undefined);
    return this.#deliver(token === undefined ? { kind: "event", event: item.event } : { kind: "event", event: item.event, token });
  }

  stalled(): void {
    this.#core.metrics.backpressureWaits++;
    const wait = this.#wait = new AbortController();
    this.#sink.drained(wait.signal).then(() => {
      if (this.#wait === wait) this.#wait = undefined;
      const sub = this.#sub!;
      if (sub.closed) return;
      // Woken but still full: the sink's transport is gone (a drain signal only fires below the mark).
      if (this.#sink.full()) {
        this.#end = { reason: "closed" };
        return sub.close();
      }
      sub.drain();
    });
  }

  ended(error?: Error): void {
    this.#finish(error);
  }

  /** The heartbeat (the ticker's callback). */
  tick(): void {
    const sub = this.#sub;
    if (sub === undefined || sub.closed || this.#sink.full()) return;
    if (!this.#deliver({ kind: "heartbeat", token: sub.resumeToken(this.#core.client.token()) })) sub.close();
  }

  #deliver(item: SessionItem): boolean {
    const { metrics, log } = this.#core;
    let r: SendResult;
    try {
      r = this.#sink.send(item);
    } catch (err) {
      // A bug in a transport: this stream ends, the hub and every other subscriber go on.
      const message = err instanceof Error ? err.message : String(err);
      log.error("stream failed", { error: message });
      this.#end = { reason: "failed", message };
      return false;
    }
    if (r === "ok") {
      metrics.frameSent(item.kind === "event" ? watchEventKind(item.event) : item.kind);
      return true;
    }
    if (r === "dropped") {
      metrics.framesDroppedByRuntime++;
      this.#end = { reason: "dropped" };
      log.error("the runtime dropped a frame (send buffer over its limit); closing the stream", { kind: item.kind });
    } else {
      this.#end = { reason: "closed" };
    }
    return false;
  }

  #finish(error?: Error): void {
    const done = this.#done;
    if (done === undefined) return;
    this.#done = undefined;
    const { metrics, heartbeats, open } = this.#core;
    heartbeats.remove(this);
    this.#wait?.abort();
    this.#wait = undefined;
    if (error instanceof LaggingError) {
      this.#end = { reason: "lagging", message: error.message };
      this.#sink.send({ kind: "error", code: "lagging", message: error.message });
    }
    if (this.#sub) metrics.subscriberClosed(this.#request.targetKind, this.#sub);
    open.delete(this);
    this.#slot.release();
    done(this.#clientGone ? { reason: "closed" } : this.#end);
  }
}


/** Whether a request is a stream refused by {@link StreamSessions.admit}. */
export function isRefusal(x: Slot | Refusal): x is Refusal {
  return "status" in x;
}
