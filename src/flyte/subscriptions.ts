/**
 * Per-subscriber delivery of app events with a bounded buffer and a policy
 * for slow consumers. The producer (the watch loop) only ever calls
 * {@link Subscription.push}, which never blocks and never throws: a slow or
 * broken subscriber cannot slow the upstream watch or any other subscriber.
 *
 * Policies when the buffer (`watchBufferSize`) is full:
 * - `coalesce` (default): pending events collapse per app to the net change
 *   the consumer still has to see, so memory is bounded by the number of
 *   apps and the consumer always converges to the final state;
 * - `drop`: Flyte's behaviour — the event is dropped, logged and counted;
 * - `disconnect`: the subscription ends with a {@link LaggingError}, so the
 *   caller can resubscribe with a snapshot.
 * @module
 */
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";
import { appOf, type Identifier, watchEventKind, type WatchResponse } from "./model.ts";
import { Wakeup } from "../watch/wakeup.ts";
import type { AppChange, ResumeFailure } from "./journal.ts";
import { NetChanges } from "./net-changes.ts";

/** What to do with a subscriber whose buffer is full. */
export type SlowConsumerPolicy = "coalesce" | "drop" | "disconnect";

/** The subscription fell too far behind under the `disconnect` policy. */
export class LaggingError extends Error {
  override readonly name = "LaggingError";
}


/**
 * What {@link Subscription.items} yields: an event (with the token that
 * resumes right after it, when that is known), or an in-band `synced` marker
 * (the snapshot is complete, or the cluster was relisted and the consumer has
 * every resulting change) with the token of that point.
 */
export type SubscriptionItem =
  | { readonly event: WatchResponse; readonly token?: string; readonly synced?: undefined }
  | { readonly synced: "snapshot" | "resume" | "resync"; readonly token: string; readonly event?: undefined };

/** See {@link Subscription.start}. */
export type SubscriptionStart =
  | { kind: "live" }
  | { kind: "snapshot"; resumeFailed?: ResumeFailure }
  | { kind: "resumed"; replayed: number };

/**
 * Where a subscription delivers synchronously (the service's stream session; see
 * {@link Subscription.attach}). While nothing is pending and the receiver is `ready`, `push` hands
 * the change straight to `take` — the fast path: one call, no queue, no promise. Otherwise the
 * change is queued under the slow-consumer policy and the receiver is told once that it
 * `stalled`; it calls {@link Subscription.drain} when it is ready again, which empties the queue
 * in order and puts the subscription back on the fast path.
 */
export interface Receiver {
  /** True while it can take an item now (its transport is below its high-water mark). */
  ready(): boolean;
  /** Takes one item, with `pending` items still queued behind it; false: the stream is over. */
  take(item: SubscriptionItem, pending: number): boolean;
  /** Items wait and it is not ready: call {@link Subscription.drain} once it is. Once per stall. */
  stalled(): void;
  /** The subscription ended: closed, or failed with a {@link LaggingError} (disconnect policy). */
  ended(error?: Error): void;
}

/** A queued marker (FIFO entries without an event). */
interface Marker {
  key: "";
  event?: undefined;
  synced: "snapshot" | "resume" | "resync";
  token: string;
}
type Queued = AppChange | Marker;

/** Counters of one subscription. */
export interface SubscriptionStats {
  delivered: number;
  dropped: number;
  coalesced: number;
  /** Events waiting now. */
  pending: number;
}


const everything = () => true;

/**
 * A subscriber's stream: an `AsyncIterable<WatchResponse>` with `close()`.
 * The first {@link Subscription.snapshotSize} items are the snapshot's
 * `createEvent`s (when one was asked for); everything after is live.
 */
export class Subscription implements AsyncIterable<WatchResponse> {
  /** How many leading items are the snapshot (0 without one). */
  snapshotSize = 0;
  /**
   * How the subscription started: with a snapshot (`resumeFailed` says why a
   * requested resume was not possible), by replaying `replayed` changes after
   * a resume token, or live only.
   */
  start: SubscriptionStart = { kind: "live" };
  readonly policy: SlowConsumerPolicy;
  readonly bufferSize: number;
  /** Whether an app of this identity is one this subscription asked for (the hub's filter). */
  readonly matches: (id: Identifier | undefined) => boolean;
  readonly #log: Logger;
  readonly #onClose: (s: Subscription) => void;
  // FIFO while there is room; a per-app net-change map once coalescing.
  #fifo: Queued[] = [];
  /** Snapshot items still in the FIFO (not counted against the buffer). */
  #reserved = 0;
  #net: NetChanges | undefined;
  /** Apps the consumer has been told exist (needed to compute net changes). */
  readonly #known = new Set<string>();
  /** A resync marker that arrived while coalescing: yielded once the net changes drain. */
  #markerAfterNet: Marker | undefined;
  /** Token of the last position the consumer has been brought up to. */
  #delivered: string | undefined;
  readonly #wakeup = new Wakeup();
  #receiver: Receiver | undefined;
  /** The receiver was told it stalled and has not drained since. */
  #stalled = false;
  #closed = false;
  #error: Error | undefined;
  readonly #stats = { delivered: 0, dropped: 0, coalesced: 0 };

  constructor(options: { policy: SlowConsumerPolicy; bufferSize: number; logger?: Logger; onClose?: (s: Subscription) => void; matches?: (id: Identifier | undefined) => boolean }) {
    this.matches = options.matches ?? everything;
    this.policy = options.policy;
    this.bufferSize = Math.max(1, options.bufferSize);
    this.#log = options.logger ?? silentLogger;
    this.#onClose = options.onClose ?? (() => {});
  }

  get closed(): boolean {
    return this.#closed;
  }

  // Made on first use: a stream session never asks for it, and 1,000s of idle subscribers each
  // holding an AbortController is memory for nothing.
  #ended: AbortController | undefined;
  /** Aborts when the subscription ends (closed, or failed under the disconnect policy): a consumer waiting on something else can stop. */
  get signal(): AbortSignal {
    this.#ended ??= new AbortController();
    if (this.#closed) this.#ended.abort();
    return this.#ended.signal;
  }

  stats(): SubscriptionStats {
    return { ...this.#stats, pending: this.pending };
  }

  /** Items waiting to be taken (events and markers). */
  get pending(): number {
    return this.#fifo.length + (this.#net?.size ?? 0) + (this.#markerAfterNet ? 1 : 0);
  }

  /**
   * The token that resumes right after everything this consumer has taken:
   * `current` (the producer's position now) when nothing is pending, else the
   * last position it was brought up to (undefined if none is known yet).
   */
  resumeToken(current: string): string | undefined {
    return this.pending === 0 && !this.#closed ? current : this.#delivered;
  }

  /**
   * Queues a snapshot (or, with `snapshot: false`, a resume replay) ahead of
   * everything else, followed by a marker with `token` when one is given;
   * `from` is the position the consumer already had (a resume token). These
   * items do not count against the buffer (they are bounded by the number of
   * apps or the journal), so no policy ever drops or lags on them.
   */
  preload(changes: AppChange[], options: { snapshot?: boolean; token?: string; from?: string } = {}): void {
    const snapshot = options.snapshot ?? true;
    if (snapshot) this.snapshotSize = changes.length;
    if (options.from !== undefined) this.#delivered = options.from;
    for (const c of changes) this.#fifo.push(c); // not push(...changes): 100k arguments overflow the stack
    this.#reserved = changes.length;
    if (options.token !== undefined) {
      // The consumer is consistent as of `token` once it has taken these changes.
      this.#fifo.push({ key: "", synced: snapshot ? "snapshot" : "resume", token: options.token });
      this.#reserved++;
    }
    this.#queued();
  }

  /**
   * Delivers to `receiver` from now on instead of through {@link items} (use one or the other):
   * what is queued (a snapshot, a replay) goes to it at once, as far as it is ready.
   */
  attach(receiver: Receiver): void {
    if (this.#receiver) throw new Error("a subscription has one receiver");
    this.#receiver = receiver;
    if (this.#closed) return receiver.ended(this.#error);
    this.drain();
  }

  /**
   * Hands queued items to the receiver while it is ready (after it `stalled`, once it drained);
   * back on the fast path once nothing is pending.
   */
  drain(): void {
    const r = this.#receiver;
    if (!r) return;
    this.#stalled = false;
    while (!this.#closed) {
      if (this.pending === 0) return;
      if (!r.ready()) {
        this.#stalled = true;
        return r.stalled();
      }
      const next = this.#take();
      if (next === undefined) return;
      if (!this.#handOut(next, r)) return;
    }
  }

  /** Queues an in-band marker: every change pushed before it is part of a consistent state at `token`. */
  mark(marker: "resync", token: string): void {
    if (this.#closed) return;
    const m: Marker = { key: "", synced: marker, token };
    if (this.#direct()) {
      this.#handOut(m, this.#receiver!);
      return;
    }
    if (this.#net) this.#markerAfterNet = m;
    else this.#fifo.push(m);
    this.#queued();
  }

  /** Offers one change. Never blocks, never throws. Returns false if it was dropped. */
  push(change: AppChange): boolean {
    if (this.#closed) return false;
    // The fast path: nothing ahead of it and a ready receiver — straight to the transport.
    if (this.#direct()) return this.#handOut(change, this.#receiver!);
    if (this.#net) {
      this.#merge(change);
      this.#queued();
      return true;
    }
    if (this.#fifo.length - this.#reserved < this.bufferSize) {
      this.#fifo.push(change);
      this.#queued();
      return true;
    }
    switch (this.policy) {
      case "drop": {
        this.#stats.dropped++;
        const name = appOf(change.event).metadata?.id?.name ?? change.key;
        this.#log.warn(`subscriber channel full, dropping update for app: ${name}`, { key: change.key });
        return false;
      }
      case "disconnect":
        this.#fail(new LaggingError(`subscriber fell more than ${this.bufferSize} events behind; resubscribe with a snapshot`));
        return false;
      case "coalesce": {
        // From here on, memory is bounded by the number of apps, not the number of events.
        this.#net = new NetChanges();
        this.#reserved = 0;
        for (const c of this.#fifo.splice(0)) {
          if (c.synced !== undefined) this.#markerAfterNet = c;
          else this.#merge(c);
        }
        this.#merge(change);
        this.#queued();
        return true;
      }
    }
  }

  /** Ends the subscription; a waiting consumer sees the end of the stream. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#fifo = [];
    this.#net = undefined;
    this.#markerAfterNet = undefined;
    this.#wake();
    this.#onClose(this);
    this.#ended?.abort();
    this.#receiver?.ended();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<WatchResponse, void, undefined> {
    for await (const item of this.items()) if (item.event) yield item.event;
  }

  /** Events and `synced` markers, with resume tokens (what the service streams). */
  async *items(): AsyncGenerator<SubscriptionItem, void, undefined> {
    try {
      for (;;) {
        const next = this.#take();
        if (next) {
          yield this.#account(next);
          continue;
        }
        if (this.#error) throw this.#error;
        if (this.#closed) return;
        await this.#wakeup.wait();
      }
    } finally {
      this.close();
    }
  }

  /** Whether an item can go to the receiver now, ahead of nothing. */
  #direct(): boolean {
    const r = this.#receiver;
    return r !== undefined && !this.#stalled && this.#fifo.length === 0 && this.#net === undefined && this.#markerAfterNet === undefined && r.ready();
  }

  /** Something was queued: wake the iterator, or tell a receiver that is not ready that it stalled. */
  #queued(): void {
    const r = this.#receiver;
    if (r === undefined) return this.#wake();
    if (this.#stalled) return;
    // Ready after all (queued behind a snapshot being drained elsewhere, or attach comes later): drain now.
    if (r.ready()) return this.drain();
    this.#stalled = true;
    r.stalled();
  }

  /** An item leaves the subscription: what the consumer knows, and the position it is brought up to. */
  #account(next: Queued): SubscriptionItem {
    // The queued object is the item (no copy per subscriber): a change is shared by everyone it goes to.
    if (next.synced !== undefined) {
      this.#delivered = next.token;
      return next;
    }
    this.#stats.delivered++;
    if (watchEventKind(next.event) === "deleteEvent") this.#known.delete(next.key);
    else this.#known.add(next.key);
    if (next.token !== undefined) this.#delivered = next.token;
    return next;
  }

  /** One item to the receiver; false (and closed) when the receiver's stream is over. */
  #handOut(next: Queued, r: Receiver): boolean {
    if (r.take(this.#account(next), this.pending)) return true;
    this.close();
    return false;
  }

  #take(): Queued | undefined {
    if (this.#error) return undefined;
    const head = this.#fifo.shift();
    if (head) {
      if (this.#reserved > 0) this.#reserved--;
      return head;
    }
    if (!this.#net) {
      const m = this.#markerAfterNet;
      this.#markerAfterNet = undefined;
      return m;
    }
    const change = this.#net.next(this.#known);
    if (this.#net.size === 0) this.#net = undefined; // drained: back to plain FIFO
    return change ?? this.#take();
  }

  #merge(change: AppChange): void {
    if (this.#net!.merge(change)) this.#stats.coalesced++;
  }

  #fail(error: Error): void {
    this.#error = error;
    this.#fifo = [];
    this.#net = undefined;
    this.#wake();
    this.#onClose(this);
    this.#closed = true;
    this.#ended?.abort();
    this.#receiver?.ended(error);
  }

  #wake(): void {
    this.#wakeup.wake();
  }
}
