/**
 * appwatch — watch Flyte apps (Knative Services) on Kubernetes with plain
 * `fetch`, on Deno, Bun and Node.
 *
 * ```ts
 * import { connect, createWatcher, KNATIVE_SERVICES } from "./mod.ts";
 *
 * const client = await connect();                 // kubectl's config order
 * const watcher = createWatcher({
 *   client,
 *   resource: KNATIVE_SERVICES,
 *   namespaces: ["flyte"],
 *   labelSelector: "flyte.org/app-managed=true",
 * });
 * for await (const event of watcher.run(AbortSignal.timeout(60_000))) {
 *   console.log(event.type, event.type === "synced" ? event.phase : event.object.metadata.name);
 * }
 * ```
 *
 * Or mount appwatch's API (WebSocket/SSE watch, apps, health, metrics) in your own Hono server:
 *
 * ```ts
 * import { AppK8sClient, connect, createApp, loadAdapter } from "./mod.ts";
 *
 * const apps = new AppK8sClient({ client: await connect(), namespace: "flyte" });
 * await apps.startWatching();
 * const runtime = await loadAdapter(); // this runtime's WebSocket upgrade, addresses and server
 * const { app } = createApp({ client: apps, runtime });
 * await runtime.listen(app.fetch, { port: 8080, hostname: "127.0.0.1" });
 * ```
 *
 * The sandbox API server (demo apps, fault injection for tests) is the `./sandbox` entry
 * (`src/sandbox/mod.ts`), so the engine never loads it.
 * @module
 */

// Cluster access
export { connect, type ConnectOptions, createKubeClient, type CreateKubeClientOptions } from "./src/kube/connect.ts";
export { type ExecConfig, KubeconfigError, loadClusterConfig, type LoadClusterConfigOptions } from "./src/kube/cluster-config.ts";
export type { ClusterAuth, ClusterConfig, TlsConfig } from "./src/kube/types.ts";
export { createCredentials, type CredentialsOptions, type KubeCredentials } from "./src/kube/credentials.ts";
export { createTransport, type Transport, UnsupportedTlsError } from "./src/kube/transport.ts";
export {
  bearerToken,
  type Credentials,
  type FetchLike,
  KubeClient,
  type KubeClientOptions,
  type KubeRequest,
  noCredentials,
} from "./src/kube/client.ts";
export { KubeApiError, KubeAuthenticationError, KubeAuthorizationError, type KubeStatus } from "./src/kube/status.ts";
export { KubeTransportError, type TransportErrorCode } from "./src/kube/errors.ts";

// Watch engine
export { Reflector, type InitialListMode, type ReflectorOptions } from "./src/watch/reflector.ts";
export { createWatcher, type ObjectWatcher, ReflectorGroup, type WatcherOptions } from "./src/watch/group.ts";
export { ObjectStore, type StoreSnapshot } from "./src/watch/store.ts";
export { type ReconnectCause, type ReflectorMetrics } from "./src/watch/metrics.ts";
export { Backoff, type BackoffOptions, DEFAULT_BACKOFF } from "./src/watch/backoff.ts";
export { DEFAULT_MAX_LINE_BYTES, NdjsonError, ndjsonLines, ndjsonValues } from "./src/watch/ndjson.ts";
export { compareResourceVersions } from "./src/watch/resource-version.ts";
export {
  collectionPath,
  KNATIVE_REVISIONS,
  KNATIVE_SERVICES,
  type KubeObject,
  objectKey,
  type ObjectMeta,
  type ReflectorEvent,
  type RelistCause,
  type ResourceRef,
} from "./src/watch/types.ts";

// Flyte apps
export {
  AppK8sClient,
  type AppClientMetrics,
  type AppK8sClientOptions,
  appKey,
  AppNotFoundError,
  AppsForbiddenError,
  KnativeNotInstalledError,
  type SubscribeOptions,
  type SubscribeTarget,
} from "./src/flyte/app-client.ts";
export { AppConversionError, AppConverter, appIdentity, kserviceToApp } from "./src/flyte/convert.ts";
export { KServiceName, publicIngress } from "./src/flyte/naming.ts";
export { createSpecDecoder, type SpecDecoder, specFromAnnotation } from "./src/flyte/spec.ts";
export {
  LaggingError,
  type SlowConsumerPolicy,
  Subscription,
  type SubscriptionItem,
  type SubscriptionStart,
  type SubscriptionStats,
} from "./src/flyte/subscriptions.ts";
export { type AppChange, decodeToken, encodeToken, Journal, type Position, type ResumeFailure, type ResumeResult } from "./src/flyte/journal.ts";
export type {
  App,
  AppsConfig,
  Condition,
  DeploymentStatus,
  Identifier,
  Ingress,
  ListRequest,
  ListResponse,
  Meta,
  Spec,
  Status,
  WatchRequest,
  WatchResponse,
} from "./src/flyte/model.ts";
export { DEFAULT_APPS_CONFIG } from "./src/flyte/model.ts";

// The service: the Hono app (mount it in your own server) and the whole process
export { type ApiLimits, type AppwatchApp, CLOSE, createApp, type CreateAppOptions } from "./src/service/app.ts";
export {
  type ClusterSource,
  connectCluster,
  type ConnectClusterOptions,
  type RunningService,
  type ServiceSettings,
  startService,
} from "./src/service/server.ts";
export { type ListeningServer, type ListenOptions, loadAdapter, type ServerAdapter } from "./src/service/adapters/types.ts";
export { type Frame, type FrameKind } from "./src/service/frames.ts";
export { type BuildInfo, ServiceMetrics } from "./src/service/metrics.ts";

// Flyte's AppService (Connect, gRPC-Web; gRPC over HTTP/2 via `listenGrpc`): the descriptors, to build
// clients with `@connectrpc/connect`, and the handlers, to serve it from your own server.
export {
  AppSchema,
  AppService,
  GetRequestSchema,
  GetResponseSchema,
  ListRequestSchema as ListRequestMessage,
  ListResponseSchema,
  WatchRequestSchema as WatchRequestMessage,
  WatchResponseSchema,
} from "./src/flyte/proto/app_service_pb.ts";
export { type AppServiceHandlers, createAppServiceHandlers } from "./src/service/connect/handlers.ts";
export { mountConnect } from "./src/service/connect/mount.ts";
export { listenGrpc } from "./src/service/adapters/grpc.ts";

// Utilities
export { createLogger, type Logger, type LogLevel } from "./src/log.ts";
export { type RunningServer, serveFetch } from "./src/serve.ts";
