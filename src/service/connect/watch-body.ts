/**
 * The response bodies of Connect streams written by mount.ts: the pre-encoded Watch body (on
 * Node the adapter's direct body), and connect-es's bodies wrapped to tell when they were drained.
 * @module
 */
import type { Clock } from "../../watch/clock.ts";
import type { DirectBody } from "../adapters/types.ts";
import { openByteBody, type StreamBody } from "../stream-body.ts";
import { endStreamFrame, watchFrame } from "./frames.ts";
import { RESUME_HEADER } from "./names.ts";
import type { WatchBody, WatchRun } from "./watch-run.ts";

/**
 * `body`, calling `done` once the server has taken its last chunk (or the client went away):
 * shutdown waits for open streams, and a Watch stream's end-stream frame is its last chunk.
 */
export function untilDrained(body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  const finish = () => {
    if (!finished) {
      finished = true;
      done();
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done: end } = await reader.read();
        if (end) {
          finish();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (err) {
        finish();
        controller.error(err);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/** What a handed-off Watch body needs besides its {@link WatchRun}. */
export interface WatchBodyIo {
  /** The HTTP request's signal: the client left. */
  requestSignal: AbortSignal;
  /** Called once the end-stream frame is written or the client went away. */
  done: () => void;
  /** Bytes the body holds for a client that is not reading (`--stream-buffer-bytes`). */
  highWaterBytes: number;
  /** Time for the `connect-timeout-ms` deadline. */
  clock: Clock;
}

/**
 * The response body of a handed-off Connect Watch ({@link StreamState.handoff}): each event's
 * pre-encoded frame (shared by every subscriber, frames.ts), written by the session as the
 * event is published, then the end-stream frame with the resume position as trailer — what
 * connect-es would write, without its per-stream serialization. Written to the adapter's
 * `direct` body where it gives one (Node: straight to the `ServerResponse`, as SSE is; the answer
 * is then a bodiless `Response` and this returns null), else to a {@link StreamBody} (returned).
 * The body holds up to `highWaterBytes` (`--stream-buffer-bytes`, the mark WebSocket and SSE
 * use): a client that stops reading fills it and the session's slow-consumer policy applies, as
 * on connect-es's body. `done` is called once the end-stream frame is written or the client went away.
 */
export function connectWatchBody(watch: WatchRun, io: WatchBodyIo, direct?: DirectBody): ReadableStream<Uint8Array> | null {
  const { requestSignal, done, highWaterBytes, clock } = io;
  let gone = false;
  const leave = () => {
    gone = true;
    watch.stop.abort();
  };
  requestSignal.addEventListener("abort", leave, { once: true });
  // connect-es's deadline (`connect-timeout-ms`) ends the stream as the client leaving does.
  const timer = watch.timeoutMs !== undefined ? clock.setTimeout(leave, Math.max(0, watch.timeoutMs), "connect-deadline") : undefined;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    requestSignal.removeEventListener("abort", leave);
    done();
  };
  const cancelled = () => {
    leave();
    void watch.close().then(finish);
  };
  const { bytes, readable } = openByteBody(direct, cancelled, highWaterBytes);
  const body: WatchBody = {
    write(event) {
      if (!finished) bytes.write(watchFrame(event, watch.binary));
    },
    full: () => !finished && bytes.above(highWaterBytes),
    pulled: (signal) => finished ? Promise.resolve() : bytes.drained(highWaterBytes, signal),
    finish() {
      if (finished) return;
      const error = watch.endError(gone);
      void watch.close().then(() => {
        if (finished) return;
        const trailer = new Headers();
        if (watch.position !== undefined) trailer.set(RESUME_HEADER, watch.position);
        bytes.write(endStreamFrame(trailer, error));
        bytes.end();
        finish();
      });
    },
  };
  watch.sink.attach(watch, body);
  return readable;
}
