/**
 * Flyte's `flyteidl2.app.AppService` over Connect (JSON and binary protobuf) and gRPC-Web,
 * mounted in the same Hono app at `/internal/flyteidl2.app.AppService/<Method>` (where Flyte's
 * data plane serves it) and at `/flyteidl2.app.AppService/<Method>` (the control plane's path).
 * Framing, codecs, errors and GET requests are `@connectrpc/connect`'s; this module only maps the
 * three read RPCs onto {@link AppK8sClient} — List, Get, and Watch (snapshot as `createEvent`s,
 * then live events) — and answers the write RPCs with `unimplemented` (appwatch is read-only).
 * One exception to "framing is connect-es's": the Connect-protocol Watch body from
 * {@link mountConnect} is written from frames encoded once per event and shared by every subscriber
 * (connect-frames.ts: connect-es serialized each event once per stream, measured in B6); connect-es
 * still parses, checks and admits that request and sets its headers. gRPC-Web Watch, compressed
 * streams (none today: the router accepts no compression) and the gRPC listener stay on connect-es.
 * See docs/flyte-compatibility.md for where this differs from Flyte, and why.
 * @module
 */
import { create, fromJson, type JsonValue, type Message, toJson } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import { universalServerRequestFromFetch, universalServerResponseToFetch } from "@connectrpc/connect/protocol";
import { contentTypeStreamProto, headerContentType, headerStreamEncoding } from "@connectrpc/connect/protocol-connect";
import type { Context, Hono } from "hono";
import * as v from "valibot";
import { type AppK8sClient, AppNotFoundError, InvalidPageTokenError, type SubscribeTarget } from "../flyte/app-client.ts";
import type { App, WatchResponse } from "../flyte/model.ts";
import { endStreamFrame, watchFrame, watchMessage } from "./connect-frames.ts";
import {
  AppSchema,
  AppService,
  GetRequestSchema,
  GetResponseSchema,
  ListRequestSchema,
  ListResponseSchema,
  WatchRequestSchema,
} from "../flyte/proto/app_service_pb.ts";
import type { Logger } from "../log.ts";
import { KubeApiError } from "../kube/status.ts";
import { checkBinaryRequest } from "./connect-input.ts";
import { Name } from "./schemas.ts";
import { isRefusal, type SessionItem, type StreamEnd, type StreamSessions, type StreamSink } from "./session.ts";
import type { BearerAuth } from "./auth.ts";
import type { ServiceMetrics } from "./metrics.ts";

/** The service's path, without the `/internal` prefix. */
export const APP_SERVICE_PATH = `/${AppService.typeName}`;
/** The RPCs `AppService` declares (any other path under the service is a 404). */
export const APP_SERVICE_METHODS: readonly string[] = AppService.methods.map((m) => m.name);

/** What the Connect routes need from the rest of the service. */
export interface ConnectRoutesOptions {
  client: AppK8sClient;
  metrics: ServiceMetrics;
  log: Logger;
  auth?: BearerAuth;
  origins?: Set<string>;
  /** The service's stream sessions: Watch streams are admitted and run there, like WebSocket and SSE. */
  sessions: StreamSessions;
  /** Largest request message in bytes. */
  maxMessageBytes: number;
}

/** Controls the Connect Watch streams from outside (shutdown). */
export interface ConnectStreams {
  /** Ends every open Watch stream with `unavailable` and refuses new ones. */
  close(reason: string): void;
  /** Open Watch streams. */
  readonly open: number;
}

const clientAddressKey = createContextKey<string>("unknown", { description: "client address" });
/** A request body found undecodable before connect-es read it (connect-input.ts): the interceptor throws it. */
const rejectionKey = createContextKey<ConnectError | undefined>(undefined, { description: "request rejection" });

/**
 * Request header: resume a Watch after this token (Flyte's `WatchRequest` has no field for it).
 * Response header: the position the snapshot or replay is consistent at; trailer: the position
 * after the last event sent. Same tokens as `/v1/watch`.
 */
export const RESUME_HEADER = "appwatch-resume";
/** Response header: how the Watch started (`snapshot`, `resumed`), as in the `start` frame. */
export const START_HEADER = "appwatch-start";
/** Items a Watch stream may hold for connect-es's generator before the session stops taking events for it. */
const CONNECT_HIGH_WATER_MARK = 16;
/** Bytes the pre-encoded Connect body may hold before the session stops taking events for it. */
const CONNECT_BODY_HIGH_WATER_BYTES = 256 * 1024;

/** Where a handed-off Watch writes its pre-encoded frames ({@link connectWatchBody}). */
interface WatchBody {
  /** Writes an event's shared frame now. */
  write(event: WatchResponse): void;
  /** Bytes it still takes before it is full. */
  room(): number;
  /** Resolves at the body's next pull (or `signal`). */
  pulled(signal: AbortSignal): Promise<void>;
  /** The session ended: write the end-stream frame and close. */
  finish(): void;
}

/**
 * A Connect Watch as a {@link StreamSink}. Until the body is known (and for connect-es's own
 * bodies: gRPC-Web, the gRPC listener, compressed Connect) items wait in a small queue the
 * handler's generator drains: connect-es pulls it only as fast as the response body is read, so
 * a full queue is backpressure from the client and each take is the drain signal. Once a
 * Connect-protocol body is attached ({@link ConnectSink.attach}), each event's shared frame goes
 * straight into it, on the session's fast path, and the body's pulls are the drain signal.
 */
class ConnectSink implements StreamSink {
  readonly heartbeats = false;
  readonly #queue: SessionItem[] = [];
  #wake: (() => void) | undefined;
  #drained: (() => void) | undefined;
  #done = false;
  #body: WatchBody | undefined;
  #watch: WatchRun | undefined;
  end: StreamEnd | undefined;
  error: unknown;

  send(item: SessionItem): "ok" | "closed" {
    if (this.#done) return "closed";
    if (item.kind === "heartbeat") return "ok";
    if (this.#body) {
      const event = this.#watch!.take(item);
      if (event !== undefined) this.#body.write(event);
      return "ok";
    }
    this.#queue.push(item);
    this.#notify();
    return "ok";
  }
  full(): boolean {
    if (this.#body) return this.#body.room() <= 0;
    return this.#queue.length >= CONNECT_HIGH_WATER_MARK;
  }
  drained(signal: AbortSignal): Promise<void> {
    if (this.#body) return this.#body.pulled(signal);
    return new Promise((resolve) => {
      if (!this.full() || signal.aborted || this.#done) return resolve();
      this.#drained = resolve;
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }
  /** From now on events go into `body`; what is queued goes first. */
  attach(watch: WatchRun, body: WatchBody): void {
    this.#watch = watch;
    for (const item of this.#queue.splice(0)) {
      const event = watch.take(item);
      if (event !== undefined) body.write(event);
    }
    this.#body = body;
    this.#drained?.();
    if (this.#done) body.finish();
  }
  finish(end: StreamEnd | undefined, error?: unknown): void {
    this.end = end;
    this.error = error;
    this.#done = true;
    this.#notify();
    this.#body?.finish();
  }
  #notify(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }
  async *items(): AsyncGenerator<SessionItem> {
    for (;;) {
      const item = this.#queue.shift();
      if (item !== undefined) {
        if (!this.full()) {
          const d = this.#drained;
          this.#drained = undefined;
          d?.();
        }
        yield item;
        continue;
      }
      if (this.#done || this.#body) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

/** Whether a request opened a Watch stream (counted in `appwatch_connect_streams` until its body is drained). */
export interface StreamState {
  opened: boolean;
  /** The transport counts the stream down once its body is drained (else the handler does, when it returns). */
  drainTracked: boolean;
  /**
   * Offered by {@link mountConnect} only: a Connect-protocol (not gRPC-Web, not compressed) Watch
   * hands its admitted stream over here once the start item set the response headers, and
   * mountConnect writes the body from pre-encoded frames ({@link connectWatchBody}).
   */
  handoff?: (watch: WatchRun) => void;
}
// No shared default object: every request gets a StreamState of its own (contextValues), so no
// request can mark another's state (a default object would be module-level mutable state).
const streamStateKey = createContextKey<StreamState | undefined>(undefined, { description: "stream state" });

/**
 * `body`, calling `done` once the server has taken its last chunk (or the client went away):
 * shutdown waits for open streams, and a Watch stream's end-stream frame is its last chunk.
 */
function untilDrained(body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  const finish = () => {
    if (!finished) {
      finished = true;
      done();
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done: end } = await reader.read();
        if (end) {
          finish();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (err) {
        finish();
        controller.error(err);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

// What the handlers read from requests, checked after protobuf-es has decoded them (proto3 JSON shapes).
// Identities are names as in the REST API: before the first sync they reach label and field selectors.
const OptionalName = v.optional(v.union([v.literal(""), Name], "must be letters, digits, '.', '_' or '-', starting and ending with a letter or digit"), "");
const IdentifierJson = v.object({
  org: v.optional(v.string(), ""),
  project: v.optional(v.string(), ""),
  domain: v.optional(v.string(), ""),
  name: v.optional(v.string(), ""),
});
const AppIdJson = v.object({ org: OptionalName, project: Name, domain: Name, name: Name });
const ProjectJson = v.object({ organization: OptionalName, domain: OptionalName, name: Name });
const WatchRequestJson = v.object({
  org: v.optional(v.string()),
  clusterId: v.optional(v.unknown()),
  project: v.optional(v.unknown()),
  appId: v.optional(v.unknown()),
});
const ListRequestJson = v.object({
  request: v.optional(v.object({ limit: v.optional(v.number(), 0), token: v.optional(v.string(), "") })),
  org: v.optional(v.string()),
  clusterId: v.optional(v.unknown()),
  project: v.optional(v.object({ organization: OptionalName, domain: OptionalName, name: OptionalName })),
});
const GetRequestJson = v.object({ appId: v.optional(IdentifierJson), ingress: v.optional(v.unknown()) });

/** An `invalid_argument` naming the request field at fault. */
function invalid(field: string, issues: v.BaseIssue<unknown>[]): ConnectError {
  const issue = issues[0];
  const path = issue?.path?.map((p) => String(p.key)).join(".");
  return new ConnectError(`${field}${path ? `.${path}` : ""}: ${issue?.message ?? "is not valid"}`, Code.InvalidArgument);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function appMessage(app: App): Message {
  return fromJson(AppSchema, app as unknown as JsonValue, { ignoreUnknownFields: true });
}

/** The subscription target of a `WatchRequest` (Flyte: only `appId`; here also `project` and `org`). */
export function watchTargetOf(json: unknown): { target: SubscribeTarget; kind: string } {
  const req = v.safeParse(WatchRequestJson, json);
  if (!req.success) throw invalid("WatchRequest", req.issues);
  const r = req.output;
  if (r.clusterId !== undefined) {
    throw new ConnectError("the cluster_id watch target is not supported: appwatch serves the one cluster it runs in", Code.Unimplemented);
  }
  if (r.appId !== undefined) {
    const id = v.safeParse(AppIdJson, r.appId);
    if (!id.success) throw invalid("appId", id.issues);
    const { org, project, domain, name } = id.output;
    return { target: { ...(org ? { org } : {}), project, domain, name }, kind: "app" };
  }
  if (r.project !== undefined) {
    const p = v.safeParse(ProjectJson, r.project);
    if (!p.success) throw invalid("project", p.issues);
    const { organization, domain, name } = p.output;
    const org = organization ? { org: organization } : {};
    return { target: domain ? { ...org, project: name, domain } : { ...org, project: name }, kind: "project" };
  }
  if (r.org !== undefined) {
    const org = v.safeParse(Name, r.org);
    if (!org.success) throw new ConnectError(`org: ${org.issues[0].message}`, Code.InvalidArgument);
    return { target: { org: r.org }, kind: "org" };
  }
  // No target: every app (Flyte sends a snapshot of all apps and then never a live event).
  return { target: "", kind: "all" };
}

/** AppService's implementation, ready to be served by the Hono routes ({@link mountConnect}) and the gRPC listener. */
export interface AppServiceHandlers extends ConnectStreams {
  /** Registers AppService (with its Origin and auth checks) on a Connect router. */
  routes(router: ConnectRouter): void;
  /**
   * Per-request context: the client's address (for the per-client stream limit), and a rejection
   * the handler answers instead of serving (a body found undecodable before connect-es read it).
   */
  contextValues(clientAddress: string, drainTracked?: StreamState, rejection?: ConnectError): ContextValues;
  /** Largest request message in bytes. */
  readonly maxMessageBytes: number;
}

/**
 * One admitted Watch stream: its sink, its resume position and how it ends. Both bodies use it —
 * connect-es's (the handler's generator: gRPC-Web, the gRPC listener, compressed Connect) and the
 * pre-encoded Connect body ({@link connectWatchBody}) — so the mapping of session ends onto Connect
 * errors and the cleanup exist once.
 */
export class WatchRun {
  position: string | undefined;
  binary = false;
  /** Milliseconds left of the client's `connect-timeout-ms` at the handoff (connect-es's deadline). */
  timeoutMs: number | undefined;
  readonly sink: ConnectSink;
  readonly stop: AbortController;
  readonly #closed: () => Promise<void>;
  readonly #log: Logger;
  readonly #closing: () => string | undefined;
  #close: Promise<void> | undefined;

  constructor(sink: ConnectSink, stop: AbortController, log: Logger, closing: () => string | undefined, closed: () => Promise<void>) {
    this.sink = sink;
    this.stop = stop;
    this.#log = log;
    this.#closing = closing;
    this.#closed = closed;
  }

  /** Tracks the resume position through `item`; the event to send, if it carries one. */
  take(item: SessionItem): WatchResponse | undefined {
    if (item.kind === "start") this.position = item.position;
    else if (item.kind === "synced") this.position = item.token;
    else if (item.kind === "event") {
      if (item.token !== undefined) this.position = item.token;
      return item.event;
    }
    return undefined;
  }

  /** The Connect error the stream ends with once its sink is done (none when the client left). */
  endError(clientGone: boolean): ConnectError | undefined {
    const end = this.sink.end;
    if (end?.reason === "lagging") return new ConnectError(end.message, Code.ResourceExhausted);
    if (end?.reason === "dropped") return new ConnectError("send buffer overflow: reconnect with your resume token", Code.ResourceExhausted);
    if (end?.reason === "failed") return new ConnectError("internal error", Code.Internal);
    if (this.sink.error !== undefined) {
      this.#log.error("Connect Watch stream failed", { error: errorText(this.sink.error) });
      return new ConnectError("internal error", Code.Internal);
    }
    // The session ended without the client leaving: the server is shutting down.
    if (!clientGone) return new ConnectError(this.#closing() ?? "the server is shutting down", Code.Unavailable);
    return undefined;
  }

  /** Stops the session and waits for it (idempotent). */
  close(): Promise<void> {
    this.stop.abort();
    return (this.#close ??= this.#closed());
  }
}

/** Builds AppService's implementation over `options.client`. */
export function createAppServiceHandlers(options: ConnectRoutesOptions): AppServiceHandlers {
  const { client, metrics, log } = options;
  const streams = new Set<AbortController>();
  let closing: string | undefined;

  // Origin allow-list, then bearer auth: the same rules as /v1/*, answered as Connect errors.
  const guard: Interceptor = (next) => async (req) => {
    const origin = req.header.get("origin");
    if (options.origins && origin !== null && !options.origins.has(origin)) {
      metrics.reject("origin");
      throw new ConnectError(`origin ${JSON.stringify(origin)} is not allowed`, Code.PermissionDenied);
    }
    if (options.auth) {
      const presented = req.header.get("authorization")?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
      if (presented === undefined || !(await options.auth.verify(presented))) {
        metrics.reject("auth");
        throw new ConnectError(presented === undefined ? "a bearer token is required" : "the bearer token is not valid", Code.Unauthenticated);
      }
    }
    const rejection = req.contextValues.get(rejectionKey);
    if (rejection) throw rejection;
    return next(req);
  };

  const impl = {
    async list(req: Message) {
      const parsed = v.safeParse(ListRequestJson, toJson(ListRequestSchema, req));
      if (!parsed.success) throw invalid("ListRequest", parsed.issues);
      const r = parsed.output;
      if (r.org !== undefined || r.clusterId !== undefined) {
        throw new ConnectError("org and cluster_id filters are not supported by the data plane", Code.Unimplemented);
      }
      // project: name → project label, domain → domain label (either may be empty); organization is ignored, as in Flyte.
      const project = r.project?.name ?? "";
      const domain = r.project?.domain ?? "";
      try {
        const page = await client.list(project, domain, r.request?.limit ?? 0, r.request?.token ?? "");
        return create(ListResponseSchema, { apps: page.apps.map(appMessage), token: page.token } as never);
      } catch (err) {
        if (err instanceof InvalidPageTokenError) throw new ConnectError(err.message, Code.InvalidArgument);
        const text = `failed to list KServices for ${project}/${domain}: ${errorText(err)}`;
        // Before the first sync the token is the API server's continue token: a bad or expired one is the client's.
        if (err instanceof KubeApiError && (err.code === 400 || err.code === 410 || err.code === 422)) throw new ConnectError(text, Code.InvalidArgument);
        throw new ConnectError(text, Code.Internal);
      }
    },

    async get(req: Message) {
      const parsed = v.safeParse(GetRequestJson, toJson(GetRequestSchema, req));
      if (!parsed.success) throw invalid("GetRequest", parsed.issues);
      if (parsed.output.appId === undefined) throw new ConnectError("app_id is required", Code.InvalidArgument);
      const id = v.safeParse(AppIdJson, parsed.output.appId);
      if (!id.success) throw invalid("appId", id.issues);
      const { org, project, domain, name } = id.output;
      try {
        const found = await client.getApp({ ...(org ? { org } : {}), project, domain, name });
        // Exact identity: an app of the same project/domain/name in another org is not this one.
        if (org && found.metadata?.id?.org !== org) throw new AppNotFoundError(`app ${org}/${project}/${domain}/${name} not found`);
        return create(GetResponseSchema, { app: appMessage(found) } as never);
      } catch (err) {
        if (err instanceof AppNotFoundError) throw new ConnectError(err.message, Code.NotFound);
        throw new ConnectError(errorText(err), Code.Internal);
      }
    },

    async *watch(req: Message, ctx: HandlerContext) {
      const { target, kind } = watchTargetOf(toJson(WatchRequestSchema, req));
      if (closing !== undefined) throw new ConnectError(closing, Code.Unavailable);
      const resume = ctx.requestHeader.get(RESUME_HEADER) ?? undefined;
      const slot = options.sessions.admit(ctx.values.get(clientAddressKey));
      if (isRefusal(slot)) {
        metrics.reject(slot.reason);
        throw new ConnectError(slot.message, slot.status === 429 ? Code.ResourceExhausted : Code.Unavailable);
      }
      const stop = new AbortController();
      streams.add(stop);
      metrics.connectStreams++;
      const state = ctx.values.get(streamStateKey);
      if (state) state.opened = true;
      const onGone = () => stop.abort();
      ctx.signal.addEventListener("abort", onGone, { once: true });
      const sink = new ConnectSink();
      const run = options.sessions.run(slot, { target, targetKind: kind, snapshot: true, ...(resume ? { resume } : {}) }, sink, stop.signal)
        .then((end) => sink.finish(end), (err) => sink.finish(undefined, err));
      const watch = new WatchRun(sink, stop, log, () => closing, async () => {
        await run;
        streams.delete(stop);
        if (!state?.drainTracked) metrics.connectStreams--;
      });
      let handedOff = false;
      try {
        // The shared session: snapshot (or the replay after a resume token) as createEvents, then live
        // events and relist diffs; `synced` and heartbeats have no place in WatchResponse. Resume
        // positions travel in the response header and trailer (docs/protocol.md).
        for await (const item of sink.items()) {
          const event = watch.take(item);
          if (item.kind === "start") {
            ctx.responseHeader.set(RESUME_HEADER, item.position);
            ctx.responseHeader.set(START_HEADER, item.start.kind);
            // Connect protocol from mountConnect, uncompressed: the headers are set, mountConnect
            // writes the body from frames shared by every subscriber (connect-frames.ts).
            if (state?.handoff && ctx.protocolName === "connect" && !ctx.responseHeader.has(headerStreamEncoding)) {
              watch.binary = ctx.responseHeader.get(headerContentType) === contentTypeStreamProto;
              watch.timeoutMs = ctx.timeoutMs();
              handedOff = true;
              state.handoff(watch);
              return;
            }
          } else if (event !== undefined) yield watchMessage(event);
        }
        const error = watch.endError(ctx.signal.aborted);
        if (error) throw error;
      } finally {
        // Before connect-es aborts ctx.signal as the generator ends: a handed-off stream lives on.
        ctx.signal.removeEventListener("abort", onGone);
        if (!handedOff) {
          if (watch.position !== undefined) ctx.responseTrailer.set(RESUME_HEADER, watch.position);
          await watch.close();
        }
      }
    },

    create() {
      throw new ConnectError("appwatch is read-only: Create is served by Flyte's data plane", Code.Unimplemented);
    },
    update() {
      throw new ConnectError("appwatch is read-only: Update is served by Flyte's data plane", Code.Unimplemented);
    },
    delete() {
      throw new ConnectError("appwatch is read-only: Delete is served by Flyte's data plane", Code.Unimplemented);
    },
  };

  return {
    routes(router) {
      router.service(AppService, impl as never, { interceptors: [guard], readMaxBytes: options.maxMessageBytes });
    },
    contextValues(clientAddress, drainTracked, rejection) {
      const values = createContextValues().set(clientAddressKey, clientAddress).set(rejectionKey, rejection);
      return values.set(streamStateKey, drainTracked ?? { opened: false, drainTracked: false });
    },
    maxMessageBytes: options.maxMessageBytes,
    close(reason) {
      closing = reason;
      for (const s of [...streams]) s.abort();
    },
    get open() {
      return streams.size;
    },
  };
}

/**
 * The response body of a handed-off Connect Watch ({@link StreamState.handoff}): each event's
 * pre-encoded frame (shared by every subscriber, connect-frames.ts), written by the session as the
 * event is published, then the end-stream frame with the resume position as trailer — what
 * connect-es would write, without its per-stream serialization. The body holds up to
 * {@link CONNECT_BODY_HIGH_WATER_BYTES}: a client that stops reading fills it and the session's
 * slow-consumer policy applies, as on connect-es's body. `done` is called once the end-stream
 * frame is written or the client went away.
 */
function connectWatchBody(watch: WatchRun, requestSignal: AbortSignal, done: () => void): ReadableStream<Uint8Array> {
  let gone = false;
  const leave = () => {
    gone = true;
    watch.stop.abort();
  };
  requestSignal.addEventListener("abort", leave, { once: true });
  // connect-es's deadline (`connect-timeout-ms`) ends the stream as the client leaving does.
  const timer = watch.timeoutMs !== undefined ? setTimeout(leave, Math.max(0, watch.timeoutMs)) : undefined;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    if (timer !== undefined) clearTimeout(timer);
    requestSignal.removeEventListener("abort", leave);
    done();
  };
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let pulled: (() => void) | undefined;
  const body: WatchBody = {
    write(event) {
      if (!finished) controller.enqueue(watchFrame(event, watch.binary));
    },
    room: () => (finished ? 1 : controller.desiredSize ?? 0),
    pulled: (signal) =>
      new Promise<void>((resolve) => {
        if (finished || signal.aborted || (controller.desiredSize ?? 0) > 0) return resolve();
        pulled = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      }),
    finish() {
      if (finished) return;
      const error = watch.endError(gone);
      void watch.close().then(() => {
        if (finished) return;
        const trailer = new Headers();
        if (watch.position !== undefined) trailer.set(RESUME_HEADER, watch.position);
        try {
          controller.enqueue(endStreamFrame(trailer, error));
          controller.close();
        } catch { /* cancelled */ }
        finish();
      });
    },
  };
  return new ReadableStream<Uint8Array>({
    start(ctl) {
      controller = ctl;
      watch.sink.attach(watch, body);
    },
    pull() {
      const wake = pulled;
      pulled = undefined;
      wake?.();
    },
    async cancel() {
      leave();
      await watch.close();
      finish();
    },
  }, { highWaterMark: CONNECT_BODY_HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength });
}

/**
 * Mounts AppService on `app` at both path prefixes, for Connect (JSON and binary) and gRPC-Web;
 * gRPC proper needs HTTP/2 trailers, which a fetch `Response` cannot carry (see `adapters/grpc.ts`).
 */
export function mountConnect(
  app: Hono,
  service: AppServiceHandlers,
  metrics: ServiceMetrics,
  clientAddress?: (c: Context) => string | undefined,
  /** Called when a Watch stream's body has been drained (its end-stream frame taken). */
  onDrained?: () => void,
): void {
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
      const stream: StreamState = { opened: false, drainTracked: true, handoff: (watch) => (handedOff = watch) };
      request.contextValues = service.contextValues(clientAddress?.(c) ?? "unknown", stream, checked.rejection);
      const universal = await handler(request);
      const drained = () => {
        if (stream.opened) {
          metrics.connectStreams--;
          onDrained?.();
        }
      };
      if (handedOff !== undefined) {
        // connect-es's body is only the end-stream frame of the generator it saw return: dropped.
        const rest = universal.body;
        if (rest !== undefined && Symbol.asyncIterator in rest) void (async () => { for await (const _ of rest); })().catch(() => {});
        return new Response(connectWatchBody(handedOff, request.signal, drained), { status: universal.status, headers: universal.header });
      }
      const response = universalServerResponseToFetch(universal);
      return response.body ? new Response(untilDrained(response.body, drained), response) : response;
    });
  }
}
