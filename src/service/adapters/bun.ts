/**
 * Bun: `Bun.serve` with `hono/bun`'s WebSocket handler. Bun gets the fetch handler itself
 * (hono/bun reads the server from the fetch's 2nd argument). Bun pings and closes idle peers
 * (`sendPings`, `idleTimeout`); streaming HTTP responses are exempt from Bun's HTTP idle timeout.
 * `send()` says what it did (bytes sent, -1 queued under backpressure, 0 dropped past
 * `backpressureLimit`), so a dropped frame never goes unnoticed, and the server's `drain`
 * callback is the sink's drain signal.
 * @module
 */
import { getBunServer, getConnInfo, websocket } from "hono/bun";
import { defineWebSocketHelper, type UpgradeWebSocket, type WSContext } from "hono/ws";
import { type AdapterOptions, type FetchHandler, type ServerAdapter, type SocketSink, urlHost } from "./types.ts";

/** What the adapter uses of Bun's `ServerWebSocket`. */
interface BunSocket {
  readonly readyState: number;
  send(data: string): number;
  getBufferedAmount(): number;
}

/**
 * Hono's `upgradeWebSocket` for Bun, as `hono/bun`'s but without the request's `URL` in each
 * socket's data (kept for the socket's life there, and parsed again into every event's
 * `WSContext`): a socket keeps its events and its subprotocol only.
 */
const upgradeWebSocket: UpgradeWebSocket<unknown> = defineWebSocketHelper((c, events) => {
  const server = getBunServer(c) as { upgrade(req: Request, options: { data: unknown }): boolean } | undefined;
  if (!server) throw new TypeError("Bun's server is the fetch handler's second argument");
  const protocol = c.req.header("sec-websocket-protocol")?.split(",")[0]?.trim() ?? "";
  if (server.upgrade(c.req.raw, { data: { events, protocol } })) return new Response(null);
});

/** One Bun `ServerWebSocket` as a {@link SocketSink}: one object, no closures. */
class BunSink implements SocketSink {
  readonly #raw: BunSocket;
  readonly #waiting: WeakMap<object, Set<() => void>>;
  constructor(raw: BunSocket, waiting: WeakMap<object, Set<() => void>>) {
    this.#raw = raw;
    this.#waiting = waiting;
  }
  send(text: string): "ok" | "closed" | "dropped" {
    const raw = this.#raw;
    return raw.readyState !== 1 ? "closed" : raw.send(text) === 0 ? "dropped" : "ok";
  }
  above(bytes: number): boolean {
    return this.#raw.getBufferedAmount() > bytes;
  }
  drained(below: number, signal: AbortSignal): Promise<void> {
    const raw = this.#raw;
    const waiting = this.#waiting;
    return new Promise<void>((resolve) => {
      const check = () => {
        if (raw.getBufferedAmount() <= below || raw.readyState !== 1 || signal.aborted) {
          signal.removeEventListener("abort", check);
          return resolve();
        }
        let set = waiting.get(raw);
        if (!set) waiting.set(raw, (set = new Set()));
        set.add(check);
      };
      signal.addEventListener("abort", check, { once: true });
      check();
    });
  }
}

/** What the adapter uses of Bun's `Server` (the fetch handler's second argument). */
export interface BunServer {
  timeout(req: Request, seconds: number): void;
}

/**
 * The options of `Bun.serve` without the address: what `listen` serves, and what Bun's default
 * export (`src/worker/bun.ts`) hands Bun, so both get the same WebSocket handlers (drain, close)
 * and timeouts.
 */
export interface BunServeOptions {
  idleTimeout: number;
  fetch(req: Request, server: BunServer): Promise<Response>;
  websocket: Record<string, unknown>;
}

/** The Bun adapter, with the serve options of Bun's default export. */
export interface BunAdapter extends ServerAdapter {
  serveOptions(fetch: FetchHandler): BunServeOptions;
}

/**
 * Seconds an ordinary HTTP connection may be idle, request handling included: Bun's own default,
 * kept (our handlers answer from memory). Streaming responses are exempt.
 */
export const HTTP_IDLE_SECONDS = 10;

/** A long-lived response body: SSE, or a Connect / gRPC-Web stream. */
export function isStreamResponse(res: Response): boolean {
  const type = res.headers.get("content-type") ?? "";
  return res.body !== null && /^(text\/event-stream|application\/connect\+|application\/grpc-web)/i.test(type);
}

/** The Bun adapter. */
export function createAdapter({ maxPayloadBytes, pingSeconds }: Required<AdapterOptions>): BunAdapter {
  // Sockets waiting for Bun's drain (or close) callback, per socket.
  const waiting = new WeakMap<object, Set<() => void>>();
  const wake = (raw: object) => {
    const set = waiting.get(raw);
    waiting.delete(raw);
    for (const fn of set ?? []) fn();
  };
  const socket = (ws: WSContext<unknown>): SocketSink => new BunSink(ws.raw as BunSocket, waiting);
  const serveOptions = (fetch: FetchHandler): BunServeOptions => ({
    // Bun's idle timeout counts only what the peer sends, not what the server writes: a stream
    // would be cut after it however often heartbeats go out. Ordinary requests keep it; every
    // streaming response (SSE, Connect and gRPC-Web streams) is exempted by `server.timeout(req, 0)`.
    idleTimeout: HTTP_IDLE_SECONDS,
    async fetch(req: Request, server: BunServer) {
      const res = await fetch(req, server);
      if (isStreamResponse(res)) server.timeout(req, 0);
      return res;
    },
    websocket: {
      ...websocket,
      close(ws: object, code: number, reason: string) {
        wake(ws);
        // deno-lint-ignore no-explicit-any
        (websocket.close as any)(ws, code, reason);
      },
      drain: wake,
      maxPayloadLength: maxPayloadBytes,
      backpressureLimit: 16 << 20,
      closeOnBackpressureLimit: false,
      // Bun pings an idle peer and closes it when nothing (not even a pong) arrives for idleTimeout s.
      idleTimeout: Math.min(960, Math.max(2, Math.round(pingSeconds * 2))),
      sendPings: true,
    },
  });
  return {
    runtime: "bun",
    headersWaitForBody: true,
    upgradeWebSocket,
    clientAddress: (c) => getConnInfo(c).remote.address,
    socket,
    keepAlive: () => undefined,
    serveOptions,
    listen(fetch, { port, hostname }) {
      // deno-lint-ignore no-explicit-any
      const Bun = (globalThis as any).Bun;
      const server = Bun.serve({ ...serveOptions(fetch), port, hostname });
      const actual: number = server.port;
      return Promise.resolve({
        url: `http://${urlHost(hostname)}:${actual}`,
        port: actual,
        close: async () => {
          await server.stop(true);
        },
      });
    },
  };
}
