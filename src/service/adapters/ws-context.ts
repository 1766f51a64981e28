/**
 * Hono's `WSContext` over a socket that has `send`, `close` and `readyState` of its own (`ws` on
 * Node, Deno's `WebSocket`): the methods read the socket itself, so a context holds no init
 * closures and no URL — nothing of the upgrade request. Shared by the Node and Deno adapters.
 * @module
 */
import { WSContext } from "hono/ws";

/** What the context uses of the socket. */
export interface RawSocket {
  readonly readyState: number;
  readonly protocol: string;
  /** Text is all the service sends through a context (binary data would be passed on as it is). */
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** `WSContext` needs an init; {@link SocketContext} overrides everything it is used for. */
const UNUSED_INIT = { send() {}, close() {}, readyState: 3 as const };

/** See the module documentation. */
export class SocketContext extends WSContext<unknown> {
  constructor(socket: RawSocket, protocol: string | null = socket.protocol || null) {
    super(UNUSED_INIT);
    this.raw = socket;
    this.protocol = protocol;
  }
  override send(data: string | ArrayBuffer | Uint8Array): void {
    (this.raw as RawSocket).send(data as string);
  }
  override close(code?: number, reason?: string): void {
    (this.raw as RawSocket).close(code, reason);
  }
  override get readyState(): 0 | 1 | 2 | 3 {
    return (this.raw as RawSocket).readyState as 0 | 1 | 2 | 3;
  }
}
