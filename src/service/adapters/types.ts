/**
 * What a runtime adapter gives the service: Hono's `upgradeWebSocket` for that runtime, the peer
 * address, a WebSocket as a sink with backpressure (`socket`), protocol keep-alive (`keepAlive`),
 * and a way to listen. The adapters are the only runtime-specific code of the service: nothing
 * else reads `WSContext.raw` or asks which runtime it is on.
 * @module
 */
import type { Context } from "hono";
import type { UpgradeWebSocket, WSContext } from "hono/ws";
import { runtimeName, type RuntimeName } from "../../runtime.ts";

/** A listening server. */
export interface ListeningServer {
  /** e.g. `http://127.0.0.1:8080` */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections and ends the open ones. */
  close(): Promise<void>;
}

/** A web-standard request handler; `env` is the runtime's second argument (Hono's `app.fetch` takes it). */
export type FetchHandler = (req: Request, env?: unknown) => Response | Promise<Response>;

/** Where to listen. */
export interface ListenOptions {
  /** 0 picks a free port. */
  port: number;
  hostname: string;
}

/** How an adapter treats WebSockets; fixed when it is created. */
export interface AdapterOptions {
  /**
   * Hard cap on incoming WebSocket message size enforced by the runtime while frames arrive (Node's
   * `ws` maxPayload, Bun's maxPayloadLength: close 1009). Deno has none: its messages are checked
   * against the service's own limit only once whole, however large they grew. Default 64 KiB.
   */
  maxPayloadBytes?: number;
  /** WebSocket ping period (s): the runtime (Deno, Bun) or {@link ServerAdapter.keepAlive} (Node) closes a peer that stops answering. Default 30. */
  pingSeconds?: number;
}

/** What one `send` did: `dropped` means the runtime discarded the frame (Bun past its backpressure limit). */
export type SendResult = "ok" | "closed" | "dropped";

/** One open WebSocket as the service writes to it. */
export interface SocketSink {
  send(text: string): SendResult;
  /**
   * More than `bytes` are queued in the runtime, not yet written to the network. Never false
   * while more are queued (the slow-consumer rules rely on it); an adapter whose runtime charges
   * for every read of the amount may answer from an upper bound while that bound is at most `bytes`.
   */
  above(bytes: number): boolean;
  /**
   * Resolves once at most `belowBytes` are queued, the socket closed, or `signal` aborted. Node
   * and Bun wake on their drain event; Deno gives none, so its adapter re-checks every 10 ms.
   */
  drained(belowBytes: number, signal: AbortSignal): Promise<void>;
}

/**
 * A streamed response body written straight to the runtime's own response (Node: the
 * `ServerResponse`, with no web `ReadableStream` and no read promise per write), for SSE and the
 * Connect Watch. The handler that asked for it returns a bodiless `Response` whose status and
 * headers (after every middleware) are the ones sent; what it writes before that is held and sent
 * after the head.
 */
export interface DirectBody {
  /** Queues `bytes` (on Node corked until the turn ends, like WebSocket frames); false once closed. */
  write(bytes: Uint8Array): boolean;
  /** More than `bytes` are queued in the runtime, not yet written to the network. */
  above(bytes: number): boolean;
  /** Resolves once at most `belowBytes` are queued, the body closed, or `signal` aborted. */
  drained(belowBytes: number, signal: AbortSignal): Promise<void>;
  /** `fn` runs once when the client leaves or the body ends. */
  onClose(fn: () => void): void;
  end(): void;
}

/** One runtime's server plumbing. */
export interface ServerAdapter {
  readonly runtime: RuntimeName;
  /**
   * The runtime's server sends a response's headers only with its first body byte (Bun): a
   * stream whose headers must arrive at once writes a byte first (the sandbox's leading newline).
   */
  readonly headersWaitForBody: boolean;
  readonly upgradeWebSocket: UpgradeWebSocket<unknown>;
  clientAddress(c: Context): string | undefined;
  /** `ws` (from this adapter's `upgradeWebSocket`) as a sink. */
  socket(ws: WSContext<unknown>): SocketSink;
  /**
   * Protocol pings every `everyMs` where the runtime sends none (Node's `ws`): a peer that missed
   * the previous ping is cut; pinging stops when the socket closes. A no-op where the runtime
   * pings by itself.
   */
  keepAlive(ws: WSContext<unknown>, everyMs: number): void;
  /**
   * A {@link DirectBody} for the response to `c`, where the runtime's server can take one (Node);
   * undefined elsewhere: the caller streams a `ReadableStream` body.
   */
  directBody?(c: Context): DirectBody | undefined;
  listen(fetch: FetchHandler, options: ListenOptions): Promise<ListeningServer>;
}

/** Defaults of {@link AdapterOptions}. */
export const ADAPTER_DEFAULTS: Required<AdapterOptions> = { maxPayloadBytes: 64 * 1024, pingSeconds: 30 };

/**
 * Creates the adapter of the runtime we are on (only that runtime's modules are imported). Each
 * call gives an adapter of its own: no state is shared between two servers.
 */
export async function loadAdapter(options: AdapterOptions = {}): Promise<ServerAdapter> {
  const mod = await import(`./${runtimeName()}.ts`) as { createAdapter(options: Required<AdapterOptions>): ServerAdapter };
  return mod.createAdapter({ ...ADAPTER_DEFAULTS, ...options });
}

/** `host` as it goes into a URL. */
export function urlHost(hostname: string): string {
  const h = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" ? "[::1]" : hostname;
  return h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
}

/** How often the Deno sink re-checks its buffer (Deno's WebSocket has no drain event). */
export const DRAIN_POLL_MS = 10;
