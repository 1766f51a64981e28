/**
 * Bun: `Bun.serve` with `hono/bun`'s WebSocket handler. Bun gets `app.fetch`
 * itself (hono/bun reads the server from the fetch's 2nd argument). Bun pings
 * and closes idle peers (`sendPings`, `idleTimeout`); `send()` results are
 * checked by the service, so its silent drop past `backpressureLimit` never
 * goes unnoticed.
 * @module
 */
import { getConnInfo, upgradeWebSocket, websocket } from "hono/bun";
import type { UpgradeWebSocket } from "hono/ws";
import { type ServerAdapter, urlHost } from "./types.ts";

/** The Bun adapter. */
export const adapter: ServerAdapter = {
  runtime: "bun",
  upgradeWebSocket: upgradeWebSocket as UpgradeWebSocket<unknown>,
  clientAddress: (c) => getConnInfo(c).remote.address,
  listen(app, { port, hostname, maxPayloadBytes, pingSeconds }) {
    // deno-lint-ignore no-explicit-any
    const Bun = (globalThis as any).Bun;
    const server = Bun.serve({
      port,
      hostname,
      fetch: app.fetch,
      idleTimeout: 0, // SSE streams are long-lived; WebSockets have their own idle handling
      websocket: {
        ...websocket,
        maxPayloadLength: maxPayloadBytes,
        backpressureLimit: 16 << 20,
        closeOnBackpressureLimit: false,
        // Bun pings an idle peer and closes it when nothing (not even a pong) arrives for idleTimeout s.
        idleTimeout: Math.min(960, Math.max(2, Math.round(pingSeconds * 2))),
        sendPings: true,
      },
    });
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
