/**
 * Flyte's `flyteidl2.app.AppService` over Connect (JSON and binary protobuf) and gRPC-Web: the
 * three read RPCs mapped onto {@link AppK8sClient} — List, Get, and Watch (snapshot as
 * `createEvent`s, then live events) — and the write RPCs answered with `unimplemented` (appwatch
 * is read-only). Framing, codecs, errors and GET requests are `@connectrpc/connect`'s, except the
 * Connect-protocol Watch body (watch-body.ts, mount.ts). See docs/flyte-compatibility.md for where
 * this differs from Flyte, and why.
 * @module
 */
import { create, fromJson, type JsonValue, type Message, toJson } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import { contentTypeStreamProto, headerContentType, headerStreamEncoding } from "@connectrpc/connect/protocol-connect";
import * as v from "valibot";
import { type AppK8sClient, AppNotFoundError, InvalidPageTokenError } from "../../flyte/app-client.ts";
import type { App } from "../../flyte/model.ts";
import {
  AppSchema,
  AppService,
  GetRequestSchema,
  GetResponseSchema,
  ListRequestSchema,
  ListResponseSchema,
  WatchRequestSchema,
} from "../../flyte/proto/app_service_pb.ts";
import type { Logger } from "../../log.ts";
import { KubeApiError } from "../../kube/status.ts";
import type { AccessGuard } from "../access.ts";
import type { ClusterInfo } from "../info.ts";
import { Name } from "../schemas.ts";
import type { ServiceMetrics } from "../metrics.ts";
import { isRefusal, type StreamSessions } from "../session.ts";
import { watchMessage } from "./frames.ts";
import type { OpenStreams } from "../open-streams.ts";
import { RESUME_FAILED_HEADER, RESUME_HEADER, START_HEADER } from "./names.ts";
import { AppIdJson, clusterOf, errorText, GetRequestJson, invalid, ListRequestJson, watchTargetOf } from "./requests.ts";
import { ConnectSink, WatchRun } from "./watch-run.ts";
import { reflectionRoutes } from "./reflection.ts";

/** What the Connect routes need from the rest of the service. */
export interface ConnectRoutesOptions {
  client: AppK8sClient;
  metrics: ServiceMetrics;
  log: Logger;
  /** The Origin allow-list and bearer auth (access.ts): the same rule as `/v1/*`. */
  access: AccessGuard;
  /** The service's stream sessions: Watch streams are admitted and run there, like WebSocket and SSE. */
  sessions: StreamSessions;
  /** The service's registry of open streams (shutdown ends and awaits them): every Watch is in it until it is gone. */
  streams: OpenStreams;
  /** The cluster served: `cluster_id` targets must name it (info.ts). */
  cluster: ClusterInfo;
  /** Largest request message in bytes. */
  maxMessageBytes: number;
}

/** Controls the Connect Watch streams from outside (shutdown). */
export interface ConnectStreams {
  /**
   * Refuses new Watch streams with `unavailable`, and makes the open ones end with it when the
   * registry ({@link ConnectRoutesOptions.streams}) shuts them down: call it first.
   */
  close(reason: string): void;
}

const clientAddressKey = createContextKey<string>("unknown", { description: "client address" });
/** A request body found undecodable before connect-es read it (input.ts): the interceptor throws it. */
const rejectionKey = createContextKey<ConnectError | undefined>(undefined, { description: "request rejection" });

/** Whether a request opened a Watch stream (registered, and counted in `appwatch_connect_streams`, until its body is drained). */
export interface StreamState {
  opened: boolean;
  /** The transport calls {@link release} once the body is drained (else the handler does, when it returns). */
  drainTracked: boolean;
  /** Set by the handler when the stream opens: takes it out of the registry (once). */
  release?: () => void;
  /**
   * Offered by mountConnect (mount.ts) only: a Connect-protocol (not gRPC-Web, not compressed) Watch
   * hands its admitted stream over here once the start item set the response headers, and
   * mountConnect writes the body from pre-encoded frames (watch-body.ts).
   */
  handoff?: (watch: WatchRun) => void;
  /**
   * Offered by the transports (mount.ts, adapters/grpc.ts): a Watch that is not handed off calls it
   * once its response headers are set (the start item), and the transport sends them at once —
   * connect-es would hold them until the first message (gRPC, gRPC-Web, compressed Connect).
   */
  headersReady?: (header: Headers) => void;
}
// No shared default object: every request gets a StreamState of its own (contextValues), so no
// request can mark another's state (a default object would be module-level mutable state).
const streamStateKey = createContextKey<StreamState | undefined>(undefined, { description: "stream state" });


function appMessage(app: App): Message {
  return fromJson(AppSchema, app as unknown as JsonValue, { ignoreUnknownFields: true });
}

/** AppService's implementation, ready to be served by the Hono routes (mount.ts) and the gRPC listener. */
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


/** Builds AppService's implementation over `options.client`. */
export function createAppServiceHandlers(options: ConnectRoutesOptions): AppServiceHandlers {
  const { client, metrics, log } = options;
  const { streams } = options;
  let closing: string | undefined;

  // Origin allow-list, then bearer auth: the rule of /v1/* (access.ts), answered as Connect errors.
  const guard: Interceptor = (next) => async (req) => {
    const refused = await options.access.check({ origin: req.header.get("origin") ?? undefined, authorization: req.header.get("authorization") ?? undefined });
    if (refused) {
      metrics.reject(refused.reason);
      throw new ConnectError(refused.message, refused.reason === "auth" ? Code.Unauthenticated : Code.PermissionDenied);
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
      // org (the filter is a oneof): that org's apps; Flyte's data plane refuses it.
      if (r.org !== undefined) {
        const org = v.safeParse(Name, r.org);
        if (!org.success) throw new ConnectError(`org: ${org.issues[0].message}`, Code.InvalidArgument);
      }
      // cluster_id: this cluster lists every app.
      if (r.clusterId !== undefined) clusterOf(r.clusterId, options.cluster);
      // project: name → project label, domain → domain label (either may be empty); organization is ignored, as in Flyte.
      const project = r.project?.name ?? "";
      const domain = r.project?.domain ?? "";
      try {
        const page = await client.list(project, domain, r.request?.limit ?? 0, r.request?.token ?? "", r.org ?? "");
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
      const { target, kind } = watchTargetOf(toJson(WatchRequestSchema, req), options.cluster);
      if (closing !== undefined) throw new ConnectError(closing, Code.Unavailable);
      const resume = ctx.requestHeader.get(RESUME_HEADER) ?? undefined;
      const slot = options.sessions.admit(ctx.values.get(clientAddressKey));
      if (isRefusal(slot)) {
        metrics.reject(slot.reason);
        throw new ConnectError(slot.message, slot.status === 429 ? Code.ResourceExhausted : Code.Unavailable);
      }
      const stop = new AbortController();
      const hook = { shutdown: () => stop.abort() };
      streams.add(hook);
      metrics.connectStreams++; // the gauge only: what is open is the registry's to say
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        metrics.connectStreams--;
        streams.closed(hook);
      };
      const state = ctx.values.get(streamStateKey);
      if (state) {
        state.opened = true;
        state.release = release;
      }
      const onGone = () => stop.abort();
      ctx.signal.addEventListener("abort", onGone, { once: true });
      const sink = new ConnectSink();
      const run = options.sessions.run(slot, { target, targetKind: kind, snapshot: true, ...(resume ? { resume } : {}) }, sink, stop.signal)
        .then((end) => sink.finish(end), (err) => sink.finish(undefined, err));
      const watch = new WatchRun(sink, stop, log, () => closing, async () => {
        await run;
        if (!state?.drainTracked) release();
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
            if (item.start.kind === "snapshot" && item.start.resumeFailed) ctx.responseHeader.set(RESUME_FAILED_HEADER, item.start.resumeFailed);
            // Connect protocol from mountConnect, uncompressed: the headers are set, mountConnect
            // writes the body from frames shared by every subscriber (frames.ts).
            if (state?.handoff && ctx.protocolName === "connect" && !ctx.responseHeader.has(headerStreamEncoding)) {
              watch.binary = ctx.responseHeader.get(headerContentType) === contentTypeStreamProto;
              watch.timeoutMs = ctx.timeoutMs();
              handedOff = true;
              state.handoff(watch);
              return;
            }
            // Every other protocol: connect-es commits the headers with the first message, which
            // may be long in coming (an empty snapshot); the transport sends them now.
            state?.headersReady?.(ctx.responseHeader);
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
      // Bidirectional, so only the HTTP/2 listener (adapters/grpc.ts) serves it; the HTTP/1.1 port mounts AppService's paths only.
      reflectionRoutes(router, { interceptors: [guard] });
    },
    contextValues(clientAddress, drainTracked, rejection) {
      const values = createContextValues().set(clientAddressKey, clientAddress).set(rejectionKey, rejection);
      return values.set(streamStateKey, drainTracked ?? { opened: false, drainTracked: false });
    },
    maxMessageBytes: options.maxMessageBytes,
    close(reason) {
      closing = reason;
    },
  };
}
