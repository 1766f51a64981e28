/**
 * Node: `@hono/node-server` 2.x with a `ws` WebSocketServer in `noServer`
 * mode. Node's `ws` does not ping by itself; the service does (see app.ts).
 * @module
 */
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
      const server = serve({ fetch: app.fetch, port, hostname, websocket: { server: wss } }, (info) => {
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
