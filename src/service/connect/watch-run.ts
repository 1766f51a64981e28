/**
 * One admitted Connect Watch stream: the session's sink, the resume position, and how a session's
 * end maps onto a Connect error. Both Watch bodies use it — connect-es's (the handler's generator:
 * gRPC-Web, the gRPC listener, compressed Connect) and the pre-encoded Connect body
 * (watch-body.ts) — so that mapping and the cleanup exist once.
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { WatchResponse } from "../../flyte/model.ts";
import type { Logger } from "../../log.ts";
import type { SessionItem } from "../frames.ts";
import type { StreamEnd, StreamSink } from "../session.ts";
import { Wakeup } from "../../watch/wakeup.ts";
import { errorText } from "./requests.ts";

/** Where a handed-off Watch writes its pre-encoded frames (watch-body.ts). */
export interface WatchBody {
  /** Writes an event's shared frame now. */
  write(event: WatchResponse): void;
  /** It holds its mark: the session waits for {@link pulled}. */
  full(): boolean;
  /** Resolves once it is below its mark again (or `signal`). */
  pulled(signal: AbortSignal): Promise<void>;
  /** The session ended: write the end-stream frame and close. */
  finish(): void;
}

/**
 * A Connect Watch as a {@link StreamSink}. It keeps no queue of its own: the session's
 * subscription is the queue (and applies the slow-consumer policy). Until a body is attached (and
 * for connect-es's own bodies) the sink holds at most the one item connect-es's generator has not
 * taken yet: full while it holds it, and each take is the drain signal — connect-es pulls only as
 * fast as the response body is read, so that is backpressure from the client. Once a
 * Connect-protocol body is attached ({@link ConnectSink.attach}), each event's shared frame goes
 * straight into it, and the body's drain is the drain signal.
 */
export class ConnectSink implements StreamSink {
  readonly heartbeats = false;
  /** The item the generator has not taken yet. */
  #next: SessionItem | undefined;
  /** The generator waits for an item, or the session for the item to be taken: one at a time. */
  readonly #wakeup = new Wakeup();
  #done = false;
  #body: WatchBody | undefined;
  #watch: WatchRun | undefined;
  end: StreamEnd | undefined;
  error: unknown;

  send(item: SessionItem): "ok" | "closed" {
    if (this.#done) return "closed";
    // No place in a WatchResponse: heartbeats, and error items (the end comes with finish()).
    if (item.kind === "heartbeat" || item.kind === "error") return "ok";
    if (this.#body) {
      const event = this.#watch!.take(item);
      if (event !== undefined) this.#body.write(event);
      return "ok";
    }
    // The session sends only while not full; the start item is the first.
    if (this.#next !== undefined) throw new Error("ConnectSink: an item was sent while the sink was full");
    this.#next = item;
    this.#notify();
    return "ok";
  }
  full(): boolean {
    if (this.#body) return this.#body.full();
    return this.#next !== undefined;
  }
  drained(signal: AbortSignal): Promise<void> {
    if (this.#body) return this.#body.pulled(signal);
    return new Promise((resolve) => {
      if (!this.full() || signal.aborted || this.#done) return resolve();
      void this.#wakeup.wait().then(resolve);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }
  /** From now on events go into `body`; an item not yet taken goes first. */
  attach(watch: WatchRun, body: WatchBody): void {
    this.#watch = watch;
    const next = this.#next;
    this.#next = undefined;
    if (next !== undefined) {
      const event = watch.take(next);
      if (event !== undefined) body.write(event);
    }
    this.#body = body;
    this.#notify();
    if (this.#done) body.finish();
  }
  finish(end: StreamEnd | undefined, error?: unknown): void {
    this.end = end;
    this.error = error;
    this.#done = true;
    this.#notify();
    this.#body?.finish();
  }
  #notify(): void {
    this.#wakeup.wake();
  }
  /** The items for connect-es's generator, one at a time; ends with the session or at a handoff. */
  async *items(): AsyncGenerator<SessionItem> {
    for (;;) {
      const item = this.#next;
      if (item !== undefined) {
        this.#next = undefined;
        this.#notify(); // the session's drain: the sink has room again
        yield item;
        continue;
      }
      if (this.#done || this.#body) return;
      await this.#wakeup.wait();
    }
  }
}

/** One admitted Watch stream: its sink, its resume position and how it ends. */
export class WatchRun {
  position: string | undefined;
  binary = false;
  /** Milliseconds left of the client's `connect-timeout-ms` at the handoff (connect-es's deadline). */
  timeoutMs: number | undefined;
  readonly sink: ConnectSink;
  readonly stop: AbortController;
  readonly #closed: () => Promise<void>;
  readonly #log: Logger;
  readonly #closing: () => string | undefined;
  #close: Promise<void> | undefined;

  constructor(sink: ConnectSink, stop: AbortController, log: Logger, closing: () => string | undefined, closed: () => Promise<void>) {
    this.sink = sink;
    this.stop = stop;
    this.#log = log;
    this.#closing = closing;
    this.#closed = closed;
  }

  /** Tracks the resume position through `item`; the event to send, if it carries one. */
  take(item: SessionItem): WatchResponse | undefined {
    if (item.kind === "start") this.position = item.position;
    else if (item.kind === "synced") this.position = item.token;
    else if (item.kind === "event") {
      if (item.token !== undefined) this.position = item.token;
      return item.event;
    }
    return undefined;
  }

  /** The Connect error the stream ends with once its sink is done (none when the client left). */
  endError(clientGone: boolean): ConnectError | undefined {
    const end = this.sink.end;
    if (end?.reason === "lagging") return new ConnectError(end.message, Code.ResourceExhausted);
    if (end?.reason === "dropped") return new ConnectError("send buffer overflow: reconnect with your resume token", Code.ResourceExhausted);
    if (end?.reason === "failed") return new ConnectError("internal error", Code.Internal);
    if (this.sink.error !== undefined) {
      this.#log.error("Connect Watch stream failed", { error: errorText(this.sink.error) });
      return new ConnectError("internal error", Code.Internal);
    }
    // The session ended without the client leaving: the server is shutting down.
    if (!clientGone) return new ConnectError(this.#closing() ?? "the server is shutting down", Code.Unavailable);
    return undefined;
  }

  /** Stops the session and waits for it (idempotent). */
  close(): Promise<void> {
    this.stop.abort();
    return (this.#close ??= this.#closed());
  }
}
