/**
 * A streamed response body as the stream transports write it: SSE records and Connect Watch
 * frames alike. On Node it is the adapter's {@link DirectBody} (bytes straight to the
 * `ServerResponse`); elsewhere a {@link StreamBody}, a byte `ReadableStream` whose pulls are the
 * drain signal.
 * @module
 */
import type { DirectBody } from "./adapters/types.ts";

/** What a stream transport writes to: a {@link DirectBody}, or a {@link StreamBody}. */
export type ByteBody = Pick<DirectBody, "write" | "above" | "drained" | "end">;

/**
 * The body a stream transport writes to: the adapter's `direct` body where it gave one (the
 * response is then bodiless: `readable` is null), else a {@link StreamBody} whose `readable` is the
 * response body. `gone` runs once when the client leaves.
 */
export function openByteBody(direct: DirectBody | undefined, gone: () => void, highWaterMark: number): { bytes: ByteBody; readable: ReadableStream<Uint8Array> | null } {
  if (direct !== undefined) {
    direct.onClose(gone);
    return { bytes: direct, readable: null };
  }
  const stream = new StreamBody(gone, highWaterMark);
  return { bytes: stream, readable: stream.readable };
}

/**
 * A byte body as a `ReadableStream` (runtimes without a {@link DirectBody}), holding up to
 * `highWaterMark` bytes for a client that is not reading; `cancelled` runs when the client leaves.
 *
 * @example
 * ```ts
 * import { StreamBody } from "./stream-body.ts";
 * const body = new StreamBody(() => {}, 1024);
 * body.write(new TextEncoder().encode("data: 1\n\n"));
 * body.end();
 * const text = await new Response(body.readable).text(); // "data: 1\n\n"
 * ```
 */
export class StreamBody implements ByteBody {
  readonly readable: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #pulled: (() => void) | undefined;
  #closed = false;

  constructor(cancelled: () => void, highWaterMark: number) {
    this.readable = new ReadableStream<Uint8Array>({
      start: (ctl) => {
        this.#controller = ctl;
      },
      pull: () => this.#wake(),
      cancel: () => {
        this.#closed = true;
        this.#wake();
        cancelled();
      },
    }, { highWaterMark, size: (chunk) => chunk.byteLength });
  }

  write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    try {
      this.#controller.enqueue(bytes);
      return true;
    } catch {
      return false; // cancelled
    }
  }

  /** Whether the queue is at the mark (the stream's own measure: `desiredSize` ≤ 0). */
  above(_bytes: number): boolean {
    return !this.#closed && (this.#controller.desiredSize ?? 0) <= 0;
  }

  drained(_below: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#closed || signal.aborted || (this.#controller.desiredSize ?? 0) > 0) return resolve();
      this.#pulled = resolve;
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#wake();
    try {
      this.#controller.close();
    } catch { /* cancelled */ }
  }

  #wake(): void {
    const wake = this.#pulled;
    this.#pulled = undefined;
    wake?.();
  }
}
