/**
 * Node: `@hono/node-server` 2.x with a `ws` WebSocketServer in `noServer`
 * mode. Node's `ws` does not ping by itself; the service does (see app.ts).
 *
 * node-server answers a refused WebSocket upgrade with a bare status line; a
 * refusal is written here in full instead (status, headers and the JSON body
 * naming the problem), as on Deno and Bun.
 * @module
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { serve, upgradeWebSocket } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { UpgradeWebSocket } from "hono/ws";
import { WebSocketServer } from "ws";
import { type ServerAdapter, urlHost } from "./types.ts";

/** The Node adapter. */
export const adapter: ServerAdapter = {
  runtime: "node",
  upgradeWebSocket: upgradeWebSocket as unknown as UpgradeWebSocket<unknown>,
  clientAddress: (c) => getConnInfo(c).remote.address,
  listen(app, { port, hostname, maxPayloadBytes }) {
    const wss = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
    return new Promise((resolve, reject) => {
      const fetch = async (req: Request, env: { incoming?: { socket?: Duplex } }) => {
        const res = await app.fetch(req, env);
        const socket = env?.incoming?.socket;
        if (res.status >= 400 && req.headers.get("upgrade")?.toLowerCase() === "websocket" && socket && !socket.destroyed) {
          await writeRefusal(socket, res);
        }
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
    });
  },
};

/** Writes a complete HTTP/1.1 response on a raw upgrade socket and closes it. */
async function writeRefusal(socket: Duplex, res: Response): Promise<void> {
  const body = new Uint8Array(await res.arrayBuffer());
  const lines = [`HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}`];
  res.headers.forEach((value, key) => {
    if (key !== "content-length" && key !== "connection" && key !== "transfer-encoding") lines.push(`${key}: ${value}`);
  });
  lines.push(`content-length: ${body.byteLength}`, "connection: close", "", "");
  // node-server's own bare refusal, written after this, fails harmlessly (write after end; it ignores socket errors).
  socket.end(Buffer.concat([Buffer.from(lines.join("\r\n")), body]));
}
