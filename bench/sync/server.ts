/**
 * The initial-sync benchmark's fake API server (B2): a separate Node process,
 * the same for every consumer runtime, serving N distinct realistic Knative
 * Services (from `bench/lib/data.ts`'s generator: managedFields, base64 spec
 * annotation, pod template, conditions, ~5 KB each) as a paginated list.
 *
 * - `GET {BENCH_PATH}?limit=&continue=`: one list page (`limit` absent or 0 =
 *   everything), items in a fixed order, `metadata.continue` an offset token,
 *   `remainingItemCount`, one list resourceVersion. Label and field selectors
 *   are accepted and ignored (every object is a managed Flyte app).
 * - `GET {BENCH_PATH}?watch=1`: a quiet watch (headers, then nothing) held open
 *   until the client leaves; with `sendInitialEvents=true` a 422, as a server
 *   without the WatchList feature answers.
 * - `GET …/revisions?limit=&continue=`: one page of N Revisions, one per
 *   KService (its `status.latestReadyRevisionName`), shaped like what Knative's
 *   controller writes (labels, owner reference, managedFields, the pod spec,
 *   four conditions, `actualReplicas`; ≈ 3 KB each): AppK8sClient's Revision
 *   watch lists them before the KServices; `?watch=1` is a quiet watch as above.
 * - `GET …/revisions/<name>`: a small Revision with `status.actualReplicas: 1`.
 * - `GET /meta`: `{objects, listBytes, itemBytes, pages, pageSize, …}` where
 *   `listBytes` is the sum of the page bodies at `limit=500`.
 * - `GET /stats`: request counters.
 *
 * Page bodies are serialised once and cached, so serving costs the consumer
 * nothing but the bytes. Start: `node --import tsx bench/sync/server.ts
 * --objects 10000`; prints one JSON line when listening; exits when stdin
 * closes or on SIGTERM.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import process from "node:process";
import { serveChild } from "../lib/child-server.ts";
import { specToAnnotation } from "../../src/flyte/spec.ts";
import { BENCH_NAMESPACE, BENCH_PATH, generateEvents } from "../lib/data.ts";

/** What the server prints once listening (and serves on `/meta`). */
export interface SyncServerMeta {
  url: string;
  objects: number;
  pageSize: number;
  pages: number;
  /** Sum of the bytes of all list pages at `limit=pageSize`. */
  listBytes: number;
  /** Sum of the bytes of the items alone (compact JSON). */
  itemBytes: number;
  /** Bytes of `metadata.managedFields` and of `spec`, summed over items (what pruning would skip). */
  managedFieldsBytes: number;
  specBytes: number;
  listResourceVersion: string;
  /** The Revisions (one per KService): sum of their list pages at `limit=pageSize`, and of the items alone. */
  revisionListBytes: number;
  revisionItemBytes: number;
  generateMs: number;
  pid: number;
}

const PAGE_SIZE = 500;
const REVISION_PATH = `/apis/serving.knative.dev/v1/namespaces/${BENCH_NAMESPACE}/revisions/`;

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

interface GeneratedObject {
  metadata: { name: string; uid: string; resourceVersion: string; creationTimestamp: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: { template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: { image: string; args: string[]; env: { name: string; value: string }[]; resources: { requests: { cpu: string } } }[] } } };
  status: { latestReadyRevisionName: string; latestCreatedRevisionName: string; traffic: { revisionName?: string }[]; observedGeneration: number };
}

/** The Revision Knative's controller would have written for `ksvc` (its latest ready one). */
function revisionFor(ksvc: GeneratedObject, i: number): string {
  const m = ksvc.metadata;
  const name = ksvc.status.latestReadyRevisionName;
  const t = m.creationTimestamp;
  const gen = String(ksvc.status.observedGeneration);
  const cfgUid = `${m.uid.slice(0, 24)}${String(i).padStart(12, "0")}`;
  return JSON.stringify({
    apiVersion: "serving.knative.dev/v1",
    kind: "Revision",
    metadata: {
      annotations: { ...ksvc.spec.template.metadata?.annotations, "serving.knative.dev/creator": "system:serviceaccount:flyte:flyte-apps", "serving.knative.dev/routes": m.name, "serving.knative.dev/routingStateModified": t },
      creationTimestamp: t,
      generation: 1,
      labels: {
        ...ksvc.spec.template.metadata?.labels,
        "serving.knative.dev/configuration": m.name,
        "serving.knative.dev/configurationGeneration": gen,
        "serving.knative.dev/configurationUID": cfgUid,
        "serving.knative.dev/routingState": "active",
        "serving.knative.dev/service": m.name,
        "serving.knative.dev/serviceUID": m.uid,
      },
      managedFields: [{
        apiVersion: "serving.knative.dev/v1",
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:annotations": { ".": {}, "f:serving.knative.dev/creator": {}, "f:serving.knative.dev/routes": {}, "f:serving.knative.dev/routingStateModified": {} }, "f:labels": { ".": {}, "f:serving.knative.dev/configuration": {}, "f:serving.knative.dev/configurationGeneration": {}, "f:serving.knative.dev/configurationUID": {}, "f:serving.knative.dev/routingState": {}, "f:serving.knative.dev/service": {}, "f:serving.knative.dev/serviceUID": {} }, "f:ownerReferences": { ".": {}, [`k:{"uid":"${cfgUid}"}`]: {} } },
          "f:spec": { ".": {}, "f:containerConcurrency": {}, "f:containers": {}, "f:enableServiceLinks": {}, "f:timeoutSeconds": {} },
        },
        manager: "controller",
        operation: "Update",
        time: t,
      }, {
        apiVersion: "serving.knative.dev/v1",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:status": { ".": {}, "f:actualReplicas": {}, "f:conditions": {}, "f:containerStatuses": {}, "f:desiredReplicas": {}, "f:observedGeneration": {} } },
        manager: "controller",
        operation: "Update",
        subresource: "status",
        time: t,
      }],
      name,
      namespace: BENCH_NAMESPACE,
      ownerReferences: [{ apiVersion: "serving.knative.dev/v1", blockOwnerDeletion: true, controller: true, kind: "Configuration", name: m.name, uid: cfgUid }],
      resourceVersion: String(3_000_000 + i),
      uid: `${m.uid.slice(0, 24)}${String(i + 1).padStart(12, "0")}`,
    },
    spec: { ...ksvc.spec.template.spec, containerConcurrency: 0 },
    status: {
      actualReplicas: 1 + (i % 3),
      conditions: ["Active", "ContainerHealthy", "Ready", "ResourcesAvailable"].map((type) => ({ lastTransitionTime: t, status: "True", type })),
      containerStatuses: [{ imageDigest: `${ksvc.spec.template.spec.containers[0]!.image.split(":")[0]}@sha256:${m.uid.replace(/-/g, "").padEnd(64, "0").slice(0, 64)}`, name: "app" }],
      desiredReplicas: 1 + (i % 3),
      observedGeneration: 1,
    },
  });
}

/**
 * N distinct objects: one generator call per object (its own seed, a pool of
 * one service), the name made unique with the object's index. Deterministic.
 * The generator's stand-in `flyte.org/app-spec` (random base64) becomes what
 * Flyte writes and AppK8sClient converts: `flyte.org/app-id` and a real
 * `flyte.org/spec` (base64 protobuf of the container's image, args, env, resources).
 */
function generateObjects(n: number): { ksvcs: string[]; revisions: string[] } {
  const out: string[] = [];
  const revisions: string[] = [];
  for (let i = 0; i < n; i++) {
    const { lines } = generateEvents(1, { seed: 7_000_003 + i * 7919, services: 1 });
    const obj = (JSON.parse(lines[0]!) as { object: GeneratedObject }).object;
    const m = obj.metadata;
    m.name = m.name.replace(/-0$/, `-${i}`);
    m.resourceVersion = String(4_000_000 + i);
    const c = obj.spec.template.spec.containers[0]!;
    const a = m.annotations;
    delete a["flyte.org/app-spec"];
    a["flyte.org/app-id"] = `${m.labels["flyte.org/project"]}/${m.labels["flyte.org/domain"]}/${m.labels["flyte.org/app-name"]}`;
    a["flyte.org/spec"] = specToAnnotation({
      container: {
        image: c.image,
        args: c.args,
        env: c.env.map((e) => ({ key: e.name, value: e.value })),
        resources: { requests: [{ name: "CPU", value: c.resources.requests.cpu }, { name: "MEMORY", value: "1Gi" }], limits: [{ name: "CPU", value: "2" }, { name: "MEMORY", value: "4Gi" }] },
      },
      autoscaling: { replicas: { min: 0, max: 3 } },
      desiredState: "DESIRED_STATE_ACTIVE",
    } as never);
    // Revision names unique per object (the generator's derive from the name before the rename above).
    const st = obj.status;
    const ready = `${m.name}-${st.latestReadyRevisionName.slice(-5)}`;
    st.latestCreatedRevisionName = `${m.name}-${st.latestCreatedRevisionName.slice(-5)}`;
    st.latestReadyRevisionName = ready;
    for (const t of st.traffic) if (t.revisionName) t.revisionName = st.latestCreatedRevisionName;
    out.push(JSON.stringify(obj));
    revisions.push(revisionFor(obj, i));
  }
  return { ksvcs: out, revisions };
}

const objects = Number(argValue("--objects") ?? process.env.BENCH_OBJECTS ?? 10_000);
if (!Number.isInteger(objects) || objects < 0) throw new Error(`sync server: bad --objects ${objects}`);
const LIST_RV = String(5_000_000);

const t0 = performance.now();
const { ksvcs: items, revisions } = generateObjects(objects);
const generateMs = Math.round(performance.now() - t0);

const pageCache = new Map<string, Buffer>();
function page(offset: number, limit: number, of: string[] = items, kind = "ServiceList"): Buffer {
  const key = `${kind}:${offset}:${limit}`;
  let body = pageCache.get(key);
  if (body) return body;
  const end = limit > 0 ? Math.min(of.length, offset + limit) : of.length;
  const remaining = of.length - end;
  const metadata = remaining > 0
    ? { continue: Buffer.from(JSON.stringify({ o: end })).toString("base64url"), remainingItemCount: remaining, resourceVersion: LIST_RV }
    : { resourceVersion: LIST_RV };
  const head = `{"apiVersion":"serving.knative.dev/v1","items":[`;
  const tail = `],"kind":"${kind}","metadata":${JSON.stringify(metadata)}}`;
  body = Buffer.from(head + of.slice(offset, end).join(",") + tail);
  if (limit === PAGE_SIZE) pageCache.set(key, body); // the benchmark's page size; others are one-offs
  return body;
}

let listBytes = 0;
let pages = 0;
for (let at = 0; at < items.length; at += PAGE_SIZE) {
  listBytes += page(at, PAGE_SIZE).length;
  pages++;
}
let revisionListBytes = 0;
for (let at = 0; at < revisions.length; at += PAGE_SIZE) revisionListBytes += page(at, PAGE_SIZE, revisions, "RevisionList").length;
const revisionItemBytes = revisions.reduce((n, s) => n + Buffer.byteLength(s), 0);
let itemBytes = 0;
let managedFieldsBytes = 0;
let specBytes = 0;
for (const s of items) {
  itemBytes += Buffer.byteLength(s);
  const o = JSON.parse(s) as { metadata: { managedFields?: unknown }; spec?: unknown };
  managedFieldsBytes += Buffer.byteLength(JSON.stringify(o.metadata.managedFields ?? null));
  specBytes += Buffer.byteLength(JSON.stringify(o.spec ?? null));
}

const stats = { lists: 0, watches: 0, revisions: 0, other: 0, openWatches: 0 };
let meta: SyncServerMeta | undefined;

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? "/", "http://localhost");
  const isRevisions = url.pathname === REVISION_PATH.slice(0, -1);
  if (req.method === "GET" && (url.pathname === BENCH_PATH || isRevisions)) {
    const q = url.searchParams;
    const watch = q.get("watch");
    if (watch === "1" || watch === "true") {
      stats.watches++;
      if (q.get("sendInitialEvents") === "true") {
        json(res, 422, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "Invalid", code: 422, message: "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled" });
        return;
      }
      stats.openWatches++;
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache, private" });
      res.flushHeaders();
      res.once("close", () => stats.openWatches--);
      return; // quiet until the client leaves
    }
    stats.lists++;
    let offset = 0;
    const cont = q.get("continue");
    if (cont) {
      try {
        offset = (JSON.parse(Buffer.from(cont, "base64url").toString()) as { o: number }).o;
      } catch {
        json(res, 400, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "BadRequest", code: 400, message: "bad continue token" });
        return;
      }
    }
    const limit = Number(q.get("limit") ?? 0) || 0;
    const body = isRevisions ? page(offset, limit, revisions, "RevisionList") : page(offset, limit);
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
    return;
  }
  if (req.method === "GET" && url.pathname.startsWith(REVISION_PATH)) {
    stats.revisions++;
    const name = decodeURIComponent(url.pathname.slice(REVISION_PATH.length));
    json(res, 200, {
      apiVersion: "serving.knative.dev/v1",
      kind: "Revision",
      metadata: { name, namespace: BENCH_NAMESPACE, resourceVersion: LIST_RV },
      status: { actualReplicas: 1, desiredReplicas: 1 },
    });
    return;
  }
  if (url.pathname === "/meta") return json(res, 200, meta);
  if (url.pathname === "/stats") return json(res, 200, stats);
  stats.other++;
  json(res, 404, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 });
}

serveChild(handle, (url) => {
  meta = {
    url,
    objects,
    pageSize: PAGE_SIZE,
    pages,
    listBytes,
    itemBytes,
    managedFieldsBytes,
    specBytes,
    listResourceVersion: LIST_RV,
    revisionListBytes,
    revisionItemBytes,
    generateMs,
    pid: process.pid,
  };
  return meta;
});
