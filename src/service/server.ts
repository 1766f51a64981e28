/**
 * `startService`: everything `appwatch serve` runs — the cluster connection
 * (or the built-in sandbox with demo apps), the Flyte app watch, the Hono API
 * on this runtime's server, and an orderly shutdown.
 * @module
 */
import process from "node:process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { AppK8sClient, AppsForbiddenError, KnativeNotInstalledError } from "../flyte/app-client.ts";
import type { SlowConsumerPolicy } from "../flyte/subscriptions.ts";
import { KubeClient } from "../kube/client.ts";
import { connect } from "../kube/connect.ts";
import type { Logger } from "../log.ts";
import { type RunningSandbox, seedDemo, startDemoActivity, startSandbox } from "../sandbox/mod.ts";
import { type AppwatchApp, CLOSE, createApp } from "./app.ts";
import { type ListeningServer, loadAdapter } from "./adapters/types.ts";

/** The settings `startService` needs (see `config.ts` for how they are read). */
export interface ServiceSettings {
  kubeconfig?: string;
  context?: string;
  /** Namespaces to watch; `["*"]` for all; empty: the context's namespace, else `flyte`. */
  namespaces: string[];
  /** Use the built-in sandbox API server with demo apps. */
  sandbox: boolean;
  /** Port of the sandbox API server (0: any free port). */
  sandboxPort?: number;
  port: number;
  /** Also serve AppService over gRPC (HTTP/2 cleartext) on this port (0: any free port; unset: off). */
  grpcPort?: number;
  host: string;
  baseDomain: string;
  scheme: string;
  ingressAppsPort: number;
  watchBufferSize: number;
  slowConsumer: SlowConsumerPolicy;
  authTokens: string[];
  allowedOrigins: string[];
  maxConnectionsPerClient: number;
  maxMessageBytes: number;
  heartbeatSeconds: number;
  /** WebSocket protocol ping period; a peer that stops answering is closed. */
  pingSeconds: number;
  resumeWindow: number;
  shutdownTimeoutSeconds: number;
  /** Sandbox: ms between demo changes (0: no activity). */
  demoIntervalMs: number;
}

/** A running service. */
export interface RunningService {
  readonly url: string;
  readonly port: number;
  /** Base URL of the gRPC (HTTP/2) listener when `grpcPort` is set. */
  readonly grpcUrl: string | undefined;
  readonly apps: AppK8sClient;
  readonly api: AppwatchApp;
  /** URL of the sandbox API server when running on it. */
  readonly sandboxUrl: string | undefined;
  /** The sandbox when running on it (tests and demos drive it). */
  readonly sandbox: RunningSandbox | undefined;
  /** Settles when the watch has synced, or with the fatal error that stopped it (Knative missing, forbidden). */
  readonly watching: Promise<void>;
  /** Graceful stop: refuse new streams, close clients with 1001, stop the server and the watch. */
  stop(): Promise<void>;
}

/** True when kubectl would find some cluster configuration. */
export function clusterConfigExists(env: Record<string, string | undefined> = process.env): boolean {
  if (env.KUBECONFIG && env.KUBECONFIG.split(/[:;]/).some((p) => p && existsSync(p))) return true;
  const home = env.HOME || homedir();
  if (existsSync(join(home, ".kube", "config"))) return true;
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
}

/** The version in package.json, read once (falls back to "dev"). */
const VERSION = "0.1.0";

/** Starts the service; resolves once it listens (the watch syncs in the background). */
export async function startService(
  settings: ServiceSettings,
  io: { logger: Logger; env?: Record<string, string | undefined> },
): Promise<RunningService> {
  const log = io.logger;
  const env = io.env ?? process.env;
  const cleanups: (() => Promise<void> | void)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
  };
  try {
    // 1. The cluster, or the sandbox.
    const explicit = settings.kubeconfig !== undefined || settings.context !== undefined;
    let kube: KubeClient;
    let sandboxUrl: string | undefined;
    let sandbox: RunningSandbox | undefined;
    if (!settings.sandbox && (explicit || clusterConfigExists(env))) {
      kube = await connect({ kubeconfig: settings.kubeconfig, context: settings.context, env, logger: log });
    } else {
      const demo = new AbortController();
      // RVs start at the current time in ms, so a restarted sandbox never accepts the previous one's resume tokens.
      const sb = await startSandbox({ port: settings.sandboxPort ?? 0, initialResourceVersion: Date.now(), logger: log.child({ component: "sandbox" }) });
      cleanups.push(() => sb.close());
      cleanups.push(() => demo.abort());
      seedDemo(sb.sandbox, { namespace: "flyte", count: 6 });
      if (settings.demoIntervalMs > 0) startDemoActivity(sb.sandbox, { intervalMs: settings.demoIntervalMs, signal: demo.signal });
      sandboxUrl = sb.url;
      sandbox = sb;
      kube = new KubeClient({ server: sb.url, namespace: "flyte" });
      log.warn(
        settings.sandbox
          ? "SANDBOX MODE (--sandbox): serving demo apps from a built-in fake Kubernetes API, not a real cluster"
          : "SANDBOX MODE: no cluster configuration found ($KUBECONFIG, ~/.kube/config, in-cluster), so appwatch serves demo apps from a built-in fake Kubernetes API. Pass --kubeconfig or --context to watch a real cluster.",
        { sandbox: sb.url },
      );
    }
    cleanups.push(() => kube.close());

    // 2. The app watch.
    const namespaces = settings.namespaces.length > 0 ? settings.namespaces : [kube.namespace ?? "flyte"];
    const apps = new AppK8sClient({
      client: kube,
      namespace: namespaces.includes("*") ? "*" : namespaces,
      config: {
        baseDomain: settings.baseDomain,
        scheme: settings.scheme,
        ingressAppsPort: settings.ingressAppsPort,
        watchBufferSize: settings.watchBufferSize,
        slowConsumer: settings.slowConsumer,
      },
      resumeWindow: settings.resumeWindow,
      logger: log,
    });
    cleanups.push(() => apps.stopWatching());

    // 3. The API on this runtime's server.
    const adapter = await loadAdapter();
    const api = createApp({
      client: apps,
      upgradeWebSocket: adapter.upgradeWebSocket,
      clientAddress: adapter.clientAddress,
      authTokens: settings.authTokens,
      allowedOrigins: settings.allowedOrigins,
      limits: {
        maxConnectionsPerClient: settings.maxConnectionsPerClient,
        maxMessageBytes: settings.maxMessageBytes,
        heartbeatMs: settings.heartbeatSeconds * 1000,
        pingMs: settings.pingSeconds * 1000,
      },
      logger: log,
      build: { version: VERSION, runtime: adapter.runtime, runtimeVersion: runtimeVersion() },
    });
    const server: ListeningServer = await adapter.listen(api.app, {
      port: settings.port,
      hostname: settings.host,
      maxPayloadBytes: Math.max(settings.maxMessageBytes * 4, 64 * 1024),
      pingSeconds: settings.pingSeconds,
    });
    cleanups.push(() => server.close());
    let grpc: ListeningServer | undefined;
    if (settings.grpcPort !== undefined) {
      const { listenGrpc } = await import("./adapters/grpc.ts");
      grpc = await listenGrpc(api.appService, { port: settings.grpcPort, hostname: settings.host });
      cleanups.push(() => grpc!.close());
    }
    cleanups.push(async () => {
      // Give clients a moment to receive the close frame before connections are cut.
      for (let i = 0; i < 50 && api.metrics.wsConnections + api.metrics.sseConnections + api.metrics.connectStreams > 0; i++) await new Promise((r) => setTimeout(r, 20));
    });
    cleanups.push(() => api.closeStreams(CLOSE.goingAway, "server shutting down"));
    log.info("appwatch listening", {
      url: server.url,
      ...(grpc ? { grpc: grpc.url } : {}),
      runtime: adapter.runtime,
      cluster: kube.server,
      namespaces: namespaces.includes("*") ? "*" : namespaces,
      auth: settings.authTokens.length > 0,
    });

    // 4. Watch in the background; retry until synced unless the cluster says it can never work.
    const stopWatch = new AbortController();
    cleanups.push(() => stopWatch.abort());
    const watching = (async () => {
      let delay = 1000;
      for (;;) {
        try {
          await apps.startWatching(stopWatch.signal);
          log.info("initial sync done; ready", { apps: apps.metrics.events.create });
          return;
        } catch (err) {
          if (stopWatch.signal.aborted) return;
          if (err instanceof KnativeNotInstalledError || err instanceof AppsForbiddenError) {
            log.error("cannot watch Flyte apps", { error: err.message });
            throw err;
          }
          log.warn("cannot reach the Kubernetes API yet; retrying", { error: (err as Error).message, retryInMs: delay });
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 30_000);
        }
      }
    })();
    watching.catch(() => {});

    let stopping: Promise<void> | undefined;
    return {
      url: server.url,
      port: server.port,
      grpcUrl: grpc?.url,
      apps,
      api,
      sandboxUrl,
      sandbox,
      watching,
      stop() {
        stopping ??= (async () => {
          log.info("shutting down", { deadlineSeconds: settings.shutdownTimeoutSeconds });
          let timer: ReturnType<typeof setTimeout> | undefined;
          const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, settings.shutdownTimeoutSeconds * 1000)));
          await Promise.race([stopAll(), deadline]);
          clearTimeout(timer); // else the pending deadline keeps the process alive after a clean stop
          log.info("stopped");
        })();
        return stopping;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function runtimeVersion(): string {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  return g.Deno?.version?.deno ?? g.Bun?.version ?? process.versions.node;
}
