/**
 * Newline-delimited JSON over a byte stream: the framing of Kubernetes watch
 * responses. Lines are split on raw bytes (so a chunk boundary may fall
 * anywhere, even inside a UTF-8 sequence) and only complete lines are decoded,
 * which is both the most portable and the fastest approach measured on
 * Deno, Bun and Node (B1 in BENCHMARKS.md).
 * @module
 */

import { concatBytes } from "../bytes.ts";
import { JsonPruner, type PrunePaths } from "./prune.ts";

export type { PrunePaths } from "./prune.ts";

/** Default maximum line size: 16 MiB (a single huge object is legal, an endless line is not). */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Why a stream could not be decoded. */
export type NdjsonErrorKind = "line-too-long" | "malformed-json";

/** A framing or JSON error, with enough context to debug it (line number, a short excerpt). */
export class NdjsonError extends Error {
  override readonly name = "NdjsonError";
  readonly kind: NdjsonErrorKind;
  /** 1-based number of the offending line in this stream. */
  readonly line: number;
  /** The first bytes of the offending line (at most 200 characters). */
  readonly excerpt: string;

  constructor(kind: NdjsonErrorKind, line: number, excerpt: string, detail: string) {
    super(`NDJSON ${kind} at line ${line}: ${detail}${excerpt ? ` (starts with ${JSON.stringify(excerpt)})` : ""}`);
    this.kind = kind;
    this.line = line;
    this.excerpt = excerpt;
  }
}

/** Options for {@link ndjsonLines} and {@link ndjsonValues}. */
export interface NdjsonOptions {
  /** Longest accepted line in bytes (default 16 MiB). */
  maxLineBytes?: number;
  /** Called with every chunk's byte length as it arrives (byte counters, inactivity timers). */
  onChunk?: (bytes: number) => void;
  /**
   * Stops reading: the reader is cancelled, so a pending read ends at once even
   * where aborting the request does not reach the body stream.
   */
  signal?: AbortSignal;
  /**
   * Key paths removed from every line at the byte level, before it is decoded
   * (see `prune.ts`): e.g. `[["object", "metadata", "managedFields"], ["object", "spec"]]`
   * for watch events whose consumer never reads those. Lines that are not
   * well-formed JSON objects are passed on unchanged.
   */
  prune?: PrunePaths | JsonPruner;
}

const NEWLINE = 10;
const CR = 13;

/**
 * Yields each non-blank line of `body` as a string (CRLF and a missing final
 * newline accepted). The reader is cancelled on every early exit path
 * (consumer `break`, thrown error, oversize line), so the connection closes.
 */
export function ndjsonLines(
  body: ReadableStream<Uint8Array>,
  options: NdjsonOptions = {},
): AsyncGenerator<string, void, undefined> {
  return frames(body, options, false) as AsyncGenerator<string, void, undefined>;
}

/**
 * The one loop behind {@link ndjsonLines} (`parse` false: yields strings) and
 * {@link ndjsonValues} (`parse` true: yields `JSON.parse` results) — one
 * generator per stream, not two stacked.
 */
async function* frames(
  body: ReadableStream<Uint8Array>,
  options: NdjsonOptions,
  parse: boolean,
): AsyncGenerator<unknown, void, undefined> {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const onChunk = options.onChunk;
  const decoder = new TextDecoder();
  const prune = options.prune;
  const pruner = prune === undefined ? undefined : prune instanceof JsonPruner ? prune : prune.length > 0 ? new JsonPruner(prune) : undefined;
  const reader = body.getReader();
  // Pieces of a line that spans chunks; joined once, when its newline arrives,
  // so a multi-megabyte line costs O(size), not O(size²).
  let parts: Uint8Array[] = [];
  let partsLength = 0;
  let lineNumber = 0;
  let values = 0; // non-blank lines: the line numbers of JSON errors
  let finished = false;
  let stopped = false;
  const onAbort = () => {
    stopped = true;
    reader.cancel(options.signal?.reason).catch(() => {});
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener("abort", onAbort, { once: true });

  const take = (tail: Uint8Array): Uint8Array => {
    if (parts.length === 0) return tail;
    parts.push(tail);
    const joined = concatBytes(parts, partsLength + tail.length);
    parts = [];
    partsLength = 0;
    return joined;
  };
  const tooLong = (length: number): NdjsonError =>
    new NdjsonError(
      "line-too-long",
      lineNumber + 1,
      "",
      `line exceeds ${maxLineBytes} bytes (at least ${length} bytes without a newline)`,
    );
  const parsed = (line: string): unknown => {
    values++;
    try {
      return JSON.parse(line);
    } catch (err) {
      throw new NdjsonError("malformed-json", values, line.slice(0, 200), (err as Error).message);
    }
  };
  const text = (bytes: Uint8Array): string | undefined => {
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === CR) end--;
    if (end === 0) return undefined;
    const line = end === bytes.length ? bytes : bytes.subarray(0, end);
    return pruner ? pruner.pruneToString(line, decoder) : decoder.decode(line);
  };

  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        // A cancelled read also ends with done: that is an abort, not the end of the stream.
        if (stopped) throw options.signal?.reason ?? new Error("aborted");
        finished = true;
        break;
      }
      onChunk?.(value.length);
      let start = 0;
      let nl: number;
      while ((nl = value.indexOf(NEWLINE, start)) !== -1) {
        if (partsLength + (nl - start) > maxLineBytes) throw tooLong(partsLength + nl - start);
        const line = text(take(value.subarray(start, nl)));
        lineNumber++;
        start = nl + 1;
        if (line !== undefined && !isBlank(line)) yield parse ? parsed(line) : line;
      }
      if (start < value.length) {
        // Copy: some runtimes reuse chunk buffers (and a Node Buffer's `slice` is a view, not a copy).
        const rest = new Uint8Array(value.subarray(start));
        partsLength += rest.length;
        if (partsLength > maxLineBytes) throw tooLong(partsLength);
        parts.push(rest);
      }
    }
    if (partsLength > 0) {
      const line = text(take(new Uint8Array(0)));
      lineNumber++;
      if (line !== undefined && !isBlank(line)) yield parse ? parsed(line) : line;
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function isBlank(line: string): boolean {
  // Fast path: a JSON line starts with "{" or "[" (no trim allocation).
  const c = line.charCodeAt(0);
  if (c === 123 || c === 91) return false;
  return line.trim() === "";
}

/**
 * Yields each line of `body` parsed as JSON. A malformed line throws an
 * {@link NdjsonError} with its line number and an excerpt; the caller decides
 * whether to restart (the watcher resumes from its last good resourceVersion).
 */
export function ndjsonValues(
  body: ReadableStream<Uint8Array>,
  options: NdjsonOptions = {},
): AsyncGenerator<unknown, void, undefined> {
  return frames(body, options, true);
}
