/**
 * One subscriber's stream, shared by the WebSocket and SSE routes: subscribe
 * (snapshot, resume or live), then move frames from the subscription to the
 * connection without ever letting the connection's buffer grow past a
 * high-water mark. While the socket is over it, nothing more is taken from the
 * subscription, so its bounded buffer fills and the slow-consumer policy
 * (coalesce / drop / disconnect) decides — the upstream watch never waits.
 * @module
 */
import type { AppK8sClient, SubscribeTarget } from "../flyte/app-client.ts";
import { LaggingError } from "../flyte/subscriptions.ts";
import { sleep } from "../watch/backoff.ts";
import type { Logger } from "../log.ts";
import { errorFrame, eventFrame, type Frame, heartbeatFrame, startFrame, syncedFrame } from "./frames.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { sharedTicker } from "./ticker.ts";

/** Where frames go: a WebSocket or an SSE response. */
export interface FrameSink {
  /**
   * Writes one frame. `dropped` means the runtime discarded it (Bun past its
   * backpressure limit): the stream must end, since the client missed data.
   */
  send(frame: Frame): "ok" | "closed" | "dropped";
  /** Bytes accepted but not yet written to the network. */
  bufferedAmount(): number;
}

/** Tuning of {@link pumpStream}. */
export interface StreamOptions {
  /** Heartbeat period (ms). */
  heartbeatMs: number;
  /** Pause taking events while the sink holds more than this many bytes. */
  highWaterMark: number;
  /** How long to wait for this replica to catch up with a resume token from a replica ahead of it. */
  catchUpMs: number;
}

/** How a stream ended. */
export type StreamEnd =
  | { reason: "closed" } // the client went away or the signal aborted
  | { reason: "lagging"; message: string } // disconnect policy
  | { reason: "dropped" }; // the runtime dropped a frame

const BACKPRESSURE_POLL_MS = 10;

/**
 * Streams `target` to `sink` until the client leaves, `signal` aborts, or the
 * subscription ends. Never throws for client behaviour; returns why it ended.
 */
export async function pumpStream(
  client: AppK8sClient,
  request: { target: SubscribeTarget; targetKind: string; snapshot: boolean; resume?: string },
  sink: FrameSink,
  options: StreamOptions,
  signal: AbortSignal,
  metrics: ServiceMetrics,
  log: Logger,
): Promise<StreamEnd> {
  if (request.resume !== undefined && !signal.aborted) {
    // A token from a replica slightly ahead of this one: wait briefly, then resume exactly.
    await client.catchUp(request.resume, options.catchUpMs, signal);
  }
  if (signal.aborted) return { reason: "closed" };
  const sub = client.subscribe(request.target, { snapshot: request.snapshot, ...(request.resume !== undefined ? { resume: request.resume } : {}) });
  metrics.subscriberOpened(request.targetKind, sub);
  const onAbort = () => sub.close();
  signal.addEventListener("abort", onAbort, { once: true });

  let end: StreamEnd = { reason: "closed" };
  const write = (frame: Frame): boolean => {
    const r = sink.send(frame);
    if (r === "ok") {
      metrics.frameSent(frame.kind);
      return true;
    }
    if (r === "dropped") {
      metrics.framesDroppedByRuntime++;
      end = { reason: "dropped" };
      log.error("the runtime dropped a frame (send buffer over its limit); closing the stream", { kind: frame.kind });
    }
    sub.close();
    return false;
  };
  // One process-wide timer for every stream's heartbeat (see ticker.ts), not an interval per stream.
  const stopHeartbeat = sharedTicker(options.heartbeatMs).add(() => {
    if (!sub.closed && sink.bufferedAmount() <= options.highWaterMark) write(heartbeatFrame(sub.resumeToken(client.token())));
  });

  try {
    if (!write(startFrame(sub.start, sub.snapshotSize))) return end;
    for await (const item of sub.items()) {
      while (sink.bufferedAmount() > options.highWaterMark && !signal.aborted && !sub.closed) {
        metrics.backpressureWaits++;
        await sleep(BACKPRESSURE_POLL_MS, signal);
      }
      if (signal.aborted) break;
      // Closed while waiting: the next take ends the loop, or throws LaggingError (disconnect policy).
      if (sub.closed) continue;
      const frame = item.synced !== undefined
        ? syncedFrame(item.token, item.synced)
        : eventFrame(item.event, item.token ?? (sub.pending === 0 ? client.token() : undefined));
      if (!write(frame)) break;
    }
  } catch (err) {
    if (err instanceof LaggingError) {
      end = { reason: "lagging", message: err.message };
      sink.send(errorFrame("lagging", err.message));
    } else {
      throw err;
    }
  } finally {
    stopHeartbeat();
    signal.removeEventListener("abort", onAbort);
    sub.close();
    metrics.subscriberClosed(request.targetKind, sub);
  }
  return end;
}
