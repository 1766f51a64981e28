/**
 * One request's connection: its abort controller and the reflector's own timers (connect, idle,
 * streaming deadline), enforced here because not every runtime's `fetch` has a connect timeout or
 * ends a pending read when aborted.
 * @module
 */
import type { Clock, TimerHandle } from "./clock.ts";

/** Thrown into a connection's AbortController when it goes quiet for too long. */
export class IdleTimeoutError extends Error {
  override readonly name = "IdleTimeoutError";
}

/**
 * One request's abort controller plus its timers: a connect deadline until
 * the response headers arrive, and an inactivity timer. The inactivity timer
 * counts only time spent waiting for the server: it is paused while the
 * consumer holds an event, so a slow consumer never looks like a dead connection.
 */
export class Connection {
  readonly #ac = new AbortController();
  readonly #parent: AbortSignal;
  readonly #onParentAbort = () => this.#ac.abort(this.#parent.reason);
  readonly #idleMs: number;
  readonly #connectMs: number;
  readonly #clock: Clock;
  readonly #onExpire: ((reason: Error) => void) | undefined;
  #timer: TimerHandle | undefined;
  #deadline: TimerHandle | undefined;
  #last: number;
  #paused = false;
  /** Which of our own timers aborted the request, if one did. */
  expired: "idle" | "connect" | "deadline" | undefined;

  constructor(parent: AbortSignal, o: { idleMs: number; connectMs: number; clock: Clock; onExpire?: (reason: Error) => void }) {
    this.#parent = parent;
    this.#idleMs = o.idleMs;
    this.#connectMs = o.connectMs;
    this.#clock = o.clock;
    this.#onExpire = o.onExpire;
    this.#last = o.clock.now();
    if (parent.aborted) this.#ac.abort(parent.reason);
    parent.addEventListener("abort", this.#onParentAbort, { once: true });
    this.#arm(o.idleMs);
  }

  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  /**
   * The request's response, or a {@link ConnectTimeoutError} after the connect
   * timeout, or the abort reason once aborted — whether or not the runtime's
   * fetch reacts to the abort. A response
   * that arrives too late has its body cancelled.
   */
  connect(request: Promise<Response>): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const finish = () => {
        settled = true;
        this.#clock.clearTimeout(timer);
        this.#ac.signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        if (settled) return;
        finish();
        reject(this.#ac.signal.reason);
      };
      const timer = this.#clock.setTimeout(() => {
        if (settled) return;
        this.#expire("connect", new ConnectTimeoutError(`connect timeout: no response headers after ${this.#connectMs} ms`));
      }, this.#connectMs, "connect");
      if (this.#ac.signal.aborted) return onAbort();
      this.#ac.signal.addEventListener("abort", onAbort, { once: true });
      request.then(
        (res) => {
          if (settled) return void res.body?.cancel().catch(() => {});
          finish();
          resolve(res);
        },
        (err: unknown) => {
          if (settled) return;
          finish();
          reject(err);
        },
      );
    });
  }

  // One timer, re-armed only when it fires early (for the rest of the budget): cheaper than re-arming per chunk.
  #arm(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => this.#check(), ms, "idle");
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#ac.signal.aborted || this.#paused) return; // resume() re-arms
    const quiet = this.#clock.now() - this.#last;
    if (quiet >= this.#idleMs) this.#expire("idle", new IdleTimeoutError(`no data for ${this.#idleMs} ms`));
    else this.#arm(this.#idleMs - quiet);
  }

  touch(): void {
    this.#last = this.#clock.now();
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#last = this.#clock.now();
    if (this.#timer === undefined && !this.#ac.signal.aborted) this.#arm(this.#idleMs);
  }

  /** Aborts the connection if it is still open after `ms` (undefined clears it). */
  deadline(ms: number | undefined): void {
    this.#clock.clearTimeout(this.#deadline);
    this.#deadline = undefined;
    if (ms !== undefined) {
      this.#deadline = this.#clock.setTimeout(
        () => this.#expire("deadline", new StreamingDeadlineError(`no end marker after ${ms} ms`)),
        ms,
        "streaming-deadline",
      );
    }
  }

  #expire(kind: "idle" | "connect" | "deadline", reason: Error): void {
    if (this.#ac.signal.aborted) return;
    this.expired = kind;
    this.#onExpire?.(reason);
    this.#ac.abort(reason);
  }

  /** Maps an error caused by one of our own timers to that timer's reason. */
  translate(err: unknown): unknown {
    return this.expired ? this.#ac.signal.reason : err;
  }

  dispose(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#clock.clearTimeout(this.#deadline);
    this.#timer = undefined;
    this.#deadline = undefined;
    this.#parent.removeEventListener("abort", this.#onParentAbort);
    if (!this.#ac.signal.aborted) this.#ac.abort();
  }
}

/** No response headers within the connect timeout. */
export class ConnectTimeoutError extends Error {
  override readonly name = "ConnectTimeoutError";
}

export class StreamingDeadlineError extends IdleTimeoutError {}
