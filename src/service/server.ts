/**
 * `startService`: everything `appwatch serve` runs on a given cluster — the
 * Flyte app watch, the Hono API on this runtime's server, and an orderly
 * shutdown. Which cluster (a real one, or the built-in sandbox) is the
 * caller's choice: the CLI makes it (`src/cli.ts`), so nothing here loads the
 * sandbox.
 * @module
 */
import type { AppK8sClient } from "../flyte/app-client.ts";
import { connect } from "../kube/connect.ts";
import type { Logger } from "../log.ts";
import type { Clock } from "../watch/clock.ts";
import { adapterOptions, type ClusterSource, compose } from "./compose.ts";
import type { AppwatchApp } from "./app.ts";
import { type ListeningServer, loadAdapter } from "./adapters/types.ts";
import { exposureWarning, runtimeLimitsWarning } from "./exposure.ts";
import { FALLBACK_NAMESPACE, type ServiceSettings } from "./settings/mod.ts";

/** The settings `startService` needs, derived from the settings table (`settings.ts`; `config.ts` reads them). */
export type { ServiceSettings };

/** The cluster a service watches, and who releases it (declared with the composition every entry shares). */
export type { ClusterSource };

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
    namespaces: options.namespaces?.length ? [...options.namespaces] : [client.namespace ?? FALLBACK_NAMESPACE],
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

/**
 * Starts the service on `io.cluster` (which it then owns); resolves once it listens (the watch
 * syncs in the background). The composition is the one every entry shares (`src/service/compose.ts`);
 * what is particular here is that this entry owns its listener (and the optional gRPC one).
 */
export async function startService<C extends ClusterSource>(
  settings: ServiceSettings,
  io: {
    logger: Logger;
    cluster: C;
    /** The cluster is the sandbox's demo data (the CLI knows: `openCluster`); every surface says so. */
    sandbox?: boolean;
    /** The app's time: heartbeats, stream deadlines, the shutdown wait (tests: a `VirtualClock`). Default: the real clock. */
    clock?: Clock;
  },
): Promise<RunningService<C>> {
  const log = io.logger;
  const cluster = io.cluster;
  // For JavaScript callers of the old signature: say what is missing rather than fail later.
  if (!cluster?.client) throw new TypeError("startService needs io.cluster: connectCluster(…) for a real cluster, or startSandboxCluster(…) from the ./sandbox entry");
  let adapter;
  try {
    adapter = await loadAdapter(adapterOptions(settings));
  } catch (err) {
    await cluster.close().catch(() => {});
    throw err;
  }
  const service = compose(settings, { logger: log, cluster, runtime: adapter, sandbox: io.sandbox === true, ...(io.clock ? { clock: io.clock } : {}) });
  const listeners: ListeningServer[] = [];
  const closeListeners = async () => {
    for (const l of listeners.splice(0).reverse()) await l.close().catch(() => {});
  };
  try {
    const server = await adapter.listen(service.fetch, { port: settings.port, hostname: settings.host });
    listeners.push(server);
    let grpc: ListeningServer | undefined;
    if (settings.grpcPort !== undefined) {
      const { listenGrpc } = await import("./adapters/grpc.ts");
      grpc = await listenGrpc(service.api.appService, { port: settings.grpcPort, hostname: settings.host });
      listeners.push(grpc);
    }
    const namespaces = [...cluster.namespaces];
    log.info("appwatch listening", {
      url: server.url,
      ...(grpc ? { grpc: grpc.url } : {}),
      runtime: adapter.runtime,
      cluster: cluster.describe,
      namespaces: namespaces.includes("*") ? "*" : namespaces,
      auth: settings.authTokens.length > 0,
    });
    const exposed = exposureWarning(settings.host, settings.authTokens.length > 0);
    if (exposed) log.warn(exposed, { host: settings.host, port: server.port });
    const limits = runtimeLimitsWarning(adapter.runtime, settings.host);
    if (limits) log.warn(limits, { host: settings.host, port: server.port, runtime: adapter.runtime });
    return {
      url: server.url,
      port: server.port,
      grpcUrl: grpc?.url,
      apps: service.apps,
      api: service.api,
      cluster,
      watching: service.watching,
      stop: () => service.stop(closeListeners),
    };
  } catch (err) {
    await service.stop(closeListeners);
    throw err;
  }
}
