/**
 * The HTTP API as a web-standard Hono app: request recording and bearer auth, discovery and
 * health endpoints, the `serving.knative.dev/v1` routes, fault application and Status errors.
 * @module
 */
import { type Context, Hono } from "hono";
import type { Logger } from "../log.ts";
import type { ContinueTokens } from "./continue.ts";
import {
  badRequest,
  faultStatus,
  internalError,
  methodNotAllowed,
  notFound,
  pathNotFound,
  SandboxError,
  type StatusBody,
  unauthorized,
  unsupportedMediaType,
} from "./errors.ts";
import { applyBodyFault, applyWatchFault, type Faults } from "./faults.ts";
import { isObject } from "./json.ts";
import { runList } from "./list.ts";
import { parseListQuery, queryBool } from "./query.ts";
import { API_PREFIX, API_VERSION, GROUP, isSandboxResource, RESOURCE_NAMES, RESOURCES, VERSION } from "./resources.ts";
import type { ObjectStore } from "./store.ts";
import { type ChunkSource, type OpenBody, sourceOf, streamBody, utf8 } from "./stream.ts";
import type { TimerSet } from "./timers.ts";
import type { FaultAction, FaultVerb, KubeObject, RequestRecord, SandboxResource } from "./types.ts";
import { errorSource, startWatch, type WatchHub } from "./watch.ts";

/** The sandbox internals the app serves. */
export interface AppCore {
  readonly store: ObjectStore;
  readonly hub: WatchHub;
  readonly tokens: ContinueTokens;
  readonly timers: TimerSet;
  readonly faults: Faults;
  readonly requests: RequestRecord[];
  /** The sandbox clock's time, for request records. */
  now(): number;
  readonly logger: Logger;
  readonly watchList: boolean;
  readonly leadingNewline: boolean;
  /** The accepted bearer token, if any. */
  token(): string | undefined;
  disposed(): boolean;
  /** Tracks an open streamed body; returns its unregister function. */
  register(handle: OpenBody, watch: boolean): () => void;
  waitForRV(rv: number): Promise<boolean>;
  /** Watch timeout when the client sends none. */
  defaultTimeoutMs(): number;
}

/** What a route produces before faults and encoding. */
type Reply =
  | { status: number; body: unknown; headers?: Record<string, string> }
  | { watch: ChunkSource };

function errorReply(e: SandboxError): Reply {
  return statusReply(e.status);
}

function statusReply(status: StatusBody): Reply {
  const headers: Record<string, string> = {};
  const retry = status.details?.retryAfterSeconds;
  if (retry !== undefined) headers["retry-after"] = String(retry);
  return { status: status.code, body: status, headers };
}

function baseHeaders(): Record<string, string> {
  return { "content-type": "application/json", "cache-control": "no-cache, private", "audit-id": crypto.randomUUID() };
}

function toResponse(core: AppCore, reply: Reply, fault: FaultAction | undefined): Response {
  if ("watch" in reply) {
    const source = fault ? applyWatchFault(reply.watch, fault, core.timers) : reply.watch;
    const body = streamBody(source, { leadingNewline: core.leadingNewline, register: (h) => core.register(h, true) });
    return new Response(body, { status: 200, headers: baseHeaders() });
  }
  const headers = { ...baseHeaders(), ...reply.headers };
  const bytes = utf8(JSON.stringify(reply.body));
  const faulted = fault ? applyBodyFault(bytes, fault, core.timers) : undefined;
  if (faulted) {
    const body = streamBody(faulted, { leadingNewline: core.leadingNewline, register: (h) => core.register(h, false) });
    return new Response(body, { status: reply.status, headers });
  }
  return new Response(bytes, { status: reply.status, headers });
}

async function readJson(c: Context, optional = false): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (optional) return undefined;
    throw badRequest("the body of the request is empty");
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`couldn't decode the request body as JSON: ${(e as Error).message}`);
  }
}

function queryOf(c: Context): Record<string, string> {
  return Object.fromEntries(new URL(c.req.url).searchParams);
}

function isWatchRequest(c: Context): boolean {
  return queryBool(new URL(c.req.url).searchParams.get("watch") ?? undefined) === true;
}

function discovery(): unknown {
  const resources: unknown[] = [];
  for (const r of RESOURCE_NAMES) {
    const info = RESOURCES[r];
    resources.push({
      name: info.plural,
      singularName: info.singular,
      namespaced: true,
      kind: info.kind,
      verbs: ["delete", "get", "list", "patch", "create", "update", "watch"],
      shortNames: [...info.shortNames],
      categories: ["all", "knative", "serving"],
    });
    resources.push({ name: `${info.plural}/status`, singularName: "", namespaced: true, kind: info.kind, verbs: ["get", "patch", "update"] });
  }
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: API_VERSION, resources };
}

const GROUP_INFO = {
  name: GROUP,
  versions: [{ groupVersion: API_VERSION, version: VERSION }],
  preferredVersion: { groupVersion: API_VERSION, version: VERSION },
};

const VERSION_INFO = {
  major: "1",
  minor: "34",
  gitVersion: "v1.34.0-appwatch-sandbox",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2026-01-01T00:00:00Z",
  goVersion: "go1.24.0",
  compiler: "gc",
  platform: "linux/amd64",
};

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: baseHeaders() });
}

function text(body: string): Response {
  return new Response(body, { status: 200, headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache, private" } });
}

/** Builds the Hono app over the sandbox internals. */
export function createApp(core: AppCore): Hono {
  const app = new Hono();

  // Record first (tests assert what clients sent even when auth fails), then authenticate.
  app.use("*", async (c, next) => {
    const url = new URL(c.req.url);
    const record: RequestRecord = {
      method: c.req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      time: core.now(),
    };
    core.requests.push(record);
    core.logger.debug("sandbox request", { method: record.method, path: record.path, query: record.query });
    const token = core.token();
    if (token !== undefined) {
      const m = /^bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
      if (!m || m[1] !== token) {
        record.status = 401;
        return toResponse(core, errorReply(unauthorized()), undefined);
      }
    }
    await next();
    record.status = c.res.status;
  });

  /** Runs a resource request: resource check, fault rules, handler, errors, encoding. */
  const dispatch = async (resource: string, verb: FaultVerb, run: (r: SandboxResource) => Promise<Reply>): Promise<Response> => {
    if (!isSandboxResource(resource)) return toResponse(core, errorReply(pathNotFound()), undefined);
    const fault = core.faults.take(verb, resource);
    if (fault) core.logger.debug("sandbox: fault applied", { verb, resource, fault: fault.type });
    if (fault?.type === "status") {
      const status = faultStatus(fault);
      if (verb === "watch" && fault.inStream) return toResponse(core, { watch: errorSource(status) }, undefined);
      return toResponse(core, statusReply(status), undefined);
    }
    let reply: Reply;
    try {
      reply = await run(resource);
    } catch (e) {
      if (!(e instanceof SandboxError)) throw e;
      reply = errorReply(e);
    }
    return toResponse(core, reply, fault);
  };

  const listOrWatch = async (r: SandboxResource, namespace: string | undefined, query: Record<string, string>, forceWatch = false): Promise<Reply> => {
    const q = parseListQuery(query, { watchList: core.watchList, forceWatch });
    if (q.watch) {
      if (core.disposed()) return { watch: sourceOf([]) };
      return { watch: await startWatch(core, r, namespace, q) };
    }
    return { status: 200, body: await runList(core, r, namespace, q) };
  };

  const ok = (body: KubeObject, status = 200): Reply => ({ status, body });

  const collection = (c: Context, namespace: string | undefined) => {
    const method = c.req.method;
    const resource = c.req.param("resource") ?? "";
    if (method === "GET") {
      return dispatch(resource, isWatchRequest(c) ? "watch" : "list", (r) => listOrWatch(r, namespace, queryOf(c)));
    }
    if (method === "POST" && namespace !== undefined) {
      return dispatch(resource, "create", async (r) => ok(core.store.create(r, namespace, await readJson(c)), 201));
    }
    return Promise.resolve(toResponse(core, errorReply(isSandboxResource(resource) ? methodNotAllowed() : pathNotFound()), undefined));
  };

  const item = (c: Context, subresource: "main" | "status") => {
    const method = c.req.method;
    const resource = c.req.param("resource") ?? "";
    const ns = c.req.param("ns") ?? "";
    const name = c.req.param("name") ?? "";
    const store = core.store;
    switch (method) {
      case "GET":
        if (subresource === "main" && isWatchRequest(c)) {
          // The deprecated single-object watch is a watch with a metadata.name field selector.
          const query = { ...queryOf(c), fieldSelector: `metadata.name=${name}` };
          return dispatch(resource, "watch", (r) => listOrWatch(r, ns, query, true));
        }
        return dispatch(resource, "get", (r) => {
          const obj = store.get(r, ns, name);
          if (!obj) throw notFound(r, name);
          return Promise.resolve(ok(obj));
        });
      case "PUT":
        return dispatch(resource, "update", async (r) =>
          ok(store.update(r, ns, name, await readJson(c), { requireResourceVersion: true, subresource })));
      case "PATCH":
        return dispatch(resource, "patch", async (r) => {
          const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
          if (type !== "application/merge-patch+json") throw unsupportedMediaType(type);
          return ok(store.patch(r, ns, name, await readJson(c), subresource));
        });
      case "DELETE":
        if (subresource === "status") break;
        return dispatch(resource, "delete", async (r) => {
          const body = await readJson(c, true);
          const pre = isObject(body) && isObject(body.preconditions) ? body.preconditions : {};
          return ok(store.delete(r, ns, name, {
            uid: typeof pre.uid === "string" ? pre.uid : undefined,
            resourceVersion: typeof pre.resourceVersion === "string" ? pre.resourceVersion : undefined,
          }));
        });
    }
    return Promise.resolve(toResponse(core, errorReply(isSandboxResource(resource) ? methodNotAllowed() : pathNotFound()), undefined));
  };

  app.get("/version", () => json(200, VERSION_INFO));
  for (const p of ["/healthz", "/livez", "/readyz"]) app.get(p, () => text("ok"));
  app.get("/apis", () => json(200, { kind: "APIGroupList", apiVersion: "v1", groups: [GROUP_INFO] }));
  app.get(`/apis/${GROUP}`, () => json(200, { kind: "APIGroup", apiVersion: "v1", ...GROUP_INFO }));
  app.get(API_PREFIX, () => json(200, discovery()));
  app.all(`${API_PREFIX}/namespaces/:ns/:resource`, (c) => collection(c, c.req.param("ns")));
  app.all(`${API_PREFIX}/namespaces/:ns/:resource/:name`, (c) => item(c, "main"));
  app.all(`${API_PREFIX}/namespaces/:ns/:resource/:name/:sub`, (c) => {
    if (c.req.param("sub") !== "status") return toResponse(core, errorReply(pathNotFound()), undefined);
    return item(c, "status");
  });
  app.all(`${API_PREFIX}/:resource`, (c) => collection(c, undefined));

  app.notFound(() => toResponse(core, errorReply(pathNotFound()), undefined));
  app.onError((e) => {
    core.logger.error("sandbox: unexpected error", { error: e });
    return toResponse(core, errorReply(internalError(e.message)), undefined);
  });
  return app;
}
