/**
 * One Deno `WebSocket` as the service's {@link SocketSink} (in its own module: `deno.ts` imports
 * `hono/deno`, which only loads on Deno, and this is tested on every runtime).
 * @module
 */
import { DRAIN_POLL_MS, type SocketSink } from "./types.ts";

/** What the adapter uses of a Deno `WebSocket` (a `WebSocket` is one; tests give a fake). */
export interface DenoRawSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(text: string): void;
}

/**
 * One Deno `WebSocket` as a {@link SocketSink}: one object, no closures.
 *
 * Reading `bufferedAmount` is an op call on Deno (2 % of appwatch's CPU in a B6 profile, one per
 * send). The queue only grows by what this socket sends, so the last amount read plus an upper
 * bound of every frame sent since is at least what is queued now: while that bound is within
 * the mark, the socket is surely not above it and the op is skipped.
 */
export class DenoSocket implements SocketSink {
  readonly #raw: DenoRawSocket;
  /** ≥ the bytes queued now: the last `bufferedAmount` read + the most every later frame can add. */
  #bound = 0;
  constructor(raw: DenoRawSocket) {
    this.#raw = raw;
  }
  send(text: string): "ok" | "closed" {
    if (this.#raw.readyState !== 1) return "closed";
    this.#raw.send(text);
    // A UTF-16 code unit is at most 3 UTF-8 bytes; 14 covers the largest frame header.
    this.#bound += text.length * 3 + 14;
    return "ok";
  }
  above(bytes: number): boolean {
    if (this.#bound <= bytes) return false;
    this.#bound = this.#raw.bufferedAmount;
    return this.#bound > bytes;
  }
  async drained(below: number, signal: AbortSignal): Promise<void> {
    // A poll of at most 10 ms; an abort is seen at the next one.
    while (this.#raw.bufferedAmount > below && this.#raw.readyState === 1 && !signal.aborted) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
  }
}
