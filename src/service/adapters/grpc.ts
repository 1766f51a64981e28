/**
 * gRPC proper (HTTP/2 cleartext, "h2c") for Flyte's AppService, on a port of its own
 * (`--grpc-port`). gRPC needs HTTP/2 and response trailers, which the fetch `Response` behind the
 * Hono routes cannot carry, so this listener is `node:http2` with `@connectrpc/connect`'s
 * universal handlers (the small request/response bridge is below; `@connectrpc/connect-node`,
 * which has one too, declares Node >= 22); it serves Connect and gRPC-Web too, and gRPC server
 * reflection (`connect/reflection.ts`, a bidirectional stream: HTTP/2 only). Tested on Node,
 * Deno and Bun (their `node:http2`).
 * @module
 */
import { constants as h2constants, createServer, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2";
import { gunzip, gzip } from "node:zlib";
import { Code, ConnectError, createConnectRouter } from "@connectrpc/connect";
import type { Compression, UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { AppServiceHandlers } from "../connect/handlers.ts";
import { checkBinaryBody, isBinaryContentType, readIterableUpTo } from "../connect/input.ts";
import { type Clock, realClock } from "../../watch/clock.ts";
import { type ListeningServer, urlHost } from "./types.ts";

/**
 * How long the gRPC listener waits for a peer (issue 24: idle, preface-only and half-sent
 * connections stayed open forever). `idleMs`: a connection with no open stream — never used, only
 * a preface, or done — gets a GOAWAY; a Watch stream, however quiet, keeps its connection. `bodyMs`:
 * a unary or server-streaming request's body must be complete by then, else the stream is reset
 * (client- and bidi-streaming ones, reflection, send as they go).
 */
export interface GrpcTimeouts {
  idleMs: number;
  bodyMs: number;
}

const NGHTTP2_CANCEL = h2constants.NGHTTP2_CANCEL;

/** Defaults of {@link GrpcTimeouts}: 30 s each (docs/operations.md). */
export const GRPC_TIMEOUTS: GrpcTimeouts = Object.freeze({ idleMs: 30_000, bodyMs: 30_000 });

/** Options of {@link listenGrpc}. */
export interface GrpcListenOptions {
  port: number;
  hostname: string;
  timeouts?: Partial<GrpcTimeouts>;
  /** Time for the timeouts (tests: a `VirtualClock`; timer purposes `grpc-idle`, `grpc-body`). */
  clock?: Clock;
}

/**
 * gzip for request and response messages (what gRPC clients may ask for; identity is always on).
 * `new Uint8Array(buffer)` copies into a fresh `ArrayBuffer`: a `Buffer`'s own `.buffer` is typed
 * `ArrayBuffer | SharedArrayBuffer` under Deno's Node types, which a Deno consumer's `deno check`
 * rejects (issue 24, item 1).
 */
const GZIP: Compression = {
  name: "gzip",
  compress: (bytes) =>
    new Promise((resolve, reject) => gzip(bytes, (err, out) => (err ? reject(err) : resolve(new Uint8Array(out))))),
  decompress: (bytes, readMaxBytes) =>
    new Promise((resolve, reject) => {
      if (bytes.byteLength === 0) return resolve(new Uint8Array(0));
      gunzip(bytes, { maxOutputLength: Math.max(1, Math.min(readMaxBytes, 2 ** 31 - 1)) }, (err, out) => {
        if (err) {
          const tooBig = (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE";
          reject(new ConnectError(tooBig ? `message is larger than configured readMaxBytes ${readMaxBytes} after decompression` : "invalid gzip data", tooBig ? Code.ResourceExhausted : Code.InvalidArgument));
        } else resolve(new Uint8Array(out));
      });
    }),
};

/** The universal request of an HTTP/2 request: headers without pseudo-headers, the body as a stream, aborted when the stream closes. */
function universalRequest(req: Http2ServerRequest): UniversalServerRequest {
  const header = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) header.append(name, v);
  }
  const aborted = new AbortController();
  req.stream.once("close", () => aborted.abort());
  return {
    httpVersion: req.httpVersion,
    url: `http://${req.headers[":authority"] ?? "localhost"}${req.url}`,
    method: req.method,
    header,
    body: (async function* () {
      for await (const chunk of req) yield chunk instanceof Uint8Array ? chunk : new TextEncoder().encode(String(chunk));
    })(),
    signal: aborted.signal,
  };
}

const headerObject = (h: Headers | undefined): Record<string, string> => Object.fromEntries(h?.entries() ?? []);

/** Writes a universal response, waiting for the peer to read (backpressure), trailers last. */
async function sendUniversal(u: UniversalServerResponse, res: Http2ServerResponse): Promise<void> {
  if (!res.headersSent) res.writeHead(u.status, headerObject(u.header));
  if (u.body) {
    for await (const chunk of u.body) {
      if (res.destroyed || res.stream.closed) break;
      if (!res.write(chunk)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.stream.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.stream.on("close", done);
        });
      }
    }
  }
  if (res.destroyed || res.stream.closed) return;
  if (u.trailer) res.addTrailers(headerObject(u.trailer));
  res.end();
}

/** Serves `service` over gRPC, gRPC-Web and Connect on HTTP/2 cleartext, at `/` and `/internal/`. */
export function listenGrpc(service: AppServiceHandlers, options: GrpcListenOptions): Promise<ListeningServer> {
  const timeouts: GrpcTimeouts = { ...GRPC_TIMEOUTS, ...options.timeouts };
  const clock = options.clock ?? realClock;
  const router = createConnectRouter({ acceptCompression: [GZIP] });
  service.routes(router);
  // Flyte's data plane path (`/internal/…`) and the plain service path, as on the HTTP port.
  const paths = new Map<string, UniversalHandler>();
  for (const h of router.handlers) for (const prefix of ["", "/internal"]) paths.set(prefix + h.requestPath, h);
  const server = createServer((req, res) => {
    const session = req.stream.session; // a closed stream no longer knows its session
    streamOpened(session);
    res.once("close", () => streamClosed(session));
    const handler = paths.get(req.url.split("?", 1)[0] ?? "");
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    void serveOne(handler, req, res);
  });
  /** Checks a binary body the way the HTTP port does (connect/input.ts), then hands the request to connect-es. */
  const serveOne = async (handler: UniversalHandler, req: Http2ServerRequest, res: Http2ServerResponse) => {
    const u = universalRequest(req);
    let rejection: ConnectError | undefined;
    const contentType = u.header.get("content-type");
    // A client-streaming request (reflection) is read message by message by connect-es: reading
    // it whole first would wait for a client that waits for our answer.
    const clientStreams = handler.method.methodKind === "bidi_streaming" || handler.method.methodKind === "client_streaming";
    if (!clientStreams && !req.complete) {
      const deadline = clock.setTimeout(() => {
        if (!req.complete && !res.destroyed) res.stream.close(NGHTTP2_CANCEL);
      }, timeouts.bodyMs, "grpc-body");
      const clear = () => clock.clearTimeout(deadline);
      req.once("end", clear);
      res.once("close", clear);
    }
    if (u.method === "POST" && isBinaryContentType(contentType) && !clientStreams) {
      const bytes = await readIterableUpTo(u.body as AsyncIterable<Uint8Array>, service.maxMessageBytes + 64).catch(() => new Uint8Array(0));
      const checked = checkBinaryBody(contentType, u.header, bytes, handler.method.input, service.maxMessageBytes);
      rejection = checked.rejection;
      u.body = (async function* () {
        yield checked.body;
      })();
    }
    // A Watch's headers go out when it starts, not with its first message (StreamState.headersReady).
    const headersReady = (header: Headers) => {
      if (!res.headersSent && !res.destroyed) res.writeHead(200, headerObject(header));
    };
    u.contextValues = service.contextValues(req.socket?.remoteAddress ?? "unknown", { opened: false, drainTracked: false, headersReady }, rejection);
    await handler(u)
      .then((out) => sendUniversal(out, res))
      .catch((reason) => {
        // A client that went away (Aborted) is not an error of ours; anything else cuts the stream.
        if (ConnectError.from(reason).code !== Code.Aborted) console.error(`gRPC handler ${handler.method.name} failed`, reason);
        if (!res.destroyed) res.destroy();
      });
  };
  const sessions = new Set<Http2Session>();
  // Open streams and the idle timer of each connection (the request handler counts the streams:
  // the session's own "stream" event is not on every runtime's node:http2).
  const idle = new Map<Http2Session | undefined, { open: number; timer: unknown }>();
  const armIdle = (session: Http2Session, state: { open: number; timer: unknown }) => {
    state.timer = clock.setTimeout(() => {
      if (session.closed || session.destroyed) return;
      session.close(); // GOAWAY, and with no stream open the socket closes at once (a client reconnects for its next call)
    }, timeouts.idleMs, "grpc-idle");
  };
  const streamOpened = (session: Http2Session | undefined) => {
    const state = idle.get(session);
    if (!state) return;
    if (state.open++ === 0) clock.clearTimeout(state.timer);
  };
  const streamClosed = (session: Http2Session | undefined) => {
    const state = idle.get(session);
    if (state && --state.open === 0 && session) armIdle(session, state);
  };
  server.on("session", (session) => {
    sessions.add(session);
    const state = { open: 0, timer: undefined as unknown };
    idle.set(session, state);
    armIdle(session, state);
    session.once("close", () => {
      clock.clearTimeout(state.timer);
      idle.delete(session);
      sessions.delete(session);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      resolve({
        url: `http://${urlHost(options.hostname)}:${port}`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Streams were ended with `unavailable` before this; let their last frames go, then cut.
            for (const session of sessions) session.close();
            setTimeout(() => {
              for (const session of sessions) session.destroy();
            }, 1000).unref?.();
          }),
      });
    });
  });
}
