/**
 * Node: `@hono/node-server` 2.x with a `ws` WebSocketServer in `noServer`
 * mode. Node's `ws` does not ping by itself; the service does (see app.ts).
 *
 * Node hands every request with an `Upgrade` header to the `upgrade` event, not to the request
 * handler, and node-server answers only WebSocket upgrades there — with a bare status line when it
 * does not upgrade, and nothing at all for other upgrades (`h2c`), so the client hangs. Here every
 * such request that does not become a WebSocket gets its whole answer (status, headers, body), as
 * on Deno and Bun: a refusal names its problem, and any other route answers as without the header.
 * @module
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { IncomingMessage } from "node:http";
import { serve, upgradeWebSocket as nodeUpgradeWebSocket } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { UpgradeWebSocket } from "hono/ws";
import { WebSocketServer } from "ws";
import { type ServerAdapter, urlHost } from "./types.ts";

/** Set on a request's env once node-server has taken its socket for a WebSocket. */
const UPGRADING = Symbol("appwatch.upgrading");
type Env = { incoming?: { socket?: Duplex }; [UPGRADING]?: boolean };

/** node-server's `upgradeWebSocket`, noting on the env that the socket is node-server's now. */
const upgradeWebSocket = ((createEvents: unknown, options: unknown) => {
  const middleware = (nodeUpgradeWebSocket as unknown as (e: unknown, o: unknown) => (c: { env?: Env }, next: () => Promise<void>) => Promise<Response | undefined>)(createEvents, options);
  return async (c: { env?: Env }, next: () => Promise<void>) => {
    const res = await middleware(c, next);
    if (res && c.env) c.env[UPGRADING] = true;
    return res;
  };
}) as unknown as UpgradeWebSocket<unknown>;

/** The Node adapter. */
export const adapter: ServerAdapter = {
  runtime: "node",
  upgradeWebSocket,
  clientAddress: (c) => getConnInfo(c).remote.address,
  listen(app, { port, hostname, maxPayloadBytes }) {
    const wss = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
    return new Promise((resolve, reject) => {
      const fetch = async (req: Request, env: Env) => {
        const res = await app.fetch(req, env);
        const socket = env?.incoming?.socket;
        if (req.headers.get("upgrade") !== null && !env[UPGRADING] && socket && !socket.destroyed) await writeResponse(socket, res);
        return res;
      };
      const server = serve({ fetch, port, hostname, websocket: { server: wss } }, (info) => {
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
        Promise.resolve(app.fetch(new Request(url, { method: incoming.method ?? "GET", headers }), { incoming }))
          .then((res) => writeResponse(socket, res), () => socket.destroy());
      });
    });
  },
};

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
