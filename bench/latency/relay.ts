/**
 * B6 peer: the minimal relay — `@kubernetes/client-node`'s informer (1.4.0 on Node; 2.0.1, the npm
 * alias `@kubernetes/client-node-2`, on Deno and Bun, where 1.4.0 does not run) → every changed
 * object's JSON to the subscribers of its app, with this runtime's plainest server and no appwatch
 * code: Node `node:http` + `ws`, Deno `Deno.serve` + `Deno.upgradeWebSocket`, Bun `Bun.serve` +
 * `server.publish`. Subscribers are routed like appwatch's (`/v1/watch?project=&domain=&app=`:
 * all apps, one project+domain, one app — `topicOf` of the B3 bare servers), by the object's
 * `flyte.org/app-id` annotation; every frame is `{"update":<the object's JSON>}`, encoded once
 * and written to every subscriber of its three topics. `/v1/watch` with `Accept:
 * text/event-stream` is the same relay over SSE (`data: <frame>\n\n`, one encoded buffer for all).
 *
 *   node --import tsx bench/latency/relay.ts <kubeconfig> <namespace>
 *   deno run -A bench/latency/relay.ts <kubeconfig> <namespace>
 *   bun bench/latency/relay.ts <kubeconfig> <namespace>
 *
 * stdout: one line `{"ready":{"url":"http://…","pid":…,"version":…,"peer":…,"apps":n}}` once the
 * informer has listed; it exits when its stdin closes or on SIGTERM.
 * @module
 */
import process from "node:process";
import { Buffer } from "node:buffer";
import { RUNTIME, runtimeVersion, Topics, topicOf } from "../lib/bare-common.ts";

const [kubeconfig, namespace] = process.argv.slice(2).filter((a) => !a.startsWith("-"));
if (!kubeconfig || !namespace) throw new Error("usage: latency/relay.ts <kubeconfig> <namespace>");
const SELECTOR = "flyte.org/app-managed=true";
const START = `{"start":{}}`;

// ------------------------------------------------------------------ the informer

// A variable module name keeps client-node's types (and 2.0.1's @types/node) out of this repo's tsc run.
const peer = RUNTIME === "node" ? "@kubernetes/client-node" : "@kubernetes/client-node-2";
// deno-lint-ignore no-explicit-any
const k8s: any = await import(peer);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfig);
// client-node refuses plain HTTP unless told to skip TLS verification (the sandbox is http://).
kc.loadFromOptions({
  // deno-lint-ignore no-explicit-any
  clusters: kc.clusters.map((c: any) => ({ ...c, skipTLSVerify: c.skipTLSVerify || String(c.server).startsWith("http:") })),
  users: kc.users,
  contexts: kc.contexts,
  currentContext: kc.currentContext,
});
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const path = `/apis/serving.knative.dev/v1/namespaces/${namespace}/services`;
const listFn = () => api.listNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace, plural: "services", labelSelector: SELECTOR });
const informer = k8s.makeInformer(kc, path, listFn, SELECTOR);

type Publish = (topic: string, ws: string, sse: Uint8Array | undefined) => void;
let publish: Publish = () => undefined;
let sseSubscribers = 0;
const encoder = new TextEncoder();
// deno-lint-ignore no-explicit-any
const relay = (obj: any) => {
  const id = obj?.metadata?.annotations?.["flyte.org/app-id"];
  if (typeof id !== "string") return;
  const frame = `{"update":${JSON.stringify(obj)}}`;
  const sse = sseSubscribers > 0 ? encoder.encode(`data: ${frame}\n\n`) : undefined;
  const [p, d] = id.split("/");
  publish("*", frame, sse);
  publish(`${p}/${d}`, frame, sse);
  publish(id, frame, sse);
};
informer.on("add", relay);
informer.on("update", relay);
let stopped = false;
informer.on("error", (err: unknown) => void (stopped || process.stderr.write(`relay informer error: ${String(err)}\n`)));

// ------------------------------------------------------------------ the server

/** SSE subscribers, by topic (one writer each). */
const sse = new Topics<(bytes: Uint8Array) => void>();
const sseStart = encoder.encode(`retry: 2000\n\ndata: ${START}\n\n`);
const publishSse = (topic: string, bytes: Uint8Array | undefined) => {
  if (!bytes) return;
  const set = sse.get(topic);
  if (set) for (const write of set) write(bytes);
};
/** An SSE response over web streams (Deno, Bun): the subscriber's writer is its stream's `enqueue`. */
function sseResponse(url: string): Response {
  const topic = topicOf(url);
  let write: ((b: Uint8Array) => void) | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      write = (b) => controller.enqueue(b);
      controller.enqueue(sseStart);
      sse.add(topic, write);
      sseSubscribers++;
    },
    cancel() {
      if (write) sse.delete(topic, write);
      sseSubscribers--;
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}
const isSse = (accept: string | null | undefined) => (accept ?? "").includes("text/event-stream");

let url: string;
if (RUNTIME === "node") {
  const { createServer } = await import("node:http");
  const { WebSocket, WebSocketServer } = await import("ws");
  const ws = new Topics<InstanceType<typeof WebSocket>>();
  const http = createServer((req, res) => {
    if (!req.url?.startsWith("/v1/watch") || !isSse(req.headers.accept)) return void res.writeHead(404).end();
    const topic = topicOf(req.url);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(sseStart);
    const write = (b: Uint8Array) => void res.write(b);
    sse.add(topic, write);
    sseSubscribers++;
    res.on("close", () => {
      sse.delete(topic, write);
      sseSubscribers--;
    });
  });
  const wss = new WebSocketServer({ server: http, path: "/v1/watch", perMessageDeflate: false });
  wss.on("connection", (socket, req) => {
    const topic = topicOf(req.url ?? "/");
    ws.add(topic, socket);
    socket.on("close", () => ws.delete(topic, socket));
    socket.on("error", () => undefined);
    socket.send(START);
  });
  publish = (topic, frame, bytes) => {
    publishSse(topic, bytes);
    const set = ws.get(topic);
    if (!set || set.size === 0) return;
    const buf = Buffer.from(frame);
    for (const s of set) if (s.readyState === WebSocket.OPEN) s.send(buf, { binary: false });
  };
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const address = http.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
} else if (RUNTIME === "deno") {
  interface DenoLike {
    serve(options: { port: number; hostname: string; onListen(addr: { port: number }): void }, handler: (req: Request) => Response): unknown;
    upgradeWebSocket(req: Request, options: { idleTimeout: number }): { socket: WebSocket; response: Response };
  }
  const Deno = (globalThis as unknown as { Deno: DenoLike }).Deno;
  const ws = new Topics<WebSocket>();
  publish = (topic, frame, bytes) => {
    publishSse(topic, bytes);
    const set = ws.get(topic);
    if (set) for (const s of set) if (s.readyState === 1) s.send(frame);
  };
  const port = await new Promise<number>((resolve) => {
    Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: (addr) => resolve(addr.port) }, (req) => {
      if (new URL(req.url).pathname !== "/v1/watch") return new Response(null, { status: 404 });
      if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") return isSse(req.headers.get("accept")) ? sseResponse(req.url) : new Response(null, { status: 404 });
      const topic = topicOf(req.url);
      const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: 30 });
      socket.onopen = () => {
        ws.add(topic, socket);
        socket.send(START);
      };
      socket.onclose = () => ws.delete(topic, socket);
      socket.onerror = () => undefined;
      return response;
    });
  });
  url = `http://127.0.0.1:${port}`;
} else {
  interface BunSocket {
    data: { topic: string };
    subscribe(topic: string): void;
    send(data: string): number;
  }
  interface BunServer {
    port: number;
    upgrade(req: Request, options: { data: { topic: string } }): boolean;
    publish(topic: string, data: string): number;
  }
  interface BunLike {
    serve(options: {
      port: number;
      hostname: string;
      idleTimeout: number;
      fetch(req: Request, server: BunServer): Response | undefined;
      websocket: Record<string, unknown>;
    }): BunServer;
  }
  const Bun = (globalThis as unknown as { Bun: BunLike }).Bun;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0, // SSE streams stay open
    fetch(req, srv) {
      if (new URL(req.url).pathname !== "/v1/watch") return new Response(null, { status: 404 });
      if (isSse(req.headers.get("accept"))) return sseResponse(req.url);
      if (srv.upgrade(req, { data: { topic: topicOf(req.url) } })) return undefined;
      return new Response(null, { status: 404 });
    },
    websocket: {
      open(ws: BunSocket) {
        ws.subscribe(ws.data.topic);
        ws.send(START);
      },
      close() {},
      message() {},
      perMessageDeflate: false,
      backpressureLimit: 16 << 20,
      closeOnBackpressureLimit: false,
      idleTimeout: 60,
      sendPings: true,
    },
  });
  publish = (topic, frame, bytes) => {
    publishSse(topic, bytes);
    server.publish(topic, frame);
  };
  url = `http://127.0.0.1:${server.port}`;
}

await informer.start();
const stop = () => {
  stopped = true;
  void Promise.resolve(informer.stop()).catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
process.stdout.write(JSON.stringify({ ready: { url, pid: process.pid, version: runtimeVersion(), peer: `${peer} ${RUNTIME === "node" ? "1.4.0" : "2.0.1"}`, apps: informer.list().length } }) + "\n");
