/**
 * How the Node adapter writes: {@link SocketWriter} (per-turn corking and the shared bytes of a
 * frame, for every socket of one adapter) and {@link NodeBody}, the {@link DirectBody} of a
 * `ServerResponse` (SSE and the Connect Watch), which writes through it.
 * @module
 */
import { Buffer } from "node:buffer";
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import process from "node:process";
import type { Duplex } from "node:stream";
import type { DirectBody } from "./types.ts";

/**
 * What every socket of one adapter shares for writing:
 * - the UTF-8 bytes of the last text sent: the hub hands the same frame string to each subscriber
 *   in turn; given a string, `ws` measures and encodes it again for every socket, given a Buffer it
 *   frames it as it is. One slot suffices: a broadcast sends one frame to all its sockets first.
 * - corking: a socket written to is corked until the current turn's microtasks are done (a
 *   `nextTick` queued from them runs after them), so every event of one upstream read reaches a
 *   socket in one `writev`, not one system call per event. `ws` corks and uncorks around each of
 *   its frames too; Node counts corks, so the outer one holds.
 */
export class SocketWriter {
  #text: string | undefined;
  #bytes: Buffer = Buffer.alloc(0);
  #corked: Corkable[] = [];
  readonly #uncork = () => {
    const corked = this.#corked;
    this.#corked = [];
    for (const tcp of corked) tcp.uncork();
  };

  /** The UTF-8 bytes of `text` (shared while the same string is sent). */
  bytes(text: string): Buffer {
    if (text !== this.#text) {
      this.#bytes = Buffer.from(text, "utf8");
      this.#text = text;
    }
    return this.#bytes;
  }

  /** Corks `tcp` until the end of this turn (once per turn and socket). */
  cork(tcp: Corkable): void {
    if (tcp.writableCorked > 0) return; // corked by us already (ws's own corks never outlive its send)
    if (this.#corked.length === 0) process.nextTick(this.#uncork);
    tcp.cork();
    this.#corked.push(tcp);
  }
}

/** What {@link SocketWriter.cork} needs: a TCP socket. */
type Corkable = Pick<Duplex, "writableCorked" | "cork" | "uncork">;

/**
 * An SSE body on Node's `ServerResponse` (see {@link DirectBody}): written as the WebSocket frames
 * are, corked for the turn, with the socket's own backpressure. Until {@link open} has the app's
 * status and headers, writes are held.
 */
export class NodeBody implements DirectBody {
  readonly #out: ServerResponse;
  readonly #writer: SocketWriter;
  /** Written before the head (the first frames of a stream): sent right after it. */
  #held: Uint8Array[] | undefined = [];
  #heldBytes = 0;
  #closed = false;
  /** `end()` came before the head: end right after it. */
  #endAfterOpen = false;
  #onClose: (() => void) | undefined;

  constructor(out: ServerResponse, writer: SocketWriter) {
    this.#out = out;
    this.#writer = writer;
    out.once("close", () => this.#close());
  }

  /**
   * Sends the head from the app's `res`, then what was held. False (and this body is closed) when
   * `res` is not the bodiless answer of the handler that asked for it: `res` goes out instead.
   */
  open(res: Response): boolean {
    const held = this.#held;
    if (held === undefined || this.#closed) return false;
    this.#held = undefined;
    if (res.body !== null || res.status < 200 || res.status === 204 || res.status === 304) {
      this.#close();
      return false;
    }
    const out = this.#out;
    out.writeHead(res.status, outgoingHeaders(res.headers));
    out.flushHeaders(); // the client sees the stream open now, not with its first event
    for (const bytes of held) this.write(bytes);
    if (this.#endAfterOpen) out.end();
    return true;
  }

  write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    if (this.#held !== undefined) {
      this.#held.push(bytes);
      this.#heldBytes += bytes.byteLength;
      return true;
    }
    // The socket, not the response: some Node lines (22, 24) drop a response's cork when it ends
    // while corked, and the response's own uncork then never reaches the socket.
    const tcp = this.#out.socket;
    if (tcp !== null) this.#writer.cork(tcp);
    this.#out.write(bytes);
    return true;
  }

  above(bytes: number): boolean {
    return (this.#held !== undefined ? this.#heldBytes : this.#out.writableLength) > bytes;
  }

  drained(below: number, signal: AbortSignal): Promise<void> {
    const out = this.#out;
    return new Promise<void>((resolve) => {
      const check = () => {
        if (!this.#closed && this.above(below) && !signal.aborted) return;
        out.off("drain", check);
        out.off("close", check);
        signal.removeEventListener("abort", check);
        resolve();
      };
      out.on("drain", check);
      out.once("close", check);
      signal.addEventListener("abort", check);
      check();
    });
  }

  onClose(fn: () => void): void {
    if (this.#closed) return fn();
    this.#onClose = fn;
  }

  end(): void {
    if (this.#closed) return;
    if (this.#held !== undefined) this.#endAfterOpen = true; // what was written still goes out, after the head
    else this.#out.end();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = undefined;
    const fn = this.#onClose;
    this.#onClose = undefined;
    fn?.();
  }
}

/** A fetch `Headers` as Node's (several `set-cookie` stay several). */
function outgoingHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  headers.forEach((value, key) => {
    if (key !== "set-cookie") out[key] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  return out;
}
