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
import type { DirectBody, SendResult, ServerAdapter, SocketSink } from "./adapters/types.ts";
import { type Frame, frameOf, pongFrame } from "./frames.ts";
import { errorResponse } from "./errors.ts";
import type { Closable, OpenStreams } from "./open-streams.ts";
import type { ServiceMetrics } from "./metrics.ts";
import { ClientMessageSchema, issuesOf } from "./schemas.ts";
import type { SessionItem } from "./frames.ts";
import type { Slot, StreamEnd, StreamHandle, StreamRequest, StreamSessions, StreamSink } from "./session.ts";
import { type ByteBody, openByteBody } from "./stream-body.ts";

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
export type AppRuntime = Pick<ServerAdapter, "upgradeWebSocket" | "clientAddress" | "socket" | "keepAlive" | "directBody">;

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



/** A WebSocket stream; `slot` is released when the session ends, or here if it never starts. */
export async function webSocketStream(t: TransportContext, c: Context, next: () => Promise<void>, request: StreamRequest, slot: Slot): Promise<Response> {
  const { runtime: rt, log, clock } = t;
  const stream = new WsStream(t, request, slot);
  const upgrade = rt.upgradeWebSocket(() => stream);
  try {
    const res = await upgrade(c, next);
    // Bun and Deno answer a failed upgrade at once; Node answers 200 here and 101 later, so its
    // slot is given back if the socket has not opened by the handshake deadline.
    if (!res || (res.status !== 101 && res.status !== 200)) slot.release();
    else if (!stream.opened) {
      const timer = clock.setTimeout(() => stream.opened || slot.release(), HANDSHAKE_DEADLINE_MS, "handshake");
      if (clock === realClock) unrefTimer(timer);
    }
    return res ?? errorResponse(c, 400, "invalid_argument", "WebSocket upgrade failed");
  } catch (err) {
    slot.release();
    log.warn("WebSocket upgrade failed", { error: err instanceof Error ? err.message : String(err) });
    return errorResponse(c, 400, "invalid_argument", "WebSocket upgrade failed");
  }
}

/**
 * One WebSocket stream as one object: Hono's WebSocket events (the adapters call them as methods),
 * the session's sink (also for pongs) and the shutdown hook. An idle subscriber holds this, its
 * session and its socket — no closures, no AbortController, nothing of the upgrade request.
 */
class WsStream implements StreamSink, Closable {
  readonly heartbeats = true;
  readonly #t: TransportContext;
  readonly #request: StreamRequest;
  readonly #slot: Slot;
  #ws: WSContext | undefined;
  #socket: SocketSink | undefined;
  #session: StreamHandle | undefined;
  opened = false;
  #closedByServer = false;
  #gone = false;

  constructor(t: TransportContext, request: StreamRequest, slot: Slot) {
    this.#t = t;
    this.#request = request;
    this.#slot = slot;
  }

  // Hono's WebSocket events.

  onOpen(_evt: Event, ws: WSContext): void {
    const t = this.#t;
    this.opened = true;
    this.#ws = ws;
    t.metrics.wsConnections++;
    t.streams.add(this);
    t.runtime.keepAlive(ws, t.limits.pingMs);
    this.#socket = t.runtime.socket(ws);
    this.#session = t.sessions.start(this.#slot, this.#request, this, (end) => this.#ended(end));
  }

  onMessage(evt: MessageEvent, ws: WSContext): void {
    const limits = this.#t.limits;
    const data: unknown = evt.data;
    const size = typeof data === "string" ? new TextEncoder().encode(data).byteLength : data instanceof ArrayBuffer ? data.byteLength : (data as Blob).size ?? 0;
    if (size > limits.maxMessageBytes) return this.#close(ws, CLOSE.tooBig, `message of ${size} bytes is over the ${limits.maxMessageBytes}-byte limit`);
    if (typeof data !== "string") return this.#close(ws, CLOSE.policy, "binary messages are not accepted; send JSON text");
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return this.#close(ws, CLOSE.policy, "message is not JSON");
    }
    const msg = v.safeParse(ClientMessageSchema, parsed);
    if (!msg.success) return this.#close(ws, CLOSE.policy, `unknown message: ${issuesOf(msg.issues).message}`.slice(0, 120));
    (this.#socket ??= this.#t.runtime.socket(ws)).send(pongFrame(msg.output.ping.id).json);
  }

  onClose(evt: CloseEvent): void {
    // Once only: Deno fires `close` twice when its ping times out.
    if (this.#gone) return;
    this.#gone = true;
    const t = this.#t;
    if (!this.#closedByServer) t.metrics.closed(evt.code ?? 1005);
    this.#session?.stop();
    if (this.opened) {
      t.streams.closed(this);
      t.metrics.wsConnections--;
    }
    this.#slot.release(); // the session releases it too; either may come first
  }

  // The session's sink.

  send(item: SessionItem): SendResult {
    return this.#socket!.send(frameOf(item).json);
  }

  full(): boolean {
    return this.#socket!.above(this.#t.limits.highWaterMark);
  }

  drained(signal: AbortSignal): Promise<void> {
    return this.#socket!.drained(this.#t.limits.highWaterMark, signal);
  }

  /** Shutdown ({@link OpenStreams.closeAll}). */
  shutdown(code: number, reason: string): void {
    if (this.#ws) this.#close(this.#ws, code, reason);
  }

  #ended(end: StreamEnd): void {
    const ws = this.#ws!;
    if (end.reason === "lagging") this.#close(ws, CLOSE.tryAgainLater, "slow consumer: resubscribe with a snapshot");
    else if (end.reason === "dropped") this.#close(ws, CLOSE.tryAgainLater, "send buffer overflow: reconnect with your resume token");
    else if (end.reason === "failed") this.#close(ws, CLOSE.internal, "internal error");
    else if (!this.#gone) this.#close(ws, CLOSE.goingAway, "subscription ended");
  }

  #close(ws: WSContext, code: number, reason: string): void {
    if (this.#closedByServer) return;
    this.#closedByServer = true;
    this.#t.metrics.closed(code);
    try {
      ws.close(code, reason);
    } catch { /* already closed */ }
    this.#session?.stop();
  }
}

/** The SSE response's headers (whichever way its body is written). */
const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
} as const;

/**
 * An SSE stream: the session's items as `event:`/`id:`/`data:` records. It ends when the client
 * leaves or `gone` (the HTTP request's signal) aborts: on workerd a client that leaves a Durable
 * Object's stream only shows on `request.signal`. With a {@link DirectBody} from the adapter (Node)
 * the records go straight to the runtime's response, as WebSocket frames do; elsewhere they are a
 * `ReadableStream` body whose pulls are the drain signal.
 */
export function sseStream(t: Omit<TransportContext, "runtime">, request: StreamRequest, slot: Slot, gone?: AbortSignal, direct?: DirectBody): Response {
  const { sessions, metrics, limits, streams } = t;
  let session: StreamHandle | undefined;
  let ended = false;
  // Set once opened (`onClose` runs `end` at once on a direct body already closed).
  let body: ByteBody | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    gone?.removeEventListener("abort", end);
    session?.stop();
    streams.closed(shutdownHook);
    metrics.sseConnections--;
    slot.release();
    body?.end();
  };
  const shutdownHook: Closable = { shutdown: () => end() };
  const { bytes, readable } = openByteBody(direct, end, limits.highWaterMark);
  body = bytes;
  bytes.write(SSE_RETRY);
  const sink: StreamSink = {
    heartbeats: true,
    send: (item) => ended || !bytes.write(sseBytes(frameOf(item))) ? "closed" : "ok",
    full: () => !ended && bytes.above(limits.highWaterMark),
    drained: (signal) => ended ? Promise.resolve() : bytes.drained(limits.highWaterMark, signal),
  };
  metrics.sseConnections++;
  streams.add(shutdownHook);
  gone?.addEventListener("abort", end, { once: true });
  session = sessions.start(slot, request, sink, end);
  return new Response(readable, { headers: SSE_HEADERS });
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

/** SSE bytes per frame: an event frame is shared by all its subscribers, so it is encoded once, not per stream. */
const sseEncoded = new WeakMap<Frame, Uint8Array>();
const sseEncoder = new TextEncoder();
/** The first record of every SSE stream: how long a client waits before it reconnects. */
const SSE_RETRY = sseEncoder.encode("retry: 2000\n\n");

function sseBytes(frame: Frame): Uint8Array {
  let bytes = sseEncoded.get(frame);
  if (bytes === undefined) {
    const id = frame.token !== undefined ? `id: ${frame.token}\n` : "";
    bytes = sseEncoder.encode(`event: ${frame.kind}\n${id}data: ${frame.json}\n\n`);
    sseEncoded.set(frame, bytes);
  }
  return bytes;
}
