/**
 * Cloudflare Workers (workerd): the WebSocket upgrade with a `WebSocketPair`, and each server-side
 * socket as a {@link SocketSink}. There is no listener: workerd calls the Worker's (or Durable
 * Object's) `fetch`, so this is the {@link AppRuntime} part of an adapter only.
 *
 * Why not `hono/cloudflare-workers`' `upgradeWebSocket`: it never fires `onOpen` (the service
 * starts a stream's session there) and is deprecated for v5. An accepted socket may be written to
 * at once: workerd queues frames until the 101 reaches the client.
 *
 * Backpressure: workerd's `WebSocket.send` never refuses a frame and its server socket has no
 * `bufferedAmount` (workerd 2026-07-30) nor a drain event, so a slow WebSocket client is never seen
 * as slow: frames queue inside workerd (docs/edge-cloudflare.md). `bufferedAmount` is read if it
 * appears (0 otherwise) and `drained` then re-checks every 10 ms, like Deno's. No protocol pings
 * are sent from here (`keepAlive` is a no-op): the heartbeat frames (every 15 s) keep streams alive.
 * @module
 */
import type { Context } from "hono";
import { defineWebSocketHelper, type UpgradeWebSocket, WSContext } from "hono/ws";
import type { AppRuntime } from "../transports.ts";
import type { SocketSink } from "./types.ts";

// Types only from ./types.ts: its `loadAdapter` imports `./${runtime}.ts`, which a bundler
// resolves to every adapter (Node's included).
const DRAIN_POLL_MS = 10;

/** What the adapter uses of workerd's server-side `WebSocket`. */
interface WorkerdSocket {
  readonly readyState: number;
  readonly protocol?: string;
  readonly bufferedAmount?: number;
  accept(): void;
  send(data: string | ArrayBuffer | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message" | "close" | "error", listener: (evt: Event) => void): void;
}

/** workerd's global `WebSocketPair` (not in the DOM types). */
type WebSocketPairCtor = new () => { 0: WebSocket; 1: WorkerdSocket };

/** workerd's `ResponseInit` takes the client end of the pair. */
type WorkerdResponseInit = ResponseInit & { webSocket: WebSocket };

/** Hono's `upgradeWebSocket` on workerd, with `onOpen` (fired once the server end is accepted). */
export const upgradeWebSocket: UpgradeWebSocket<unknown> = defineWebSocketHelper(async (c, events) => {
  if ((c.req.header("upgrade") ?? "").toLowerCase() !== "websocket") return;
  const Pair = (globalThis as unknown as { WebSocketPair?: WebSocketPairCtor }).WebSocketPair;
  if (!Pair) throw new Error("WebSocketPair is not available: this adapter runs on workerd only");
  const pair = new Pair();
  const client = pair[0];
  const server = pair[1];
  const ws = new WSContext<unknown>({
    send: (data) => server.send(data as string | ArrayBuffer | Uint8Array),
    close: (code, reason) => server.close(code, reason),
    raw: server,
    get readyState() {
      return server.readyState as 0 | 1 | 2 | 3;
    },
    get protocol() {
      return server.protocol ?? null;
    },
    url: null,
  });
  server.addEventListener("message", (evt) => events.onMessage?.(evt as MessageEvent, ws));
  server.addEventListener("close", (evt) => {
    // Answer the peer's close frame (workerd does it by itself only with the
    // `web_socket_auto_reply_to_close` flag; without it the client never sees the handshake end).
    const { code } = evt as CloseEvent;
    try {
      server.close(code === 1005 || code === 1006 || code === undefined ? 1000 : code, (evt as CloseEvent).reason);
    } catch { /* already closed */ }
    events.onClose?.(evt as CloseEvent, ws);
  });
  server.addEventListener("error", (evt) => events.onError?.(evt, ws));
  server.accept();
  events.onOpen?.(new Event("open"), ws);
  return new Response(null, { status: 101, webSocket: client } as WorkerdResponseInit);
});

/** `ws` (from {@link upgradeWebSocket}) as a sink. */
function socket(ws: WSContext<unknown>): SocketSink {
  const raw = ws.raw as WorkerdSocket;
  const open = () => raw.readyState === 1;
  const buffered = () => (typeof raw.bufferedAmount === "number" ? raw.bufferedAmount : 0);
  return {
    send(text) {
      if (!open()) return "closed";
      try {
        raw.send(text);
        return "ok";
      } catch {
        return "closed"; // closed between the check and the send
      }
    },
    above: (bytes) => buffered() > bytes,
    async drained(below, signal) {
      while (buffered() > below && open() && !signal.aborted) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
    },
  };
}

/** The client address Cloudflare's edge puts on every request (absent in local tools). */
function clientAddress(c: Context): string | undefined {
  return c.req.header("cf-connecting-ip") ?? undefined;
}

/** The Cloudflare runtime adapter for `createApp`. */
export function createCloudflareRuntime(): AppRuntime {
  return {
    upgradeWebSocket,
    clientAddress,
    socket,
    keepAlive: () => undefined,
  };
}
