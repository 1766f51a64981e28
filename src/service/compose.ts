/**
 * The one composition every entry runs (`appwatch serve` through `startService`, `deno serve`,
 * Bun's default export, the Cloudflare Durable Object): settings + a cluster + a runtime adapter
 * → the Flyte app watch (`AppK8sClient`), the Hono API (`createApp`), the watch started with
 * retry, and an orderly, deadline-bounded stop. What differs per entry is only the adapter and
 * who owns the listener: `startService` listens itself and passes its `close` to
 * {@link Composition.stop}; `deno serve` and Bun own theirs.
 *
 * No runtime-specific code and no `node:` built-ins here (the Cloudflare build bundles it).
 * @module
 */
import { AppK8sClient, AppsForbiddenError, KnativeNotInstalledError } from "../flyte/app-client.ts";
import type { KubeClient } from "../kube/client.ts";
import { describeKubeFailure } from "../kube/errors.ts";
import type { Logger } from "../log.ts";
import type { AdapterOptions, FetchHandler } from "./adapters/types.ts";
import { type AppwatchApp, CLOSE, createApp } from "./app.ts";
import type { AppRuntime } from "./transports.ts";
import type { ServiceSettings } from "./settings/table.ts";
import { runtimeVersion, type RuntimeName } from "../runtime.ts";
import { Backoff, sleep } from "../watch/backoff.ts";
import type { Clock } from "../watch/clock.ts";
import { VERSION } from "../version.ts";

/** The version in package.json. */
export { VERSION };

/** The cluster a service watches, and who releases it. */
export interface ClusterSource {
  /** The Kubernetes API. */
  readonly client: KubeClient;
  /** Namespaces to watch: one or more, or `["*"]` for all. */
  readonly namespaces: readonly string[];
  /** What it is, for logs (the API server's URL, "sandbox …"). */
  readonly describe: string;
  /** Releases it (the client, and whatever runs behind it). The composition calls it on stop. */
  close(): Promise<void>;
}

/** The adapter as the composition uses it: the app's runtime hooks and the runtime's name. */
export type ComposeRuntime = AppRuntime & { readonly runtime: RuntimeName | (string & {}) };

/** What {@link compose} is given. */
export interface ComposeIo<C extends ClusterSource> {
  logger: Logger;
  /** The cluster (the composition owns it from now on and closes it on stop). */
  cluster: C;
  /** The runtime adapter; none: `/v1/watch` serves SSE only. */
  runtime?: ComposeRuntime;
  /** The cluster is the sandbox's demo data: every surface says so (board, `/readyz`, `appwatch_sandbox`, the `start` frame). */
  sandbox?: boolean;
  /** The app's time: heartbeats, stream deadlines, the shutdown wait (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
}

/** A composed service, not yet (or not by itself) listening. */
export interface Composition<C extends ClusterSource = ClusterSource> {
  /** Serves every route; the runtime's second argument (Deno's info, Bun's server, `env`) goes through. */
  readonly fetch: FetchHandler;
  readonly apps: AppK8sClient;
  readonly api: AppwatchApp;
  readonly cluster: C;
  /** Settles when the watch has synced, or with the fatal error that stopped it (Knative missing, forbidden). */
  readonly watching: Promise<void>;
  /**
   * Graceful stop, at most `shutdownTimeoutSeconds`: stop the watch, refuse new streams, close
   * WebSockets with 1001 and end SSE and Connect streams, wait up to a second for them, then
   * `closeListener` (the caller's server, if it owns one), then release the watch and the cluster.
   * Idempotent: later calls return the first one's promise.
   */
  stop(closeListener?: () => Promise<void>): Promise<void>;
}

/** The adapter options the settings imply (the same for every entry). */
export function adapterOptions(settings: Pick<ServiceSettings, "maxMessageBytes" | "pingSeconds">): Required<AdapterOptions> {
  return { maxPayloadBytes: Math.max(settings.maxMessageBytes * 4, 64 * 1024), pingSeconds: settings.pingSeconds };
}

/** Builds the service on `io.cluster` and starts its watch (retrying until synced, unless the cluster can never work). */
export function compose<C extends ClusterSource>(settings: ServiceSettings, io: ComposeIo<C>): Composition<C> {
  const log = io.logger;
  const cluster = io.cluster;
  // For JavaScript callers: say what is missing rather than fail later.
  if (!cluster?.client) throw new TypeError("the service needs a cluster: connectCluster(…) for a real one, or startSandboxCluster(…) from the ./sandbox entry");
  const namespaces = [...cluster.namespaces];
  const apps = new AppK8sClient({
    client: cluster.client,
    namespace: namespaces.includes("*") ? "*" : namespaces,
    config: {
      baseDomain: settings.baseDomain,
      scheme: settings.scheme,
      ingressAppsPort: settings.ingressAppsPort,
      watchBufferSize: settings.watchBufferSize,
      slowConsumer: settings.slowConsumer,
    },
    resumeWindow: settings.resumeWindow,
    ...(settings.clusterName ? { cluster: settings.clusterName } : {}),
    logger: log,
  });
  const runtimeLabel = io.runtime?.runtime ?? "unknown";
  const api = createApp({
    client: apps,
    ...(io.runtime ? { runtime: io.runtime } : {}),
    ...(io.clock ? { clock: io.clock } : {}),
    authTokens: settings.authTokens,
    allowedOrigins: settings.allowedOrigins,
    limits: {
      maxConnectionsPerClient: settings.maxConnectionsPerClient,
      maxMessageBytes: settings.maxMessageBytes,
      heartbeatMs: settings.heartbeatSeconds * 1000,
      pingMs: settings.pingSeconds * 1000,
      highWaterMark: settings.streamBufferBytes,
    },
    logger: log,
    build: { version: VERSION, runtime: runtimeLabel, runtimeVersion: runtimeVersion() },
    cluster: {
      server: cluster.client.server,
      namespaces,
      sandbox: io.sandbox === true,
      ...(settings.clusterName ? { name: settings.clusterName, ...(settings.clusterOrg ? { organization: settings.clusterOrg } : {}) } : {}),
    },
  });

  // The watch in the background; retry until synced unless the cluster says it can never work.
  const stopWatch = new AbortController();
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

  const quietly = async (step: () => Promise<void> | void) => {
    await Promise.resolve().then(step).catch(() => {});
  };
  let stopping: Promise<void> | undefined;
  return {
    fetch: (req, env) => api.app.fetch(req, env),
    apps,
    api,
    cluster,
    watching,
    stop(closeListener) {
      stopping ??= (async () => {
        log.info("shutting down", { deadlineSeconds: settings.shutdownTimeoutSeconds });
        const ordered = async () => {
          await quietly(() => stopWatch.abort());
          const hadStreams = api.openStreams > 0;
          await quietly(() => api.closeStreams(CLOSE.goingAway, "server shutting down"));
          // Give clients up to a second to receive the close frame before connections are cut (woken
          // by the last close; Connect streams end with their end-stream frame inside closeStreams).
          await quietly(async () => {
            await api.whenClosed(1_000);
            // A drained body is not yet a written one: Deno reports neither, and cutting the connections
            // right away lost the last (end-stream) frame under load. A short grace, only when streams were open.
            if (hadStreams) await sleep(50);
          });
          if (closeListener) await quietly(closeListener);
          await quietly(() => apps.stopWatching());
          await quietly(() => cluster.close());
        };
        let timer: ReturnType<typeof setTimeout> | undefined;
        const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, settings.shutdownTimeoutSeconds * 1000)));
        await Promise.race([ordered(), deadline]);
        clearTimeout(timer); // else the pending deadline keeps the process alive after a clean stop
        log.info("stopped");
      })();
      return stopping;
    },
  };
}
