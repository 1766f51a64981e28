/**
 * Time for the watch engine, injectable like client-go's reflector clock:
 * every timeout, backoff and timestamp goes through a {@link Clock}, so the
 * timing rules can be tested on a {@link VirtualClock} with no real waiting.
 * @module
 */

/** An opaque timer handle. */
export type TimerHandle = unknown;

/** The three operations the engine needs. */
export interface Clock {
  /** ms since the epoch (virtual clocks: since their start). */
  now(): number;
  /**
   * Calls `fn` once after `ms`. `purpose` names the timer ("idle", "connect",
   * "backoff", …) for tests and debugging; real clocks ignore it.
   */
  setTimeout(fn: () => void, ms: number, purpose?: string): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The runtime's clock. Looks the globals up on each call, so timer tracking in tests sees them. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** A timer of a {@link VirtualClock}. */
export interface VirtualTimer {
  readonly id: number;
  /** When it fires, in the clock's time. */
  readonly due: number;
  /** The delay it was set with. */
  readonly delay: number;
  readonly purpose: string | undefined;
}

/**
 * A clock that moves only when told to (`advance`, `advanceTo`): timers fire
 * synchronously, in due order, as time passes them. `next(purpose)` waits for
 * a timer to be set, which is how a test learns that the code under test
 * has reached a wait (a backoff, an idle watch) without sleeping.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<number, VirtualTimer & { fn: () => void }>();
  readonly #waiters = new Set<{ purpose: string | undefined; resolve: (t: VirtualTimer) => void }>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number, purpose?: string): TimerHandle {
    const delay = Math.max(0, ms);
    const timer = { id: ++this.#seq, due: this.#now + delay, delay, purpose, fn };
    this.#timers.set(timer.id, timer);
    for (const w of this.#waiters) {
      if (w.purpose === undefined || w.purpose === purpose) {
        this.#waiters.delete(w);
        w.resolve(view(timer));
      }
    }
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
  }

  /** Pending timers, soonest first. */
  pending(purpose?: string): VirtualTimer[] {
    return [...this.#timers.values()]
      .filter((t) => purpose === undefined || t.purpose === purpose)
      .sort((a, b) => a.due - b.due || a.id - b.id)
      .map(view);
  }

  /** The soonest pending timer with `purpose` (any if omitted), now or as soon as one is set. */
  next(purpose?: string): Promise<VirtualTimer> {
    const now = this.pending(purpose)[0];
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => this.#waiters.add({ purpose, resolve }));
  }

  /** Moves time forward by `ms`, firing every timer that comes due on the way. */
  advance(ms: number): void {
    this.advanceTo(this.#now + ms);
  }

  /** Moves time forward to `time` (never back), firing due timers in order, each at its due time. */
  advanceTo(time: number): void {
    for (;;) {
      const t = this.pending()[0];
      if (!t || t.due > time) break;
      const timer = this.#timers.get(t.id)!;
      this.#timers.delete(t.id);
      this.#now = Math.max(this.#now, t.due);
      timer.fn();
    }
    this.#now = Math.max(this.#now, time);
  }
}

function view(t: VirtualTimer): VirtualTimer {
  return { id: t.id, due: t.due, delay: t.delay, purpose: t.purpose };
}
