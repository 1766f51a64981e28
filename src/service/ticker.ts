/**
 * One timer per period for the per-connection periodic work (WebSocket
 * protocol pings on Node, SSE/WebSocket heartbeat frames) instead of one
 * `setInterval` per connection.
 *
 * A {@link Ticker} spreads its callbacks over `slots` groups (each new callback
 * goes to the least-filled group) and its one timer (a timeout re-armed after every tick) runs one group every
 * `periodMs / slots` (slots of ≥ 250 ms, at most 64): every callback still runs
 * once per `periodMs`, but a tick for 5,000 connections touches only ~1/slots of
 * them (≈ 80 at the default 15 s heartbeat), so one tick doesn't hold the thread
 * for long (measured with `bench/fanout/tick.ts`, 5,000 idle subscribers, see
 * bench/results/B3.md: all 5,000 heartbeats in one tick held the thread 67–132 ms
 * across Bun, Deno and Node; at the default 15 s heartbeat, 84 per tick, the longest
 * tick was 4.4–9.3 ms). The timer exists only while the ticker has callbacks
 * (so nothing keeps running after the last connection closes) and is unref'd
 * where the runtime allows it (open connections keep the process alive anyway). Time comes from a
 * {@link Clock}, so tests drive it on a virtual one. Each owner (the stream sessions, a runtime
 * adapter) has its own tickers: nothing is shared between two services in one process.
 * @module
 */
import { unrefTimer } from "../runtime.ts";
import { type Clock, realClock, type TimerHandle } from "../watch/clock.ts";

/** Slot length the ticker aims for: periods shorter than `slots × MIN_SLOT_MS` get fewer slots. */
const MIN_SLOT_MS = 250;
/** Most slots per ticker (the default 15 s heartbeat gets 60, the default 30 s ping 64). */
const MAX_SLOTS = 64;

/** Statistics of a {@link Ticker}, for tests and benchmarks. */
export interface TickerStats {
  /** Slots the period is spread over. */
  slots: number;
  /** Callbacks registered now. */
  callbacks: number;
  /** Whether the interval is running (only while there are callbacks). */
  running: boolean;
  /** Slot ticks run so far. */
  ticks: number;
  /** Longest single slot tick (ms). */
  maxTickMs: number;
  /** Most callbacks run in a single slot tick. */
  maxTickCallbacks: number;
  /** Callbacks that threw (logged nowhere; the ticker keeps going). */
  errors: number;
}

/** Runs registered callbacks every `periodMs` from one shared interval. */
/** What a ticker runs each period: a function, or an object's `tick()` (no closure per callback). */
export type Tickable = (() => void) | { tick(): void };

export class Ticker {
  readonly periodMs: number;
  readonly slots: number;
  readonly #groups: Set<Tickable>[];
  readonly #clock: Clock;
  #timer: TimerHandle | undefined;
  #next = 0; // the slot the next tick runs
  #size = 0;
  #ticks = 0;
  #maxTickMs = 0;
  #maxTickCallbacks = 0;
  #errors = 0;

  constructor(periodMs: number, slots?: number, clock: Clock = realClock) {
    if (!(periodMs > 0)) throw new RangeError(`ticker period must be > 0 ms, got ${periodMs}`);
    this.periodMs = periodMs;
    this.#clock = clock;
    this.slots = Math.max(1, Math.min(MAX_SLOTS, slots ?? Math.floor(periodMs / MIN_SLOT_MS)));
    this.#groups = Array.from({ length: this.slots }, () => new Set<Tickable>());
  }

  /**
   * Runs `fn` once per period (the first time within one period) until the
   * returned function is called. Registering the same function twice is one
   * registration.
   */
  add(fn: Tickable): () => void {
    this.enroll(fn);
    return () => this.remove(fn);
  }

  /** {@link add} without making a function to undo it: undo with {@link remove}. */
  enroll(fn: Tickable): void {
    if (this.#groups.some((g) => g.has(fn))) return;
    let group = this.#groups[0]!;
    for (const g of this.#groups) if (g.size < group.size) group = g;
    group.add(fn);
    this.#size++;
    if (this.#timer === undefined) this.#start();
  }

  /** Statistics (see {@link TickerStats}). */
  stats(): TickerStats {
    return {
      slots: this.slots,
      callbacks: this.#size,
      running: this.#timer !== undefined,
      ticks: this.#ticks,
      maxTickMs: this.#maxTickMs,
      maxTickCallbacks: this.#maxTickCallbacks,
      errors: this.#errors,
    };
  }

  /** Stops running `fn` (nothing if it is not registered). */
  remove(fn: Tickable): void {
    for (const g of this.#groups) {
      if (g.delete(fn)) {
        this.#size--;
        break;
      }
    }
    if (this.#size === 0) this.#stop();
  }

  #start(): void {
    const timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.tick();
      if (this.#size > 0 && this.#timer === undefined) this.#start();
    }, this.periodMs / this.slots, "tick");
    // Only the runtime's own timers can be unref'd (a virtual clock's are plain numbers).
    this.#timer = this.#clock === realClock ? unrefTimer(timer) : timer;
  }

  #stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Runs the next slot's callbacks now (what the interval does every `periodMs / slots`; public for tests). */
  tick(): void {
    const group = this.#groups[this.#next]!;
    this.#next = (this.#next + 1) % this.slots;
    if (group.size === 0) return;
    const t0 = performance.now();
    let n = 0;
    // A callback may unregister itself (or others) while this runs: Set iteration copes with deletes.
    for (const fn of group) {
      n++;
      try {
        if (typeof fn === "function") fn();
        else fn.tick();
      } catch {
        this.#errors++;
      }
    }
    this.#ticks++;
    const ms = performance.now() - t0;
    if (ms > this.#maxTickMs) this.#maxTickMs = ms;
    if (n > this.#maxTickCallbacks) this.#maxTickCallbacks = n;
  }
}
