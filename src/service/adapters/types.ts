/**
 * What a runtime adapter gives the service: Hono's `upgradeWebSocket` for that
 * runtime, the peer address, and a way to listen. The adapters are the only
 * runtime-specific code of the service; each is a few lines.
 * @module
 */
import type { Context, Hono } from "hono";
import type { UpgradeWebSocket } from "hono/ws";

/** A listening server. */
export interface ListeningServer {
  /** e.g. `http://127.0.0.1:8080` */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections and ends the open ones. */
  close(): Promise<void>;
}

/** Listening options. */
export interface ListenOptions {
  port: number;
  hostname: string;
  /**
   * Hard cap on incoming WebSocket message size enforced by the runtime while frames arrive (Node's
   * `ws` maxPayload, Bun's maxPayloadLength: close 1009). Deno has none: its messages are checked
   * against our own limit only once whole (app.ts), however large they grew.
   */
  maxPayloadBytes: number;
  /** WebSocket ping period (s): the runtime (Deno, Bun) or the service (Node) closes a peer that stops answering. */
  pingSeconds: number;
}

/** One runtime's server plumbing. */
export interface ServerAdapter {
  readonly runtime: "deno" | "bun" | "node";
  readonly upgradeWebSocket: UpgradeWebSocket<unknown>;
  clientAddress(c: Context): string | undefined;
  listen(app: Hono, options: ListenOptions): Promise<ListeningServer>;
}

/** Loads the adapter of the runtime we are on (only that runtime's modules are imported). */
export async function loadAdapter(): Promise<ServerAdapter> {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const name = g.Deno?.version?.deno ? "deno" : g.Bun ? "bun" : "node";
  const mod = await import(`./${name}.ts`) as { adapter: ServerAdapter };
  return mod.adapter;
}

/** `host` as it goes into a URL. */
export function urlHost(hostname: string): string {
  const h = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" ? "[::1]" : hostname;
  return h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
}
