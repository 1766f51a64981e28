/**
 * The reflector's requests to one collection: a list page (L1/L2) and one watch connection
 * (W*, S*), each turned into the {@link Outcome}s the state machine steps on. No protocol
 * decisions here: which request, with which resourceVersion, and what an outcome means are
 * machine.ts's; the driver (reflector.ts) steps them.
 * @module
 */
import { concatBytes } from "../bytes.ts";
import * as v from "valibot";
import type { KubeClient, Query } from "../kube/client.ts";
import { errorFromResponse } from "../kube/status.ts";
import type { Clock } from "./clock.ts";
import type { Connection } from "./connection.ts";
import type { WatchDecoder } from "./decode.ts";
import type { Outcome } from "./machine.ts";
import type { ReflectorMetrics } from "./metrics.ts";
import { NdjsonError, ndjsonValues } from "./ndjson.ts";
import type { JsonPruner } from "./prune.ts";
import { type KubeObject, ListPageSchema } from "./types.ts";

/** What list and watch requests share: the collection, how a connection is made, where bytes are counted. */
export interface CollectionRequests<T extends KubeObject> {
  client: KubeClient;
  path: string;
  metrics: ReflectorMetrics;
  decoder: WatchDecoder<T>;
  clock: Clock;
  /** A connection for one request, with the reflector's timers. */
  connection(signal: AbortSignal, what: "list" | "watch"): Connection;
  /** Longest accepted watch line. */
  maxLineBytes: number;
  /** Cuts watch lines at the byte level (prune.ts). */
  pruner: JsonPruner | undefined;
  /** Cuts list pages at the byte level (`items.*.…` paths). */
  listPruner: JsonPruner | undefined;
}

/** One list page as an outcome (`page` or `list-failed`); undefined when `signal` aborted it. */
export async function listPage<T extends KubeObject>(io: CollectionRequests<T>, query: Query, signal: AbortSignal): Promise<Outcome<T> | undefined> {
  try {
    const body = await getJson(io, query, signal);
    const parsed = v.safeParse(ListPageSchema, body);
    if (!parsed.success) throw new Error(`invalid list response: ${v.summarize(parsed.issues)}`);
    io.metrics.listPages++;
    const items: T[] = [];
    for (const raw of parsed.output.items) {
      const obj = io.decoder.object(raw);
      if (obj) items.push(obj);
    }
    const { resourceVersion, continue: cont } = parsed.output.metadata;
    return { type: "page", items, resourceVersion, continue: cont || undefined };
  } catch (err) {
    if (signal.aborted) return undefined;
    return { type: "list-failed", error: err };
  }
}

/** GET a JSON document, guarded by the inactivity timer (a stalled list must not hang forever). */
async function getJson<T extends KubeObject>(io: CollectionRequests<T>, query: Query, signal: AbortSignal): Promise<unknown> {
  const conn = io.connection(signal, "list");
  try {
    const res = await conn.connect(io.client.request({ path: io.path, query, signal: conn.signal }));
    if (!res.ok) throw await errorFromResponse(res, `GET ${io.path}`);
    const all = await readBody(res, conn, io.metrics);
    // The page as one array we own: pruned in place (items.*.… paths), then only the kept bytes are decoded.
    const kept = io.listPruner ? io.listPruner.pruneInPlace(all) : all.length;
    return JSON.parse(new TextDecoder().decode(kept === all.length ? all : all.subarray(0, kept)));
  } catch (err) {
    throw conn.translate(err);
  } finally {
    conn.dispose();
  }
}

/**
 * The whole body as one Uint8Array. With a Content-Length the chunks are read
 * straight into one array of that size (no chunk list, no second copy); else
 * (or if the body turns out longer) collected and joined.
 */
async function readBody(res: Response, conn: Connection, metrics: ReflectorMetrics): Promise<Uint8Array> {
  const reader = (res.body ?? new Response("").body!).getReader();
  const declared = Number(res.headers.get("content-length") ?? NaN);
  let buf = Number.isSafeInteger(declared) && declared > 0 && declared <= 1 << 30 ? new Uint8Array(declared) : undefined;
  const chunks: Uint8Array[] = [];
  let length = 0;
  // Cancel the reader on abort too: not every runtime ends a pending body read when the request aborts.
  const onAbort = () => reader.cancel(conn.signal.reason).catch(() => {});
  conn.signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (conn.signal.aborted) throw conn.translate(conn.signal.reason);
      if (done) break;
      conn.touch();
      metrics.bytes += value.length;
      if (buf && length + value.length <= buf.length) buf.set(value, length);
      else {
        if (buf) {
          chunks.push(buf.subarray(0, length)); // longer than declared: fall back to collecting
          buf = undefined;
        }
        chunks.push(value);
      }
      length += value.length;
    }
  } finally {
    conn.signal.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
  if (buf) return length === buf.length ? buf : buf.subarray(0, length);
  if (chunks.length === 1) return new Uint8Array(chunks[0]!); // a copy (a Node Buffer's slice() is a view): pruning writes into it
  return concatBytes(chunks, length);
}

/**
 * One watch connection (W1; from `initialWatch` a streaming list, S1, whose end marker turns it
 * into a normal watch on the same stream), read one line at a time: {@link WatchStream.next} gives
 * each line's outcome and finally the one that ends the connection. Its connection's idle timer
 * counts only time spent waiting for the server: the driver pauses it while the consumer holds an
 * event, so a slow consumer never looks like a dead connection.
 */
export class WatchStream<T extends KubeObject> {
  readonly #io: CollectionRequests<T>;
  readonly #query: Query;
  /** The reflector's run: aborted means stop, not a failure. */
  readonly #signal: AbortSignal;
  readonly #conn: Connection;
  readonly #hooks: { connected(): void; proven(): void };
  readonly #started: number;
  #lines: AsyncGenerator<unknown, void, undefined> | undefined;
  #events = 0;
  /** The server answered 200: silence after this is not a failure to connect. */
  #connected = false;
  /** The first data or bookmark: this connection works. */
  #proven = false;

  constructor(
    io: CollectionRequests<T>,
    query: Query,
    signal: AbortSignal,
    /** The streaming list's deadline (S5), if this is one. */
    deadlineMs: number | undefined,
    hooks: { connected(): void; proven(): void },
  ) {
    this.#io = io;
    this.#query = query;
    this.#signal = signal;
    this.#hooks = hooks;
    this.#conn = io.connection(signal, "watch");
    if (deadlineMs !== undefined) this.#conn.deadline(deadlineMs);
    this.#started = io.clock.now();
    io.metrics.watches++;
  }

  /** The next line's outcome, or the outcome that ends the connection; undefined when the run was stopped. */
  async next(): Promise<Outcome<T> | undefined> {
    const io = this.#io;
    const conn = this.#conn;
    try {
      if (this.#lines === undefined) {
        const res = await conn.connect(io.client.request({ path: io.path, query: this.#query, signal: conn.signal }));
        if (!res.ok) return { type: "http-error", error: await errorFromResponse(res, `GET ${io.path}?watch`) };
        this.#connected = true;
        this.#hooks.connected();
        if (!res.body) return this.#ended();
        this.#lines = ndjsonValues(res.body, {
          signal: conn.signal,
          maxLineBytes: io.maxLineBytes,
          prune: io.pruner,
          onChunk: (n) => {
            io.metrics.bytes += n;
            conn.touch();
          },
        });
      }
      const line = await this.#lines.next();
      if (line.done) return this.#ended();
      this.#events++;
      io.metrics.lastEventTime = io.clock.now();
      const event = io.decoder.event(line.value, this.#events);
      if (!this.#proven && event.type !== "ERROR") {
        this.#proven = true;
        this.#hooks.proven();
      }
      return { type: "event", event };
    } catch (err) {
      if (this.#signal.aborted) return undefined;
      const connected = this.#connected;
      if (conn.expired === "connect") return { type: "failed", cause: "network", error: conn.signal.reason, connected };
      if (conn.expired) return { type: "failed", cause: "idle", error: conn.signal.reason, connected, deadline: conn.expired === "deadline" };
      if (err instanceof NdjsonError) {
        io.metrics.decodeErrors++;
        return { type: "failed", cause: "decode", error: err, connected };
      }
      return { type: "failed", cause: "network", error: err, connected };
    }
  }

  /** The streaming list reached its end marker: its deadline no longer applies (S5). */
  synced(): void {
    this.#conn.deadline(undefined);
  }

  /** The consumer holds an event: not a silent server. */
  pause(): void {
    this.#conn.pause();
  }

  resume(): void {
    this.#conn.resume();
  }

  /** Ends the connection and its line reader. */
  async close(): Promise<void> {
    const lines = this.#lines;
    this.#lines = undefined;
    try {
      await lines?.return(undefined);
    } finally {
      this.#conn.dispose();
    }
  }

  #ended(): Outcome<T> {
    return { type: "ended", events: this.#events, ms: this.#io.clock.now() - this.#started };
  }
}
