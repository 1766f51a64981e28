/**
 * The appwatch HTTP API as one Hono app (docs/protocol.md): `GET /v1/watch`
 * (WebSocket, or Server-Sent Events with `Accept: text/event-stream`),
 * `GET /v1/apps`, `GET /v1/apps/:project/:domain/:name`, `/healthz`,
 * `/readyz`, `/metrics`. Nothing here is runtime-specific: the runtime's adapter
 * (`adapters/`) gives the WebSocket upgrade, the client address, each socket as a sink with a
 * drain signal, and keep-alive pings; this module never reads `ws.raw`.
 * @module
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { type AppK8sClient, AppNotFoundError, InvalidPageTokenError } from "../flyte/app-client.ts";
import { subscribeTarget } from "../flyte/hub.ts";
import type { App } from "../flyte/model.ts";
import { KubeApiError } from "../kube/status.ts";
import { type Logger, silentLogger } from "../log.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { createAccessGuard } from "./access.ts";
import { type BearerAuth, createBearerAuth } from "./auth.ts";
import { mountBoard } from "./board/route.ts";
import { type AppServiceHandlers, createAppServiceHandlers } from "./connect/handlers.ts";
import { mountConnect } from "./connect/mount.ts";
import { APP_SERVICE_METHODS, APP_SERVICE_PATH } from "./connect/names.ts";
import { errorResponse, installErrorContract } from "./errors.ts";
import { type ClusterInfo, infoBody, otherCluster, readySandboxNote, UNKNOWN_CLUSTER } from "./info.ts";
import { type BuildInfo, ServiceMetrics } from "./metrics.ts";
import { GetAppPathSchema, GetAppQuerySchema, issuesOf, ListQuerySchema, parseQuery, type WatchQuery, WatchQuerySchema } from "./schemas.ts";
import { isRefusal, type StreamRequest, StreamSessions } from "./session.ts";
import type { TickerStats } from "./ticker.ts";
import * as v from "valibot";
import { OpenStreams } from "./open-streams.ts";
import { installPathRule, requestPath } from "./paths.ts";
import { type AppRuntime, badHandshake, CLOSE, sseStream, webSocketStream } from "./transports.ts";

export { CLOSE } from "./transports.ts";
export type { AppRuntime } from "./transports.ts";

/** Limits and safety settings of the API. */
export interface ApiLimits {
  /** Open streams (WebSocket + SSE) per client address (each carries one subscription). Default 64. */
  maxConnectionsPerClient: number;
  /** Largest client WebSocket message in bytes. Default 4096. */
  maxMessageBytes: number;
  /** Heartbeat frame period. Default 15 s. */
  heartbeatMs: number;
  /** Protocol-level ping period where the runtime leaves it to us (Node); a peer that misses one is closed. Default 30 s. */
  pingMs: number;
  /**
   * Bytes one stream may hold for a client that is not reading (`--stream-buffer-bytes`): a
   * WebSocket's buffered amount, an SSE or Connect Watch response body's queue. Past it the
   * subscription's slow-consumer policy applies. Default 1 MiB.
   */
  highWaterMark: number;
  /** Wait for a resume token from a replica ahead of this one. Default 2 s. */
  catchUpMs: number;
}

/** Options of {@link createApp}. */
export interface CreateAppOptions {
  client: AppK8sClient;
  /** The runtime's adapter; without it `/v1/watch` serves SSE only and every client is one address. */
  runtime?: AppRuntime;
  /** Time for heartbeats and deadlines (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
  /** Bearer tokens accepted on `/v1/*` (none: no auth). */
  authTokens?: string[];
  /** Allowed `Origin` values for `/v1/*` (none: any). Requests without `Origin` are always allowed. */
  allowedOrigins?: string[];
  limits?: Partial<ApiLimits>;
  logger?: Logger;
  build?: BuildInfo;
  /** What it watches (`/v1/info`) and whether that is the sandbox (`/readyz`, `/metrics`, `start` frames). Default: unknown, not the sandbox. */
  cluster?: ClusterInfo;
}

/** What {@link createApp} returns. */
export interface AppwatchApp {
  /** The Hono app: `app.fetch` serves every route; mount it with `route()`. */
  app: Hono;
  metrics: ServiceMetrics;
  /** Flyte's AppService, for transports beyond this Hono app (the gRPC listener). */
  appService: AppServiceHandlers;
  /** Ends every open stream (WebSocket close with `code`, SSE end) and refuses new ones. */
  closeStreams(code?: number, reason?: string): void;
  /** Resolves once every WebSocket, SSE and Connect stream is closed (or after `timeoutMs`). */
  whenClosed(timeoutMs: number): Promise<void>;
  /** Streams open now, of every transport. */
  readonly openStreams: number;
  /** The heartbeat ticker's statistics (it runs only while a stream is open). */
  heartbeatStats(): TickerStats;
}

const DEFAULT_LIMITS: ApiLimits = {
  maxConnectionsPerClient: 64,
  maxMessageBytes: 4096,
  heartbeatMs: 15_000,
  pingMs: 30_000,
  highWaterMark: 1 << 20,
  catchUpMs: 2_000,
};

/** Route label for metrics (bounded cardinality). */
function routeOf(path: string): string {
  if (path === "/v1/watch" || path === "/v1/apps" || path === "/v1/info" || path === "/healthz" || path === "/readyz" || path === "/metrics") return path;
  if (path.startsWith("/v1/apps/")) return "/v1/apps/:project/:domain/:name";
  if (path === "/" || path === "/board/app.js" || path === "/board/app.css") return path;
  const rpc = path.startsWith("/internal/") ? path.slice("/internal".length) : path;
  if (rpc.startsWith(`${APP_SERVICE_PATH}/`) && APP_SERVICE_METHODS.includes(rpc.slice(APP_SERVICE_PATH.length + 1))) return rpc;
  return "other";
}

function targetOf(q: WatchQuery): ReturnType<typeof subscribeTarget> {
  return subscribeTarget({ ...q, name: q.app });
}

/** proto3 JSON of Flyte's ListResponse: empty fields omitted. */
function listResponse(apps: App[], token: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (apps.length) out.apps = apps;
  if (token) out.token = token;
  return out;
}

/** Builds the appwatch Hono app around a started (or starting) {@link AppK8sClient}. */
export function createApp(options: CreateAppOptions): AppwatchApp {
  const client = options.client;
  const limits: ApiLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const log = (options.logger ?? silentLogger).child({ component: "api" });
  const cluster = options.cluster ?? UNKNOWN_CLUSTER;
  const metrics = new ServiceMetrics(options.build ?? { version: "dev", runtime: "unknown", runtimeVersion: "" }, { sandbox: cluster.sandbox });
  const auth: BearerAuth | undefined = options.authTokens?.length ? createBearerAuth(options.authTokens) : undefined;
  const access = createAccessGuard(options.allowedOrigins, auth);
  let closing = false;
  const clock = options.clock ?? realClock;
  const runtime = options.runtime;
  const sessions = new StreamSessions(client, { ...limits, clock, sandbox: cluster.sandbox }, metrics, log);
  const streams = new OpenStreams(clock);
  const transport = { sessions, metrics, log, limits, clock, streams };

  // Routed by the path with its dot segments resolved, as Node and Bun hand it over (paths.ts).
  const app = new Hono({ getPath: requestPath });
  installErrorContract(app, log); // unknown routes 404, wrong methods 405, thrown errors 500: all {"code","message"}

  // Count every request by route and status (reads only: no header changes on upgrade responses).
  app.use("*", async (c, next) => {
    await next();
    metrics.request(routeOf(c.req.path), c.res.status);
  });

  installPathRule(app); // unknown methods 501, request targets over 8 KiB 414 (counted above)

  // /v1/*: Origin allow-list, then bearer auth (access.ts: the same rule as AppService's).
  const guard: MiddlewareHandler = async (c, next) => {
    // Browsers cannot set headers on WebSocket/EventSource: the token may come as a query parameter there.
    const accessToken = c.req.path === "/v1/watch" ? new URL(c.req.url).searchParams.get("access_token") ?? undefined : undefined;
    const refused = await access.check({ origin: c.req.header("origin"), authorization: c.req.header("authorization"), accessToken });
    if (refused) {
      metrics.reject(refused.reason);
      if (refused.reason === "auth") c.header("WWW-Authenticate", 'Bearer realm="appwatch"');
      return errorResponse(c, refused.reason === "auth" ? 401 : 403, refused.code, refused.message);
    }
    await next();
  };
  app.use("/v1/*", guard);

  // Flyte's AppService over Connect / gRPC-Web (its own Origin and auth checks, answered as Connect errors).
  const appService = createAppServiceHandlers({
    client,
    metrics,
    log,
    access,
    sessions,
    streams,
    cluster,
    maxMessageBytes: limits.maxMessageBytes,
  });
  mountConnect(app, appService, {
    bodyBufferBytes: limits.highWaterMark,
    clock,
    ...(runtime ? { clientAddress: (c: Context) => runtime.clientAddress(c) } : {}),
    ...(runtime?.directBody ? { directBody: (c: Context) => runtime.directBody?.(c) } : {}),
  });

  mountBoard(app); // the live app board: GET /, /board/* (docs/board.md)

  app.get("/healthz", (c) => c.json({ status: "ok" }));

  // The status code says only ready or not; in sandbox mode the body also says the data is fake.
  const sandboxNote = readySandboxNote(cluster);
  app.get("/readyz", (c) => {
    if (closing) return c.json({ status: "not ready", reason: "shutting down", ...sandboxNote }, 503);
    if (!client.synced) {
      const lastError = client.lastWatchError;
      return c.json({ status: "not ready", reason: "initial sync of app KServices not done yet", ...(lastError ? { lastError } : {}), ...sandboxNote }, 503);
    }
    const h = client.health();
    if (!h.healthy) return c.json({ status: "not ready", reason: h.reason ?? "watch unhealthy", since: new Date(h.since).toISOString(), ...sandboxNote }, 503);
    // Readiness follows the KService watch; a failing Revision watch only makes replica counts stale.
    const r = client.replicasHealth();
    const degraded = r && !r.healthy ? { degraded: { replicas: { reason: r.reason ?? "revision watch unhealthy", since: new Date(r.since).toISOString() } } } : {};
    return c.json({ status: "ready", ...degraded, ...sandboxNote });
  });

  app.get("/metrics", (c) => c.text(metrics.render(client), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }));

  app.get("/v1/info", (c) => c.json(infoBody(cluster)));

  // `cluster` (and `cluster_org`) in a query: this cluster, or a 404 naming the one served here.
  const notThisCluster = (q: { cluster?: string | undefined; cluster_org?: string | undefined }): string | undefined =>
    q.cluster === undefined ? undefined : otherCluster(cluster, { name: q.cluster, ...(q.cluster_org ? { organization: q.cluster_org } : {}) });

  app.get("/v1/apps", async (c) => {
    const q = parseQuery(ListQuerySchema, c.req.url);
    if (!q.ok) return errorResponse(c, 400, "invalid_argument", q.message, { issues: q.issues });
    const other = notThisCluster(q.value);
    if (other) return errorResponse(c, 404, "not_found", other);
    try {
      const { apps, token } = await client.list(q.value.project ?? "", q.value.domain ?? "", q.value.limit ?? 0, q.value.token ?? "", q.value.org ?? "");
      return c.json(listResponse(apps, token));
    } catch (err) {
      return apiError(c, err, "list apps");
    }
  });

  app.get("/v1/apps/:project/:domain/:name", async (c) => {
    const q = parseQuery(GetAppQuerySchema, c.req.url);
    if (!q.ok) return errorResponse(c, 400, "invalid_argument", q.message, { issues: q.issues });
    const params = v.safeParse(GetAppPathSchema, c.req.param());
    if (!params.success) return errorResponse(c, 400, "invalid_argument", issuesOf(params.issues).message, { issues: issuesOf(params.issues).issues });
    const { project, domain, name } = params.output;
    const org = q.value.org;
    const other = notThisCluster(q.value);
    if (other) return errorResponse(c, 404, "not_found", other);
    try {
      const found = await client.getApp({ ...(org !== undefined ? { org } : {}), project, domain, name });
      if (org !== undefined && found.metadata?.id?.org !== org) return errorResponse(c, 404, "not_found", `app ${org}/${project}/${domain}/${name} not found`);
      return c.json(found);
    } catch (err) {
      if (err instanceof AppNotFoundError) return errorResponse(c, 404, "not_found", err.message);
      return apiError(c, err, "get app");
    }
  });

  const apiError = (c: Context, err: unknown, what: string): Response => {
    if (err instanceof InvalidPageTokenError) return errorResponse(c, 400, "invalid_argument", err.message);
    if (err instanceof KubeApiError) {
      log.warn(`${what}: the API server refused`, { code: err.code, reason: err.reason, error: err.message });
      if (err.code === 410) return errorResponse(c, 400, "invalid_argument", `the page token has expired: ${err.message}`);
      if (err.code === 400 || err.code === 422) return errorResponse(c, 400, "invalid_argument", err.message);
      if (err.code === 404) return errorResponse(c, 404, "not_found", err.message);
      return errorResponse(c, 503, "unavailable", `the Kubernetes API answered ${err.code}: ${err.message}`);
    }
    log.warn(`${what} failed`, { error: err instanceof Error ? err.message : String(err) });
    return errorResponse(c, 503, "unavailable", `the Kubernetes API is not reachable: ${err instanceof Error ? err.message : String(err)}`);
  };

  app.get("/v1/watch", async (c, next) => {
    const q = parseQuery(WatchQuerySchema, c.req.url);
    if (!q.ok) {
      metrics.reject("bad-query");
      return errorResponse(c, 400, "invalid_argument", q.message, { issues: q.issues });
    }
    const other = notThisCluster(q.value);
    if (other) {
      metrics.reject("other-cluster");
      return errorResponse(c, 404, "not_found", other);
    }
    const { target, kind } = targetOf(q.value);
    const lastEventId = c.req.header("last-event-id");
    const resume = lastEventId !== undefined && lastEventId !== "" ? lastEventId : q.value.resume;
    const request: StreamRequest = { target, targetKind: kind, snapshot: q.value.snapshot, ...(resume !== undefined ? { resume } : {}) };
    // An upgrade request is a WebSocket, whatever it accepts: an SSE answer to it would be a body
    // nobody reads (Node hands upgrade requests to the upgrade handler), holding its stream forever.
    const isUpgrade = c.req.header("upgrade") !== undefined;
    const wantsSse = !isUpgrade && (c.req.header("accept") ?? "").includes("text/event-stream");
    if (!wantsSse && !isUpgrade) {
      return errorResponse(c, 426, "failed_precondition", "GET /v1/watch needs a WebSocket upgrade or Accept: text/event-stream", {});
    }
    if (isUpgrade) {
      if (!runtime) return errorResponse(c, 426, "failed_precondition", "WebSocket is not available on this server; use Accept: text/event-stream");
      // Refuse a malformed handshake here, before a slot is taken: a runtime that rejects it later
      // fires neither open nor close, and the slot would never come back.
      const bad = badHandshake(c);
      if (bad) {
        metrics.reject("bad-handshake");
        if (bad.version) c.header("Sec-WebSocket-Version", "13");
        return errorResponse(c, bad.version ? 426 : 400, bad.version ? "failed_precondition" : "invalid_argument", bad.message);
      }
    }
    const slot = sessions.admit(runtime?.clientAddress(c) ?? "unknown");
    if (isRefusal(slot)) {
      metrics.reject(slot.reason);
      if (slot.status === 503) c.header("Retry-After", "2");
      return errorResponse(c, slot.status, slot.code, slot.message);
    }
    return wantsSse ? sseStream(transport, request, slot, c.req.raw.signal, runtime?.directBody?.(c)) : await webSocketStream({ ...transport, runtime: runtime! }, c, next, request, slot);
  });

  return {
    app,
    metrics,
    appService,
    whenClosed: (timeoutMs: number) => streams.whenClosed(timeoutMs),
    get openStreams() {
      return streams.size;
    },
    heartbeatStats: () => sessions.heartbeatStats(),
    closeStreams(code: number = CLOSE.goingAway, reason = "server shutting down") {
      closing = true;
      appService.close(reason); // first: a Connect Watch ended below must see why
      streams.closeAll(code, reason);
      sessions.close(reason);
    },
  };
}
