/**
 * `startService`: everything `appwatch serve` runs on a given cluster — the
 * Flyte app watch, the Hono API on this runtime's server, and an orderly
 * shutdown. Which cluster (a real one, or the built-in sandbox) is the
 * caller's choice: the CLI makes it (`src/cli.ts`), so nothing here loads the
 * sandbox.
 * @module
 */
import { Backoff, sleep } from "../watch/backoff.ts";
import { AppK8sClient, AppsForbiddenError, KnativeNotInstalledError } from "../flyte/app-client.ts";
import type { KubeClient } from "../kube/client.ts";
import { connect } from "../kube/connect.ts";
import { describeKubeFailure } from "../kube/errors.ts";
import type { Logger } from "../log.ts";
import { type AppwatchApp, CLOSE, createApp } from "./app.ts";
import { type ListeningServer, loadAdapter } from "./adapters/types.ts";
import { runtimeVersion } from "../runtime.ts";
import type { ServiceSettings } from "./settings.ts";

/** The settings `startService` needs, derived from the settings table (`settings.ts`; `config.ts` reads them). */
export type { ServiceSettings };

/** The cluster a service watches, and who releases it. */
export interface ClusterSource {
  /** The Kubernetes API. */
  readonly client: KubeClient;
  /** Namespaces to watch: one or more, or `["*"]` for all. */
  readonly namespaces: readonly string[];
  /** What it is, for logs (the API server's URL, "sandbox …"). */
  readonly describe: string;
  /** Releases it (the client, and whatever runs behind it). `startService` calls it on stop, or when it cannot start. */
  close(): Promise<void>;
}

/** Options of {@link connectCluster}. */
export interface ConnectClusterOptions {
  kubeconfig?: string;
  context?: string;
  /** Namespaces to watch; `["*"]` for all; empty or absent: the context's namespace, else `flyte`. */
  namespaces?: readonly string[];
  env?: Record<string, string | undefined>;
  logger?: Logger;
}

/** A real cluster found the way kubectl finds it (`kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, in-cluster). */
export async function connectCluster(options: ConnectClusterOptions = {}): Promise<ClusterSource> {
  const client = await connect({ kubeconfig: options.kubeconfig, context: options.context, env: options.env, logger: options.logger });
  return {
    client,
    namespaces: options.namespaces?.length ? [...options.namespaces] : [client.namespace ?? "flyte"],
    describe: client.server,
    close: () => client.close(),
  };
}

/** A running service. */
export interface RunningService<C extends ClusterSource = ClusterSource> {
  readonly url: string;
  readonly port: number;
  /** Base URL of the gRPC (HTTP/2) listener when `grpcPort` is set. */
  readonly grpcUrl: string | undefined;
  readonly apps: AppK8sClient;
  readonly api: AppwatchApp;
  /** The cluster it watches (tests and demos drive a sandbox through it). */
  readonly cluster: C;
  /** Settles when the watch has synced, or with the fatal error that stopped it (Knative missing, forbidden). */
  readonly watching: Promise<void>;
  /** Graceful stop: refuse new streams, close clients with 1001, stop the server and the watch, close the cluster. */
  stop(): Promise<void>;
}

/** The version in package.json, read once (falls back to "dev"). */
const VERSION = "0.1.0";

/** Starts the service on `io.cluster` (which it then owns); resolves once it listens (the watch syncs in the background). */
export async function startService<C extends ClusterSource>(
  settings: ServiceSettings,
  io: { logger: Logger; cluster: C },
): Promise<RunningService<C>> {
  const log = io.logger;
  const cluster = io.cluster;
  // For JavaScript callers of the old signature: say what is missing rather than fail later.
  if (!cluster?.client) throw new TypeError("startService needs io.cluster: connectCluster(…) for a real cluster, or startSandboxCluster(…) from the ./sandbox entry");
  const kube = cluster.client;
  const cleanups: (() => Promise<void> | void)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
  };
  cleanups.push(() => cluster.close());
  try {
    // 1. The app watch.
    const namespaces = [...cluster.namespaces];
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

    // 2. The API on this runtime's server.
    const adapter = await loadAdapter({ maxPayloadBytes: Math.max(settings.maxMessageBytes * 4, 64 * 1024), pingSeconds: settings.pingSeconds });
    const api = createApp({
      client: apps,
      runtime: adapter,
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
    const server: ListeningServer = await adapter.listen(api.app.fetch, { port: settings.port, hostname: settings.host });
    cleanups.push(() => server.close());
    let grpc: ListeningServer | undefined;
    if (settings.grpcPort !== undefined) {
      const { listenGrpc } = await import("./adapters/grpc.ts");
      grpc = await listenGrpc(api.appService, { port: settings.grpcPort, hostname: settings.host });
      cleanups.push(() => grpc!.close());
    }
    // Give clients up to a second to receive the close frame before connections are cut (woken
    // by the last close; Connect streams end with their end-stream frame inside closeStreams).
    cleanups.push(async () => {
      const hadStreams = api.metrics.wsConnections + api.metrics.sseConnections + api.metrics.connectStreams > 0;
      await api.whenClosed(1_000);
      // A drained body is not yet a written one: Deno reports neither, and cutting the connections
      // right away lost the last (end-stream) frame under load. A short grace, only when streams were open.
      if (hadStreams) await sleep(50);
    });
    cleanups.push(() => api.closeStreams(CLOSE.goingAway, "server shutting down"));
    log.info("appwatch listening", {
      url: server.url,
      ...(grpc ? { grpc: grpc.url } : {}),
      runtime: adapter.runtime,
      cluster: cluster.describe,
      namespaces: namespaces.includes("*") ? "*" : namespaces,
      auth: settings.authTokens.length > 0,
    });

    // 3. Watch in the background; retry until synced unless the cluster says it can never work.
    const stopWatch = new AbortController();
    cleanups.push(() => stopWatch.abort());
    const watching = (async () => {
      // The watch engine's backoff (jittered, capped at 8 s): prompt once the API answers, no herd of replicas.
      const retry = new Backoff();
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
          const delay = retry.next();
          const why = describeKubeFailure(err); // names the cause: no answer, 401, 403, another status
          log[why.level](`${why.message}; retrying`, { error: (err as Error).message, retryInMs: delay });
          await sleep(delay, stopWatch.signal);
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
      cluster,
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
