/**
 * "One suite, two servers": the integration scenarios talk to a `Target` —
 * the sandbox API server or a real kube-apiserver — only through its HTTP
 * API, so the same test code runs against both.
 */
import { KubeClient } from "../../src/kube/client.ts";
import { createKubeClient } from "../../src/kube/connect.ts";
import { startSandbox } from "../../src/sandbox/mod.ts";
import type { Sandbox } from "../../src/sandbox/mod.ts";
import { type RealCluster, startRealCluster } from "./cluster.ts";

export interface TargetOptions {
  /** The WatchList feature (streaming lists); default on. */
  watchList?: boolean;
  /** Real server: `--watch-cache` (default true). Off makes `expireHistory()` deterministic. */
  watchCache?: boolean;
}

export interface Target {
  readonly kind: "sandbox" | "real";
  /** Base URL of the API server. */
  readonly url: string;
  /** An admin client for the watcher; `server` overrides the URL (a fault proxy in front). */
  client(options?: { server?: string; token?: string }): Promise<KubeClient>;
  /** Admin REST call; never throws for HTTP errors. */
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<{ status: number; body: any }>;
  /** Creates the namespace where the server has namespaces. */
  ensureNamespace(ns: string): Promise<void>;
  /** Makes every resourceVersion before now too old (410 on watch). Real: needs watchCache false. */
  expireHistory(): Promise<void>;
  /** Restarts the server: the real process, or the sandbox's emulation of one (streams end, old RVs expire, 429 while warming up). */
  restart(): Promise<void>;
  /** The real cluster, when this is one. */
  readonly real?: RealCluster;
  readonly sandbox?: Sandbox;
  stop(): Promise<void>;
}

export async function sandboxTarget(options: TargetOptions = {}): Promise<Target> {
  const sb = await startSandbox({ watchList: options.watchList ?? true, bookmarkIntervalMs: 1_000, historyLimit: 5_000 });
  const request = async (method: string, path: string, body?: unknown, contentType = "application/json") => {
    const res = await fetch(sb.url + path, {
      method,
      headers: { "content-type": contentType, accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed as any };
  };
  return {
    kind: "sandbox",
    url: sb.url,
    sandbox: sb.sandbox,
    client: (o = {}) => Promise.resolve(new KubeClient({ server: o.server ?? sb.url })),
    request,
    ensureNamespace: () => Promise.resolve(),
    expireHistory: () => Promise.resolve(sb.sandbox.compact()),
    restart: () => Promise.resolve(sb.sandbox.restart()),
    stop: () => sb.close(),
  };
}

export async function realTarget(options: TargetOptions = {}): Promise<Target> {
  const cluster = await startRealCluster({
    watchCache: options.watchCache ?? true,
    ...(options.watchList === false ? { featureGates: "WatchList=false" } : {}),
  });
  return {
    kind: "real",
    url: cluster.url,
    real: cluster,
    client: (o = {}) =>
      createKubeClient({
        server: o.server ?? cluster.url,
        namespace: undefined,
        tls: { ca: cluster.caPem, insecureSkipVerify: false },
        auth: { type: "token", token: o.token ?? cluster.token },
        source: "test",
      }),
    request: (method, path, body, contentType) => cluster.request(method, path, body, contentType ? { contentType } : {}),
    ensureNamespace: async (ns) => {
      const r = await cluster.request("POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
      if (r.status !== 201 && r.status !== 409) throw new Error(`create namespace ${ns}: ${r.status} ${JSON.stringify(r.body)}`);
    },
    expireHistory: async () => {
      if (options.watchCache !== false) throw new Error("expireHistory on a real cluster needs watchCache: false");
      await cluster.compact();
    },
    restart: () => cluster.restartApiserver(),
    stop: () => cluster.stop(),
  };
}
