/**
 * The sandbox API server: a Kubernetes-compatible HTTP API for Knative `services` and
 * `revisions` (list, watch, CRUD, status subresource) with fault injection for tests, and a
 * demo cluster. See docs/sandbox.md.
 * @module
 */
export { Sandbox } from "./sandbox.ts";
export { type RunningSandbox, startSandbox } from "./server.ts";
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
