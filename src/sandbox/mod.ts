/**
 * The sandbox API server: a Kubernetes-compatible HTTP API for Knative `services` and
 * `revisions` (list, watch, CRUD, status subresource) with fault injection for tests, a
 * demo cluster, and {@link startSandboxCluster} to run appwatch on it. See docs/sandbox.md.
 *
 * This is the package's `./sandbox` entry, apart from the engine in `mod.ts`:
 *
 * ```ts ignore
 * import { startSandboxCluster } from "appwatch/sandbox"; // npm; from JSR: "@appwatch/appwatch/sandbox"
 * import { startService } from "appwatch";
 * ```
 * @module
 */
export { Sandbox } from "./sandbox.ts";
export { type RunningSandbox, startSandbox } from "./server.ts";
export { type SandboxCluster, type SandboxClusterOptions, startSandboxCluster } from "./cluster.ts";
export type {
  FaultAction,
  FaultHandle,
  FaultInjector,
  FaultRule,
  FaultVerb,
  KubeObject,
  RequestRecord,
  SandboxOptions,
  SandboxResource,
} from "./types.ts";
export { SandboxError, type StatusBody } from "./errors.ts";
export { INITIAL_EVENTS_END } from "./watch.ts";
export { type DemoActivity, type DemoActivityOptions, type SeedOptions, seedDemo, startDemoActivity } from "./demo.ts";
