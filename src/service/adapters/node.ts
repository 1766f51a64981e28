/**
 * Node: `@hono/node-server` 2.x with a `ws` WebSocketServer in `noServer`
 * mode. Node's `ws` does not ping by itself: {@link ServerAdapter.keepAlive} pings from one
 * {@link Ticker} per adapter; the drain signal is the TCP socket's `drain` event.
 *
 * Node hands every request with `Upgrade` and `Connection: Upgrade` to the `upgrade` event, not to
 * the request handler, and node-server answers only WebSocket upgrades there — with a bare status
 * line when it does not upgrade, and nothing at all for other upgrades (`h2c`), so the client
 * hangs. Here every such request that does not become a WebSocket gets its whole answer (status,
 * headers, body), as on Deno and Bun: a refusal names its problem, and any other route (or method)
 * answers as without the header.
 * @module
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { IncomingMessage } from "node:http";
import { serve, upgradeWebSocket as nodeUpgradeWebSocket } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { type UpgradeWebSocket, WSContext } from "hono/ws";
import { WebSocketServer } from "ws";
import { Ticker } from "../ticker.ts";
import { type AdapterOptions, type ServerAdapter, type SocketSink, urlHost } from "./types.ts";

/** Set on a request's env once node-server has taken its socket for a WebSocket. */
const UPGRADING = Symbol("appwatch.upgrading");
type Env = { incoming?: { socket?: Duplex; method?: string }; outgoing?: unknown; [UPGRADING]?: boolean };
type Events = { onOpen?: (evt: Event, ws: WSContext<unknown>) => void; onClose?: (evt: CloseEvent, ws: WSContext<unknown>) => void };

/**
 * node-server's `upgradeWebSocket`, noting on the env that the socket is node-server's now. A
 * handshake `ws` refuses (an invalid subprotocol, …) or whose client leaves before the 101 fires no
 * WebSocket event at all; its `onClose` is fired here when the socket closes unopened, so the
 * stream slot comes back with the connection, not only at app.ts's handshake deadline.
 */
const upgradeWebSocket = ((createEvents: (c: unknown) => Events | Promise<Events>, options: unknown) => {
  const opened = new WeakMap<object, { opened: boolean; events: Events }>();
  const track = async (c: object) => {
    const events = await createEvents(c);
    const state = { opened: false, events };
    opened.set(c, state);
    return { ...events, onOpen: (evt: Event, ws: WSContext<unknown>) => ((state.opened = true), events.onOpen?.(evt, ws)) };
  };
  const middleware = (nodeUpgradeWebSocket as unknown as (e: unknown, o: unknown) => (c: { env?: Env }, next: () => Promise<void>) => Promise<Response | undefined>)(track, options);
  return async (c: { env?: Env }, next: () => Promise<void>) => {
    // Answered by node-server's request handler (no `Connection: Upgrade`): it can never become a WebSocket.
    if (c.env?.outgoing !== undefined) return await next();
    const res = await middleware(c, next);
    const state = opened.get(c);
    const socket = c.env?.incoming?.socket;
    if (!res || !c.env || !state || !socket) return res;
    c.env[UPGRADING] = true;
    const unopened = () => {
      if (state.opened) return;
      state.opened = true; // once
      const evt = Object.assign(new Event("close"), { code: 1006, reason: "handshake not completed", wasClean: false }) as CloseEvent;
      state.events.onClose?.(evt, new WSContext({ send() {}, close() {}, readyState: 3 }));
    };
    if (socket.destroyed) unopened();
    else socket.once("close", unopened);
    return res;
  };
}) as unknown as UpgradeWebSocket<unknown>;

/** The Node adapter. */
export function createAdapter({ maxPayloadBytes }: Required<AdapterOptions>): ServerAdapter {
  const tickers = new Map<number, Ticker>(); // one per ping period, this adapter's own
  const encode = lastEncoded();
  return {
    runtime: "node",
    upgradeWebSocket,
    clientAddress: (c) => getConnInfo(c).remote.address,
    socket: (ws) => nodeSocket(ws.raw as WsSocket, encode),
    keepAlive(ws, everyMs) {
      let ticker = tickers.get(everyMs);
      if (!ticker) tickers.set(everyMs, (ticker = new Ticker(everyMs)));
      return keepAlive(ws.raw as WsSocket, ticker);
    },
    listen(handler, { port, hostname }) {
      const wss = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
      return new Promise((resolve, reject) => {
        const fetch = async (req: Request, env: Env) => {
          const own = withMethod(req, env?.incoming?.method);
          const res = own ? await handler(own, env) : new Response("404 Not Found", { status: 404, headers: { "content-type": "text/plain; charset=UTF-8" } });
          const socket = env?.incoming?.socket;
          // From the `upgrade` event (no `outgoing`) and not a WebSocket: node-server would not answer it whole.
          if (env && env.outgoing === undefined && !env[UPGRADING] && socket && !socket.destroyed) await writeResponse(socket, res);
          return res;
        };
        // Header deadline: Node's default is 60 s, checked every 30 s (a half-sent request lived ~90 s).
        const serverOptions = { headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000 };
        const server = serve({ fetch, port, hostname, serverOptions, websocket: { server: wss } }, (info) => {
          resolve({
            url: `http://${urlHost(hostname)}:${info.port}`,
            port: info.port,
            close: () =>
              new Promise<void>((done) => {
                for (const client of wss.clients) client.terminate();
                wss.close();
                // deno-lint-ignore no-explicit-any
                (server as any).closeAllConnections?.();
                server.close(() => done());
              }),
          });
        });
        server.once("error", reject);
        // Upgrades other than WebSocket (h2c, …): node-server ignores them; answer as a plain request.
        server.on("upgrade", (incoming: IncomingMessage, socket: Duplex) => {
          if (incoming.headers.upgrade?.toLowerCase() === "websocket") return;
          socket.on("error", () => {});
          const headers = new Headers();
          for (const [k, v] of Object.entries(incoming.headers)) {
            if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
          }
          const url = `http://${incoming.headers.host ?? "localhost"}${incoming.url ?? "/"}`;
          Promise.resolve(handler(new Request(url, { method: incoming.method ?? "GET", headers }), { incoming }))
            .then((res) => writeResponse(socket, res), () => socket.destroy());
        });
      });
    },
  };
}

/**
 * The request with the method the client sent: node-server builds every upgrade request as a GET,
 * so a POST with `Upgrade: websocket` would reach the GET route. Undefined for a method a fetch
 * `Request` cannot carry (TRACE, …), which no route serves.
 */
function withMethod(req: Request, method: string | undefined): Request | undefined {
  if (method === undefined || method === req.method) return req;
  try {
    return new Request(req.url, { method, headers: req.headers });
  } catch {
    return undefined;
  }
}

/** How long a client may take to send its request headers (Bun's own limit is about 10 s too). */
const HEADERS_TIMEOUT_MS = 10_000;

/** Writes a complete HTTP/1.1 response on a raw upgrade socket and closes it. */
async function writeResponse(socket: Duplex, res: Response): Promise<void> {
  const body = new Uint8Array(await res.arrayBuffer());
  const lines = [`HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}`];
  res.headers.forEach((value, key) => {
    if (key !== "content-length" && key !== "connection" && key !== "transfer-encoding") lines.push(`${key}: ${value}`);
  });
  lines.push(`content-length: ${body.byteLength}`, "connection: close", "", "");
  // node-server's own bare refusal, written after this, fails harmlessly (write after end; it ignores socket errors).
  socket.end(Buffer.concat([Buffer.from(lines.join("\r\n")), body]));
}

/** What the adapter uses of a `ws` WebSocket. */
interface WsSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  /** The TCP socket (`ws` keeps it here; undefined once closed). */
  readonly _socket?: Duplex;
  send(data: string | Buffer, options?: { binary?: boolean }): void;
  ping(): void;
  terminate(): void;
  on(event: "pong" | "close", fn: () => void): void;
  once(event: "close", fn: () => void): void;
  off(event: "close", fn: () => void): void;
}

/**
 * UTF-8 bytes of the last text sent, shared by every socket of one adapter. The hub hands the same
 * frame string to each subscriber in turn; given a string, `ws` measures and encodes it again for
 * every socket (`Buffer.byteLength`, then the socket write), given a Buffer it frames it as it is.
 * One slot suffices: a broadcast sends one frame to all its sockets before the next.
 */
export function lastEncoded(): (text: string) => Buffer {
  let text: string | undefined;
  let bytes = Buffer.alloc(0);
  return (t) => {
    if (t !== text) {
      bytes = Buffer.from(t, "utf8");
      text = t;
    }
    return bytes;
  };
}

function nodeSocket(raw: WsSocket, encode: (text: string) => Buffer): SocketSink {
  const open = () => raw.readyState === 1;
  return {
    send(text) {
      if (!open()) return "closed";
      // A text frame from shared bytes (`binary: false`); `ws` never mutates what it is given unmasked.
      raw.send(encode(text), { binary: false });
      return "ok";
    },
    bufferedAmount: () => raw.bufferedAmount,
    drained(below, signal) {
      return new Promise<void>((resolve) => {
        const tcp = raw._socket;
        const check = () => {
          if (raw.bufferedAmount > below && open() && !signal.aborted) return;
          tcp?.off("drain", check);
          raw.off("close", check);
          signal.removeEventListener("abort", check);
          resolve();
        };
        tcp?.on("drain", check);
        raw.once("close", check);
        signal.addEventListener("abort", check);
        check();
      });
    },
  };
}

/**
 * Protocol pings on `ticker`: ping each period and cut a peer that did not answer the previous
 * ping. Returns the function that stops pinging (also called when the socket closes).
 */
export function keepAlive(raw: WsSocket, ticker: Ticker): () => void {
  let alive = true;
  raw.on("pong", () => (alive = true));
  const stop = ticker.add(() => {
    if (!alive) {
      stop();
      return raw.terminate();
    }
    alive = false;
    try {
      raw.ping();
    } catch { /* closing */ }
  });
  raw.once("close", stop);
  return stop;
}
