/**
 * Deno: `Deno.serve`, with the WebSocket upgrade done here (Deno pings and closes a silent peer
 * itself: `idleTimeout`).
 *
 * Why the upgrade is ours and not `hono/deno`'s: that helper gives every socket four event-handler
 * closures and a `WSContext` built from closures; here the handlers are shared functions that find
 * the socket's record on the socket (an event handler's `this`), and the context reads the socket
 * itself — a few plain objects per idle subscriber.
 *
 * What Deno does not let an adapter bound (no option of `Deno.upgradeWebSocket` or `Deno.serve`;
 * the frames never reach JavaScript before a message is whole): the size of a fragmented message
 * while it is assembled (`maxPayloadBytes` is not applied here), unmasked client frames, close
 * codes for protocol errors, and the time a client may take to send its request headers. Measured
 * in docs/operations.md, "Runtime limits and hardening"; the image runs Node because of them.
 * Deno's WebSocket has no drain event either: {@link SocketSink.drained} re-checks every 10 ms.
 * @module
 */
import { getConnInfo } from "hono/deno";
import { defineWebSocketHelper, type UpgradeWebSocket, type WSContext, type WSEvents } from "hono/ws";
import { SocketContext } from "./ws-context.ts";
import { DenoSocket } from "./deno-socket.ts";
import { type AdapterOptions, type ServerAdapter, urlHost } from "./types.ts";

type Events = WSEvents<unknown>;
/** A socket's Hono side, kept on the socket itself (the handlers are shared). */
const WIRED = Symbol("appwatch.wired");
type Tagged = WebSocket & { [WIRED]?: { events: Events; ctx: WSContext<unknown> } };

/** The Deno adapter. */
export function createAdapter({ pingSeconds }: Required<AdapterOptions>): ServerAdapter {
  // Deno pings and closes a peer with no pong within `idleTimeout` seconds.
  const idleTimeout = Math.max(1, Math.round(pingSeconds));
  const upgradeWebSocket: UpgradeWebSocket<unknown> = defineWebSocketHelper((c, events) => {
    if (c.req.header("upgrade") !== "websocket") return;
    const protocol = c.req.header("sec-websocket-protocol")?.split(",")[0]?.trim();
    // deno-lint-ignore no-explicit-any
    const Deno = (globalThis as any).Deno;
    const { response, socket } = Deno.upgradeWebSocket(c.req.raw, { idleTimeout, ...(protocol ? { protocol } : {}) }) as { response: Response; socket: Tagged };
    socket[WIRED] = { events, ctx: new SocketContext(socket, protocol ?? null) };
    socket.onopen = socket.onmessage = socket.onclose = socket.onerror = onEvent;
    return response;
  });
  return {
    runtime: "deno",
    headersWaitForBody: false,
    upgradeWebSocket,
    clientAddress: (c) => getConnInfo(c).remote.address,
    socket: (ws) => new DenoSocket(ws.raw as WebSocket),
    keepAlive: () => undefined,
    listen(fetch, { port, hostname }) {
      // deno-lint-ignore no-explicit-any
      const Deno = (globalThis as any).Deno;
      const ac = new AbortController();
      return new Promise((resolve, reject) => {
        try {
          const server = Deno.serve({
            port,
            hostname,
            signal: ac.signal,
            onListen: ({ port: actual }: { port: number }) =>
              resolve({
                url: `http://${urlHost(hostname)}:${actual}`,
                port: actual,
                close: async () => {
                  ac.abort();
                  await server.finished;
                },
              }),
          }, (req: Request, info: unknown) => fetch(req, info));
        } catch (err) {
          reject(err);
        }
      });
    },
  };
}

/** Every event of every socket: the socket's record is on the socket (an event handler's `this`). */
function onEvent(this: Tagged, evt: Event): void {
  const { events, ctx } = this[WIRED]!;
  if (evt.type === "message") events.onMessage?.(evt as MessageEvent, ctx);
  else if (evt.type === "close") events.onClose?.(evt as CloseEvent, ctx);
  else if (evt.type === "open") events.onOpen?.(evt, ctx);
  else events.onError?.(evt, ctx);
}

