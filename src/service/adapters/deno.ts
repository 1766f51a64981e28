/**
 * Deno: `Deno.serve` with `hono/deno`'s WebSocket upgrade (Deno pings and closes a silent peer
 * itself: `idleTimeout`).
 *
 * What Deno does not let an adapter bound (no option of `Deno.upgradeWebSocket` or `Deno.serve`;
 * the frames never reach JavaScript before a message is whole): the size of a fragmented message
 * while it is assembled (`maxPayloadBytes` is not applied here), unmasked client frames, close
 * codes for protocol errors, and the time a client may take to send its request headers. Measured
 * in docs/operations.md, "Runtime limits and hardening"; the image runs Node because of them.
 * Deno's WebSocket has no drain event either: {@link SocketSink.drained} re-checks every 10 ms.
 * @module
 */
import { getConnInfo, upgradeWebSocket } from "hono/deno";
import type { UpgradeWebSocket, WSContext } from "hono/ws";
import { type AdapterOptions, DRAIN_POLL_MS, type ServerAdapter, type SocketSink, urlHost } from "./types.ts";

/** The Deno adapter. */
export function createAdapter({ pingSeconds }: Required<AdapterOptions>): ServerAdapter {
  // Deno pings and closes a peer with no pong within `idleTimeout` seconds.
  const idleTimeout = Math.max(1, Math.round(pingSeconds));
  const upgrade: UpgradeWebSocket<unknown> = (createEvents, options) =>
    // deno-lint-ignore no-explicit-any
    (upgradeWebSocket as any)(createEvents, { idleTimeout, ...(options as object | undefined) });
  return {
    runtime: "deno",
    upgradeWebSocket: upgrade,
    clientAddress: (c) => getConnInfo(c).remote.address,
    socket: (ws) => denoSocket(ws),
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

function denoSocket(ws: WSContext<unknown>): SocketSink {
  const raw = ws.raw as WebSocket | undefined;
  const open = () => (raw?.readyState ?? ws.readyState) === 1;
  const buffered = () => raw?.bufferedAmount ?? 0;
  return {
    send(text) {
      if (!open()) return "closed";
      ws.send(text);
      return "ok";
    },
    bufferedAmount: buffered,
    async drained(below, signal) {
      // A poll of at most 10 ms; an abort is seen at the next one.
      while (buffered() > below && open() && !signal.aborted) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
    },
  };
}
