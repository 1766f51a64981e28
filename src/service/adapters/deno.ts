/**
 * Deno: `Deno.serve` with `hono/deno`'s WebSocket upgrade (Deno pings and
 * closes a silent peer itself: `idleTimeout`).
 *
 * What Deno does not let an adapter bound (no option of `Deno.upgradeWebSocket` or `Deno.serve`;
 * the frames never reach JavaScript before a message is whole): the size of a fragmented message
 * while it is assembled (`maxPayloadBytes` is not applied here), unmasked client frames, close
 * codes for protocol errors, and the time a client may take to send its request headers. Measured
 * in docs/operations.md, "Runtime limits and hardening"; the image runs Node because of them.
 * @module
 */
import { getConnInfo, upgradeWebSocket } from "hono/deno";
import type { UpgradeWebSocket } from "hono/ws";
import { type ServerAdapter, urlHost } from "./types.ts";

// Deno pings and closes a peer with no pong within `idleTimeout` seconds; set by listen().
let idleTimeout = 30;
const upgrade: UpgradeWebSocket<unknown> = (createEvents, options) =>
  // deno-lint-ignore no-explicit-any
  (upgradeWebSocket as any)(createEvents, { idleTimeout, ...(options as object | undefined) });

/** The Deno adapter. */
export const adapter: ServerAdapter = {
  runtime: "deno",
  upgradeWebSocket: upgrade,
  clientAddress: (c) => getConnInfo(c).remote.address,
  listen(app, { port, hostname, pingSeconds }) {
    idleTimeout = Math.max(1, Math.round(pingSeconds));
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
        }, app.fetch);
      } catch (err) {
        reject(err);
      }
    });
  },
};
