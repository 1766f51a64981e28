/**
 * Mounts AppService on a Hono app at `/internal/flyteidl2.app.AppService/<Method>` (where Flyte's
 * data plane serves it) and at `/flyteidl2.app.AppService/<Method>` (the control plane's path), for
 * Connect (JSON and binary) and gRPC-Web. One exception to "framing is connect-es's": the
 * Connect-protocol Watch body is written from frames encoded once per event and shared by every
 * subscriber (frames.ts, watch-body.ts: connect-es serialized each event once per stream, measured
 * in B6), on Node straight to the response as SSE is; connect-es still parses, checks and admits that request and sets its headers. gRPC-Web
 * Watch and compressed streams stay on connect-es.
 * @module
 */
import { createConnectRouter } from "@connectrpc/connect";
import { type UniversalServerResponse, universalServerRequestFromFetch, universalServerResponseToFetch } from "@connectrpc/connect/protocol";
import type { Context, Hono } from "hono";
import type { Clock } from "../../watch/clock.ts";
import type { DirectBody } from "../adapters/types.ts";
import { AppService } from "../../flyte/proto/app_service_pb.ts";
import type { AppServiceHandlers, StreamState } from "./handlers.ts";
import { checkBinaryRequest } from "./input.ts";
import { APP_SERVICE_PATH } from "./names.ts";
import { connectWatchBody, untilDrained } from "./watch-body.ts";
import type { WatchRun } from "./watch-run.ts";


/** What {@link mountConnect} is given besides the service. */
export interface MountOptions {
  /** Bytes a Watch body may hold for a client that is not reading (`--stream-buffer-bytes`). */
  bodyBufferBytes: number;
  /** Time for a Watch's `connect-timeout-ms` deadline (the app's clock). */
  clock: Clock;
  clientAddress?: (c: Context) => string | undefined;
  /** The adapter's direct body for a response, where it has one (Node): a Watch is written to it. */
  directBody?: (c: Context) => DirectBody | undefined;
}

/**
 * Mounts AppService on `app` at both path prefixes, for Connect (JSON and binary) and gRPC-Web;
 * gRPC proper needs HTTP/2 trailers, which a fetch `Response` cannot carry (see `adapters/grpc.ts`).
 */
export function mountConnect(
  app: Hono,
  service: AppServiceHandlers,
  options: MountOptions,
): void {
  const { bodyBufferBytes, clock, clientAddress, directBody } = options;
  const router = createConnectRouter({ connect: true, grpcWeb: true, grpc: false });
  service.routes(router);
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  for (const prefix of ["/internal", ""]) {
    app.on(["POST", "GET"], `${prefix}${APP_SERVICE_PATH}/:method`, async (c) => {
      const handler = handlers.get(`${APP_SERVICE_PATH}/${c.req.param("method")}`);
      const method = AppService.methods.find((m) => m.name === c.req.param("method"));
      if (!handler || !method) return c.json({ code: "unimplemented", message: `${c.req.path} is not a method of ${AppService.typeName}` }, 404);
      const checked = await checkBinaryRequest(c.req.raw, method.input, service.maxMessageBytes);
      const request = universalServerRequestFromFetch(checked.request, {});
      let handedOff: WatchRun | undefined;
      let headersReady!: (header: Headers) => void;
      const started = new Promise<{ header: Headers }>((resolve) => (headersReady = (header) => resolve({ header: new Headers(header) })));
      const stream: StreamState = { opened: false, drainTracked: true, handoff: (watch) => (handedOff = watch), headersReady };
      request.contextValues = service.contextValues(clientAddress?.(c) ?? "unknown", stream, checked.rejection);
      const pending = handler(request);
      // The body drained (its end-stream frame taken): the stream is gone from the registry.
      const drained = () => stream.release?.();
      // A Watch (gRPC-Web, compressed Connect) whose headers are set before its first message:
      // answer with them now and let connect-es's body follow (StreamState.headersReady).
      const first = await Promise.race([pending.then((universal) => ({ universal })), started]);
      if ("header" in first) return new Response(untilDrained(laterBody(pending), drained), { status: 200, headers: first.header });
      const universal = first.universal;
      if (handedOff !== undefined) {
        // connect-es's body is only the end-stream frame of the generator it saw return: dropped.
        const rest = universal.body;
        if (rest !== undefined && Symbol.asyncIterator in rest) void (async () => { for await (const _ of rest); })().catch(() => {});
        const body = connectWatchBody(handedOff, { requestSignal: request.signal, done: drained, highWaterBytes: bodyBufferBytes, clock }, directBody?.(c));
        return new Response(body, { status: universal.status, headers: universal.header });
      }
      const response = universalServerResponseToFetch(universal);
      return response.body ? new Response(untilDrained(response.body, drained), response) : response;
    });
  }
}

/** The body of the universal response `pending` will give, as a stream available at once. */
function laterBody(pending: Promise<UniversalServerResponse>): ReadableStream<Uint8Array> {
  const body = pending.then((universal) => universalServerResponseToFetch(universal).body);
  body.catch(() => {}); // read (and its failure seen) in pull; never pulled when the client left first
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      reader ??= (await body)?.getReader();
      const next = reader ? await reader.read() : { done: true as const, value: undefined };
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await (reader ?? (await body)?.getReader())?.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
