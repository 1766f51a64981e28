/**
 * The one registry of open streams ({@link OpenStreams}): what shutdown ends and waits for.
 * Admission (per-client slots, readiness) is the sessions' job (session.ts).
 * @module
 */
import { type Clock, realClock } from "../watch/clock.ts";

/** One open stream as shutdown sees it: a way to end it (a WebSocket close code, or just the end for SSE). */
export interface Closable {
  shutdown(code: number, reason: string): void;
}

/**
 * Every open stream of the service, whatever its transport (WebSocket, SSE, Connect / gRPC-Web /
 * gRPC Watch): what shutdown ends and waits for. `whenClosed` is woken by the last close, not by
 * polling. A stream is registered from the moment its transport opens to the moment its last byte
 * is handed to the runtime (a Connect Watch: its body drained).
 */
export class OpenStreams {
  readonly #hooks = new Set<Closable>();
  readonly #waiters = new Set<() => void>();
  readonly #clock: Clock;

  constructor(clock: Clock = realClock) {
    this.#clock = clock;
  }

  /** Streams open now. */
  get size(): number {
    return this.#hooks.size;
  }

  add(hook: Closable): void {
    this.#hooks.add(hook);
  }

  /** A stream's transport is gone; wakes the waiters once none is left. */
  closed(hook: Closable): void {
    this.#hooks.delete(hook);
    if (this.#allClosed()) for (const w of [...this.#waiters]) w();
  }

  /** Ends every registered stream. */
  closeAll(code: number, reason: string): void {
    for (const stream of [...this.#hooks]) stream.shutdown(code, reason);
  }

  /** Resolves once every stream is closed, or after `timeoutMs`. */
  whenClosed(timeoutMs: number): Promise<void> {
    if (this.#allClosed()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = this.#clock.setTimeout(done, timeoutMs, "close-wait");
      this.#waiters.add(done);
    });
  }

  #allClosed(): boolean {
    return this.#hooks.size === 0;
  }
}
