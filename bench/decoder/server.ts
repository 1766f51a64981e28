/**
 * The benchmark's fake API server: a separate Node process (so it never shares
 * an event loop with the consumer under test), the same for every consumer
 * runtime. It pre-generates N watch events and serves
 *
 * - `GET {BENCH_PATH}?watch=1|true` — all N events as one chunked response in
 *   64 KiB writes (with backpressure), then the end of the response;
 * - `GET {BENCH_PATH}` — an empty list page (`resourceVersion` "1") for the reflector;
 * - `GET /meta` — `{events, bytes, checksum, nonAscii}` of the stream.
 *
 * Start: `node --import tsx bench/decoder/server.ts --events 20000`. When listening it
 * prints one JSON line `{"url":…,"events":…,…}` on stdout. It exits when its
 * stdin closes (the parent died or let go of it), on SIGTERM/SIGINT, or on `POST /quit`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import process from "node:process";
import { serveChild } from "../lib/child-server.ts";
import { BENCH_PATH, CHUNK_BYTES, encodeNdjson, generateEvents } from "../lib/data.ts";

/** What the server prints once it listens, and serves on `/meta`. */
export interface ServerMeta {
  url: string;
  events: number;
  bytes: number;
  checksum: number;
  nonAscii: number;
  generateMs: number;
  pid: number;
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const events = Number(argValue("--events") ?? process.env.BENCH_EVENTS ?? 20_000);
if (!Number.isInteger(events) || events <= 0) throw new Error(`bench server: bad --events ${events}`);

const t0 = performance.now();
const generated = generateEvents(events);
const body = encodeNdjson(generated.lines);
generated.lines.length = 0; // only the bytes are needed from here on
const generateMs = Math.round(performance.now() - t0);
const chunks: Buffer[] = [];
for (let at = 0; at < body.length; at += CHUNK_BYTES) {
  chunks.push(Buffer.from(body.buffer, body.byteOffset + at, Math.min(CHUNK_BYTES, body.length - at)));
}

const LIST = JSON.stringify({
  apiVersion: "serving.knative.dev/v1",
  kind: "ServiceList",
  metadata: { resourceVersion: "1" },
  items: [],
});

let meta: ServerMeta | undefined;

async function stream(res: ServerResponse): Promise<void> {
  res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache, private" });
  let closed = false;
  res.once("close", () => {
    closed = true;
  });
  for (const chunk of chunks) {
    if (closed) return;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!closed) res.end();
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (req.method === "GET" && url.pathname === BENCH_PATH) {
    const watch = url.searchParams.get("watch");
    if (watch === "1" || watch === "true") {
      stream(res).catch((err) => {
        console.error("bench server: stream failed:", err);
        res.destroy();
      });
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(LIST) });
    res.end(LIST);
    return;
  }
  if (req.method === "GET" && url.pathname === "/meta") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(meta));
    return;
  }
  if (req.method === "POST" && url.pathname === "/quit") {
    res.end("bye\n", () => shutdown(0));
    return;
  }
  res.writeHead(404, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 }));
}

const shutdown = serveChild(handle, (url) => {
  meta = {
    url,
    events,
    bytes: body.length,
    checksum: generated.checksum,
    nonAscii: generated.nonAscii,
    generateMs,
    pid: process.pid,
  };
  return meta;
});
