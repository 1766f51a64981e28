/**
 * Node: `@hono/node-server` 2.x for requests, and a `ws` WebSocketServer in `noServer` mode for
 * WebSockets, upgraded here rather than by node-server's `upgradeWebSocket`. Node's `ws` does not
 * ping by itself: {@link ServerAdapter.keepAlive} pings from one {@link Ticker} per adapter; the
 * drain signal is the TCP socket's `drain` event.
 *
 * Why the upgrade is ours: node-server's helper keeps, for the whole life of each socket, the Hono
 * `Context` of its upgrade request (and through it the `Request`, its `Headers`, node-server's
 * request wrapper and the `IncomingMessage`) plus a `URL`, because its event closures share the
 * scope that read `c.req.url`. Here the request is gone once the handshake is answered: a socket
 * holds its `ws`, its events and a `WSContext` with no URL (B3 idle, 4,000 subscribers: 18.0 →
 * 9.8 KiB of JS heap per subscriber, with the fast path's smaller session).
 *
 * Node hands every request with `Upgrade` and `Connection: Upgrade` to the `upgrade` event, not to
 * the request handler. Each one is answered here in full: a WebSocket the app accepted is handed to
 * `ws`; anything else (a refused handshake, another route, `h2c`, …) gets its whole answer (status,
 * headers, body) as on Deno and Bun, so a refusal names its problem.
 * @module
 */
import { ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { IncomingMessage } from "node:http";
import { serve } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { defineWebSocketHelper, type UpgradeWebSocket, type WSEvents, WSContext } from "hono/ws";
import { type WebSocket, WebSocketServer } from "ws";
import { Ticker } from "../ticker.ts";
import { SocketContext } from "./ws-context.ts";
import { NodeBody, SocketWriter } from "./node-writes.ts";
import { type AdapterOptions, type ServerAdapter, type SocketSink, urlHost } from "./types.ts";

/** Set on an upgrade request's env by {@link upgradeWebSocket}: the app accepted it as a WebSocket with these events. */
const ACCEPTED = Symbol("appwatch.ws-accepted");
/** Set on a request's env by the adapter's `directBody`: the body to open once the app's `Response` is known. */
const DIRECT = Symbol("appwatch.direct-body");
type Events = WSEvents<unknown>;
/** The env of a request from the `upgrade` event (node-server's request handler sets `outgoing` too). */
type Env = { incoming?: { socket?: Duplex; method?: string }; outgoing?: unknown; [ACCEPTED]?: Events; [DIRECT]?: NodeBody };

/**
 * Hono's `upgradeWebSocket` for this adapter: on a request from the `upgrade` event it only notes
 * the events on the env (200 for now; the 101 is `ws`'s, in {@link accept}). A request that came
 * through the request handler (no `Connection: Upgrade`) can never become a WebSocket: `next()`.
 */
const upgradeWebSocket: UpgradeWebSocket<unknown> = defineWebSocketHelper((c, events) => {
  const env = c.env as Env | undefined;
  if (!env?.incoming || env.outgoing !== undefined) return;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return;
  env[ACCEPTED] = events;
  return new Response(null);
});

/** The Node adapter. */
export function createAdapter({ maxPayloadBytes }: Required<AdapterOptions>): ServerAdapter {
  const tickers = new Map<number, Ticker>(); // one per ping period, this adapter's own
  const writer = new SocketWriter();
  return {
    runtime: "node",
    headersWaitForBody: false,
    upgradeWebSocket,
    clientAddress: (c) => getConnInfo(c).remote.address,
    socket: (ws) => new NodeSocket(ws.raw as WsSocket, writer),
    directBody(c) {
      const env = c.env as Env | undefined;
      const out = env?.outgoing;
      // HTTP/1.1 responses only (node-server's HTTP/2 response has no cork): others stream as before.
      if (env === undefined || !(out instanceof ServerResponse) || env[DIRECT] !== undefined) return undefined;
      return env[DIRECT] = new NodeBody(out, writer);
    },
    keepAlive(ws, everyMs) {
      let ticker = tickers.get(everyMs);
      if (!ticker) tickers.set(everyMs, (ticker = new Ticker(everyMs)));
      keepAlive(ws.raw as WsSocket, ticker);
    },
    listen(handler, { port, hostname }) {
      const wss = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
      return new Promise((resolve, reject) => {
        const fetch = async (req: Request, env: Env) => {
          const own = withMethod(req, env?.incoming?.method);
          const res = own ? await handler(own, env) : notFound();
          const direct = env?.[DIRECT];
          // A direct body goes out with the status and headers the app's middleware settled on.
          // (node-server's own marker: a Response made here would be its light Response, which it writes as is.)
          return direct !== undefined && direct.open(res) ? RESPONSE_ALREADY_SENT : res;
        };
        // Header deadline: Node's default is 60 s, checked every 30 s (a half-sent request lived ~90 s).
        const serverOptions = { headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000 };
        const server = serve({ fetch, port, hostname, serverOptions }, (info) => {
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
        // Every upgrade request: the app answers it; a WebSocket it accepted goes to `ws`, anything else is written whole.
        server.on("upgrade", (incoming: IncomingMessage, socket: Duplex, head: Buffer) => {
          socket.on("error", ignore);
          const req = upgradeRequest(incoming);
          const env: Env = { incoming, outgoing: undefined };
          Promise.resolve(req ? handler(req, env) : notFound()).then((res) => {
            const events = env[ACCEPTED];
            if (events !== undefined && res.status === 200) return accept(wss, incoming, socket, head, events);
            return writeResponse(socket, res);
          }).catch(() => socket.destroy());
        });
      });
    },
  };
}

/** A listener that must not close over anything: it stays on the socket for its whole life. */
function ignore(): void {}

function notFound(): Response {
  return new Response("404 Not Found", { status: 404, headers: { "content-type": "text/plain; charset=UTF-8" } });
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

/** An upgrade request as a fetch `Request` (with the method sent); undefined if it cannot be one (TRACE, a bad Host). */
function upgradeRequest(incoming: IncomingMessage): Request | undefined {
  const headers = new Headers();
  for (const [k, v] of Object.entries(incoming.headers)) {
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  const target = incoming.url ?? "/";
  const scheme = (incoming.socket as { encrypted?: boolean }).encrypted ? "https" : "http";
  try {
    const url = /^https?:\/\//i.test(target) ? target : `${scheme}://${incoming.headers.host ?? "localhost"}${target}`;
    return new Request(url, { method: incoming.method ?? "GET", headers });
  } catch {
    return undefined;
  }
}

/**
 * Hands an accepted upgrade to `ws`. A handshake `ws` refuses (a bad key, …) or whose client
 * leaves before the 101 opens no WebSocket; its `onClose` fires when the socket closes unopened,
 * so the stream slot comes back with the connection, not only at the handshake deadline.
 */
function accept(wss: WebSocketServer, incoming: IncomingMessage, socket: Duplex, head: Buffer, events: Events): void {
  let settled = false;
  const unopened = () => {
    if (settled) return;
    settled = true;
    events.onClose?.(closeEvent(1006, "handshake not completed"), new WSContext({ send() {}, close() {}, readyState: 3 }));
  };
  if (socket.destroyed) return unopened();
  socket.once("close", unopened);
  wss.handleUpgrade(incoming, socket, head, (ws: WebSocket) => {
    socket.off("close", unopened);
    settled = true;
    wire(ws, events);
  });
}

/** A socket's Hono side: its events and the context they get (kept on the `ws` object). */
interface Wired {
  events: Events;
  ctx: WSContext<unknown>;
}

/** `ws`'s events as Hono's, through listeners shared by every socket. */
function wire(ws: WebSocket, events: Events): void {
  const wired: Wired = { events, ctx: new SocketContext(ws) };
  (ws as unknown as Tagged)[WIRED] = wired;
  ws.on("message", onWsMessage);
  ws.on("close", onWsClose);
  ws.on("error", onWsError);
  events.onOpen?.(new Event("open"), wired.ctx);
}

function onWsMessage(this: Tagged, data: Buffer, isBinary: boolean): void {
  const w = this[WIRED]!;
  const payload = isBinary ? data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer : data.toString("utf8");
  w.events.onMessage?.(new MessageEvent("message", { data: payload }), w.ctx);
}

function onWsClose(this: Tagged, code: number, reason: Buffer): void {
  const w = this[WIRED]!;
  w.events.onClose?.(closeEvent(code, reason.toString()), w.ctx);
}

function onWsError(this: Tagged, error: Error): void {
  const w = this[WIRED]!;
  w.events.onError?.(Object.assign(new Event("error"), { error }), w.ctx);
}

/** Node 20 has no global `CloseEvent`. */
function closeEvent(code: number, reason: string): CloseEvent {
  return Object.assign(new Event("close"), { code, reason, wasClean: code !== 1006 }) as CloseEvent;
}

/** How long a client may take to send its request headers (Bun's own limit is about 10 s too). */
const HEADERS_TIMEOUT_MS = 10_000;

/** Writes a complete HTTP/1.1 response on a raw upgrade socket and closes it. */
async function writeResponse(socket: Duplex, res: Response): Promise<void> {
  const body = new Uint8Array(await res.arrayBuffer());
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}`];
  res.headers.forEach((value, key) => {
    if (key !== "content-length" && key !== "connection" && key !== "transfer-encoding") lines.push(`${key}: ${value}`);
  });
  lines.push(`content-length: ${body.byteLength}`, "connection: close", "", "");
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

/** `ws.send`'s options for a text frame from bytes (`ws` copies them: one object serves every send). */
const TEXT_FRAME = { binary: false } as const;

/** One `ws` WebSocket as a {@link SocketSink}: one object, no closures. */
class NodeSocket implements SocketSink {
  readonly #raw: WsSocket;
  readonly #writer: SocketWriter;

  constructor(raw: WsSocket, writer: SocketWriter) {
    this.#raw = raw;
    this.#writer = writer;
  }

  send(text: string): "ok" | "closed" {
    const raw = this.#raw;
    if (raw.readyState !== 1) return "closed";
    const tcp = raw._socket;
    if (tcp !== undefined) this.#writer.cork(tcp);
    // A text frame from shared bytes; `ws` never mutates what it is given unmasked.
    raw.send(this.#writer.bytes(text), TEXT_FRAME);
    return "ok";
  }

  above(bytes: number): boolean {
    return this.#raw.bufferedAmount > bytes;
  }

  drained(below: number, signal: AbortSignal): Promise<void> {
    const raw = this.#raw;
    return new Promise<void>((resolve) => {
      const tcp = raw._socket;
      const check = () => {
        if (raw.bufferedAmount > below && raw.readyState === 1 && !signal.aborted) return;
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
  }
}

/** Where a socket's {@link Pinger} and {@link Wired} record live on its `ws` object (listeners are shared functions). */
const PINGER = Symbol("appwatch.pinger");
const WIRED = Symbol("appwatch.wired");
type Tagged = WsSocket & { [PINGER]?: Pinger; [WIRED]?: Wired };

/**
 * Protocol pings on `ticker`: ping each period and cut a peer that did not answer the previous
 * ping; stops when the socket closes (or on `stop()`). One object per socket, enrolled in the
 * ticker itself; its listeners are shared functions.
 */
export class Pinger {
  readonly #raw: Tagged;
  readonly #ticker: Ticker;
  alive = true;

  constructor(raw: WsSocket, ticker: Ticker) {
    this.#raw = raw as Tagged;
    this.#ticker = ticker;
    this.#raw[PINGER] = this;
    raw.on("pong", onPong);
    raw.once("close", onClosedStopPing);
    ticker.enroll(this);
  }

  tick(): void {
    if (!this.alive) {
      this.stop();
      return this.#raw.terminate();
    }
    this.alive = false;
    try {
      this.#raw.ping();
    } catch { /* closing */ }
  }

  stop(): void {
    this.#ticker.remove(this);
  }
}

function onPong(this: Tagged): void {
  const p = this[PINGER];
  if (p) p.alive = true;
}

function onClosedStopPing(this: Tagged): void {
  this[PINGER]?.stop();
}

/** Pings `raw` on `ticker` until it closes (see {@link Pinger}). */
export function keepAlive(raw: WsSocket, ticker: Ticker): Pinger {
  return new Pinger(raw, ticker);
}
