/**
 * The WebSocket and SSE transports of `/v1/watch`: each turns its connection into a
 * {@link StreamSink} for the one stream session (`session.ts`) and registers itself in
 * {@link OpenStreams}, so shutdown can end it and wait for it. Runtime specifics stay in the
 * adapter ({@link AppRuntime}); nothing here reads `ws.raw`.
 * @module
 */
import type { Context } from "hono";
import type { WSContext } from "hono/ws";
import * as v from "valibot";
import type { Logger } from "../log.ts";
import { unrefTimer } from "../runtime.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import type { ServerAdapter, SocketSink } from "./adapters/types.ts";
import { type Frame, frameOf, pongFrame } from "./frames.ts";
import { errorResponse } from "./errors.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { ClientMessageSchema, issuesOf } from "./schemas.ts";
import type { SessionItem, Slot, StreamRequest, StreamSessions, StreamSink } from "./session.ts";

/** WebSocket close codes appwatch uses (RFC 6455 §7.4). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001, // server shutting down
  policy: 1008, // bad client message
  tooBig: 1009, // client message over the size limit
  internal: 1011,
  tryAgainLater: 1013, // slow consumer (disconnect policy) or a frame the runtime dropped
} as const;

/** What the app uses of a runtime adapter (`loadAdapter()` gives all of it). */
export type AppRuntime = Pick<ServerAdapter, "upgradeWebSocket" | "clientAddress" | "socket" | "keepAlive">;

/** The limits the transports apply. */
export interface TransportLimits {
  maxMessageBytes: number;
  pingMs: number;
  highWaterMark: number;
}

/** What a transport needs from the app. */
export interface TransportContext {
  runtime: AppRuntime;
  sessions: StreamSessions;
  metrics: ServiceMetrics;
  log: Logger;
  limits: TransportLimits;
  clock: Clock;
  streams: OpenStreams;
}

/** A way to end one open stream (a WebSocket close code, or just the end for SSE). */
export type CloseHook = (code: number, reason: string) => void;

/**
 * Every open WebSocket and SSE stream (and, by count, the Connect streams): what shutdown ends and
 * waits for. `whenClosed` is woken by the last close, not by polling.
 */
export class OpenStreams {
  readonly #hooks = new Set<CloseHook>();
  readonly #waiters = new Set<() => void>();
  readonly #others: () => number;
  readonly #clock: Clock;

  /** `others`: streams counted elsewhere (Connect's) that must be gone too. */
  constructor(others: () => number, clock: Clock = realClock) {
    this.#others = others;
    this.#clock = clock;
  }

  add(hook: CloseHook): void {
    this.#hooks.add(hook);
  }

  /** A stream's transport is gone (`hook` undefined: one counted elsewhere); wakes the waiters once none is left. */
  closed(hook?: CloseHook): void {
    if (hook) this.#hooks.delete(hook);
    if (this.#allClosed()) for (const w of [...this.#waiters]) w();
  }

  /** Ends every registered stream. */
  closeAll(code: number, reason: string): void {
    for (const close of [...this.#hooks]) close(code, reason);
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
    return this.#hooks.size === 0 && this.#others() === 0;
  }
}


/** A WebSocket stream; `slot` is released when the session ends, or here if it never starts. */
export async function webSocketStream(t: TransportContext, c: Context, next: () => Promise<void>, request: StreamRequest, slot: Slot): Promise<Response> {
  const { runtime: rt, sessions, metrics, log, limits, clock, streams } = t;
  let started = false;
  const upgrade = rt.upgradeWebSocket((_c) => {
    const abort = new AbortController();
    let stopPing: (() => void) | undefined;
    let sink: ReturnType<typeof wsSink> | undefined;
    let closedByServer = false;
    let gone = false;
    let opened = false;
    const closeWith = (ws: WSContext, code: number, reason: string) => {
      if (closedByServer) return;
      closedByServer = true;
      metrics.closed(code);
      try {
        ws.close(code, reason);
      } catch { /* already closed */ }
      abort.abort();
    };
    let shutdownHook: ((code: number, reason: string) => void) | undefined;
    return {
      onOpen(_evt, ws) {
        started = opened = true;
        metrics.wsConnections++;
        shutdownHook = (code, reason) => closeWith(ws, code, reason);
        streams.add(shutdownHook);
        stopPing = rt.keepAlive(ws, limits.pingMs);
        sink = wsSink(rt.socket(ws), limits.highWaterMark);
        sessions.run(slot, request, sink, abort.signal).then((end) => {
          if (end.reason === "lagging") closeWith(ws, CLOSE.tryAgainLater, "slow consumer: resubscribe with a snapshot");
          else if (end.reason === "dropped") closeWith(ws, CLOSE.tryAgainLater, "send buffer overflow: reconnect with your resume token");
          else if (!abort.signal.aborted) closeWith(ws, CLOSE.goingAway, "subscription ended");
        }, (err) => {
          log.error("stream failed", { error: err instanceof Error ? err.message : String(err) });
          closeWith(ws, CLOSE.internal, "internal error");
        });
      },
      onMessage(evt, ws) {
        const data = evt.data;
        const size = typeof data === "string" ? new TextEncoder().encode(data).byteLength : data instanceof ArrayBuffer ? data.byteLength : (data as Blob).size ?? 0;
        if (size > limits.maxMessageBytes) return closeWith(ws, CLOSE.tooBig, `message of ${size} bytes is over the ${limits.maxMessageBytes}-byte limit`);
        if (typeof data !== "string") return closeWith(ws, CLOSE.policy, "binary messages are not accepted; send JSON text");
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          return closeWith(ws, CLOSE.policy, "message is not JSON");
        }
        const msg = v.safeParse(ClientMessageSchema, parsed);
        if (!msg.success) return closeWith(ws, CLOSE.policy, `unknown message: ${issuesOf(msg.issues).message}`.slice(0, 120));
        (sink ??= wsSink(rt.socket(ws), limits.highWaterMark)).send({ kind: "pong", id: msg.output.ping.id });
      },
      onClose(evt) {
        // Once only: Deno fires `close` twice when its ping times out.
        if (gone) return;
        gone = true;
        if (!closedByServer) metrics.closed((evt as CloseEvent).code ?? 1005);
        abort.abort();
        stopPing?.();
        if (shutdownHook) streams.closed(shutdownHook);
        if (opened) metrics.wsConnections--;
        slot.release(); // the session releases it too; either may come first
      },
      onError() {
        abort.abort();
      },
    };
  });
  try {
    const res = await upgrade(c, next);
    // Bun and Deno answer a failed upgrade at once; Node answers 200 here and 101 later, so its
    // slot is given back if the socket has not opened by the handshake deadline.
    if (!res || (res.status !== 101 && res.status !== 200)) slot.release();
    else if (!started) {
      const timer = clock.setTimeout(() => started || slot.release(), HANDSHAKE_DEADLINE_MS, "handshake");
      if (clock === realClock) unrefTimer(timer);
    }
    return res ?? errorResponse(c, 400, "invalid_argument", "WebSocket upgrade failed");
  } catch (err) {
    slot.release();
    log.warn("WebSocket upgrade failed", { error: err instanceof Error ? err.message : String(err) });
    return errorResponse(c, 400, "invalid_argument", "WebSocket upgrade failed");
  }
}

/** An SSE stream: the session's items as `event:`/`id:`/`data:` records; its pulls are the drain signal. */
export function sseStream(t: Omit<TransportContext, "runtime">, request: StreamRequest, slot: Slot): Response {
  const { sessions, metrics, log, limits, streams } = t;
  const abort = new AbortController();
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let ended = false;
  let pulled: (() => void) | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    abort.abort();
    streams.closed(shutdownHook);
    metrics.sseConnections--;
    slot.release();
    pulled?.();
    try {
      controller.close();
    } catch { /* cancelled */ }
  };
  const shutdownHook = (_code: number, _reason: string) => end();
  const stream = new ReadableStream<Uint8Array>({
    start(ctl) {
      controller = ctl;
      ctl.enqueue(encoder.encode(`retry: 2000\n\n`));
    },
    pull() {
      const wake = pulled;
      pulled = undefined;
      wake?.();
    },
    cancel() {
      end();
    },
  }, { highWaterMark: limits.highWaterMark, size: (chunk) => chunk.byteLength });
  const sink: StreamSink = {
    heartbeats: true,
    send(item) {
      if (ended) return "closed";
      try {
        controller.enqueue(sseBytes(frameOf(item)));
        return "ok";
      } catch {
        return "closed";
      }
    },
    full: () => !ended && (controller.desiredSize ?? 0) <= 0,
    drained: (signal) =>
      new Promise<void>((resolve) => {
        if (ended || signal.aborted || (controller.desiredSize ?? 0) > 0) return resolve();
        pulled = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      }),
  };
  metrics.sseConnections++;
  streams.add(shutdownHook);
  sessions.run(slot, request, sink, abort.signal).then(end, (err) => {
    log.error("SSE stream failed", { error: err instanceof Error ? err.message : String(err) });
    end();
  });
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    },
  });
}

/** How long a Node upgrade (answered 200 now, 101 later) may take before its slot is given back. */
const HANDSHAKE_DEADLINE_MS = 10_000;
/** What is wrong with a WebSocket handshake, in the terms the runtimes refuse it for (RFC 6455 §4.2.1). */
export function badHandshake(c: Context): { message: string; version?: true } | undefined {
  if ((c.req.header("upgrade") ?? "").toLowerCase() !== "websocket") return { message: `Upgrade must be "websocket"` };
  const key = c.req.header("sec-websocket-key") ?? "";
  if (!/^[+/0-9A-Za-z]{22}==$/.test(key)) return { message: "Sec-WebSocket-Key must be 16 bytes in base64" };
  if (c.req.header("sec-websocket-version") !== "13") return { message: "Sec-WebSocket-Version must be 13", version: true };
  return undefined;
}

/** A WebSocket (as its adapter gives it) as a {@link StreamSink}; also sends pongs. */
function wsSink(socket: SocketSink, highWaterMark: number): StreamSink & { send(item: SessionItem | { kind: "pong"; id: string | undefined }): "ok" | "closed" | "dropped" } {
  return {
    heartbeats: true,
    send: (item) => socket.send((item.kind === "pong" ? pongFrame(item.id) : frameOf(item)).json),
    full: () => socket.bufferedAmount() > highWaterMark,
    drained: (signal) => socket.drained(highWaterMark, signal),
  };
}

/** SSE bytes per frame: an event frame is shared by all its subscribers, so it is encoded once, not per stream. */
const sseEncoded = new WeakMap<Frame, Uint8Array>();
const sseEncoder = new TextEncoder();

function sseBytes(frame: Frame): Uint8Array {
  let bytes = sseEncoded.get(frame);
  if (bytes === undefined) {
    const id = frame.token !== undefined ? `id: ${frame.token}\n` : "";
    bytes = sseEncoder.encode(`event: ${frame.kind}\n${id}data: ${frame.json}\n\n`);
    sseEncoded.set(frame, bytes);
  }
  return bytes;
}
