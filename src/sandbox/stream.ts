/**
 * Pull-based response bodies. A {@link ChunkSource} produces one chunk per `next()` (a watch
 * produces one event line per chunk), and {@link streamBody} turns it into a ReadableStream
 * that only asks for the next chunk when the HTTP server has taken the previous one, so a
 * client that stops reading stops the producer instead of growing a buffer.
 * @module
 */

/** Bytes backed by a plain ArrayBuffer (what `Response` accepts). */
export type Bytes = Uint8Array<ArrayBuffer>;

/** Produces a response body chunk by chunk. */
export interface ChunkSource {
  /** The next chunk; null for a clean end; a rejection cuts the connection. */
  next(): Promise<Bytes | null>;
  /** The consumer is gone: release resources and make a pending `next()` resolve. */
  cancel(): void;
  /** Optional non-blocking `next()`: a ready chunk, null at the end, undefined if nothing is ready yet. */
  tryNext?(): Bytes | null | undefined;
}

/** Thrown by a source to break the connection abruptly. */
export class CutError extends Error {
  override readonly name = "CutError";
}

/**
 * The reason the body stream is errored with. A string rather than an Error keeps the
 * runtimes' "response stream errored" log down to one line.
 */
export const CUT_REASON = "appwatch sandbox: injected connection cut (fault)";

/** A handle to end an open body from the outside (closeWatches, dispose). */
export interface OpenBody {
  /** Ends the body cleanly. */
  end(): void;
}

const encoder = new TextEncoder();
const NEWLINE = encoder.encode("\n");

/** Encodes text once. */
export function utf8(text: string): Bytes {
  return encoder.encode(text);
}

/** A source that yields fixed chunks, then ends. */
export function sourceOf(chunks: Bytes[]): ChunkSource {
  let i = 0;
  return {
    next: () => Promise.resolve(i < chunks.length ? chunks[i++]! : null),
    tryNext: () => (i < chunks.length ? chunks[i++]! : null),
    cancel: () => {
      i = chunks.length;
    },
  };
}

/** Options of {@link streamBody}. */
export interface StreamBodyOptions {
  /** Send one "\n" first so the header block is flushed (see SandboxOptions.leadingNewline). */
  leadingNewline?: boolean;
  /** Called once when the body opens; returns the matching unregister function. */
  register?: (handle: OpenBody) => () => void;
}

/** Wraps a source into a demand-driven (highWaterMark 0) byte stream. */
export function streamBody(source: ChunkSource, options: StreamBodyOptions = {}): ReadableStream<Bytes> {
  let controller: ReadableStreamDefaultController<Bytes> | undefined;
  let finished = false;
  let padded = options.leadingNewline !== true;
  let unregister: () => void = () => {};
  const finish = (): boolean => {
    if (finished) return false;
    finished = true;
    unregister();
    return true;
  };
  const handle: OpenBody = {
    end() {
      if (!finish()) return;
      source.cancel();
      try {
        controller?.close();
      } catch {
        // Already closed or errored.
      }
    },
  };
  return new ReadableStream<Bytes>(
    {
      start(c) {
        controller = c;
        unregister = options.register?.(handle) ?? (() => {});
      },
      async pull(c) {
        if (finished) return;
        if (!padded) {
          padded = true;
          c.enqueue(NEWLINE);
          return;
        }
        let chunk: Bytes | null;
        try {
          chunk = await source.next();
        } catch {
          if (finish()) {
            source.cancel();
            c.error(CUT_REASON);
          }
          return;
        }
        if (finished) return;
        if (chunk === null) {
          finish();
          c.close();
          return;
        }
        c.enqueue(chunk);
      },
      cancel() {
        if (finish()) source.cancel();
      },
    },
    { highWaterMark: 0 },
  );
}
