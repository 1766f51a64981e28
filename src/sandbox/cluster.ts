/**
 * {@link startSandboxCluster}: the sandbox as a cluster to watch — a sandbox
 * API server seeded with demo apps that keep changing, and a `KubeClient` for
 * it. It has the shape of the service's `ClusterSource`, so `startService`
 * and the CLI's `events` run on it like on a real cluster.
 * @module
 */
import { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { ClusterSource } from "../service/server.ts";
import { seedDemo, startDemoActivity } from "./demo.ts";
import type { Sandbox } from "./sandbox.ts";
import { startSandbox } from "./server.ts";

/** Options of {@link startSandboxCluster}. */
export interface SandboxClusterOptions {
  /** Port of the sandbox API server (default 0: any free port). */
  port?: number;
  /** Namespaces to watch (default `["flyte"]`, where the demo apps are). */
  namespaces?: readonly string[];
  /** Demo apps to seed in `flyte` (default 6). */
  demoApps?: number;
  /** Milliseconds between demo changes (default 2000; 0: none). */
  demoIntervalMs?: number;
  /**
   * The first resourceVersion (default: the current time in ms). Two sandboxes given the same
   * number count alike, as two real clusters' etcd revisions overlap: tests of tokens across clusters.
   */
  initialResourceVersion?: number;
  logger?: Logger;
}

/** A running sandbox cluster. */
export interface SandboxCluster extends ClusterSource {
  /** The sandbox's objects (tests and demos change them directly). */
  readonly sandbox: Sandbox;
  /** Base URL of the sandbox API server. */
  readonly url: string;
}

/** Starts a sandbox API server with demo apps; `close()` stops the activity, the client and the server. */
export async function startSandboxCluster(options: SandboxClusterOptions = {}): Promise<SandboxCluster> {
  // RVs start at the current time in ms, so a restarted sandbox never accepts the previous one's resume tokens.
  const sb = await startSandbox({ port: options.port ?? 0, initialResourceVersion: options.initialResourceVersion ?? Date.now(), logger: options.logger });
  seedDemo(sb.sandbox, { namespace: "flyte", count: options.demoApps ?? 6 });
  const interval = options.demoIntervalMs ?? 2000;
  const activity = interval > 0 ? startDemoActivity(sb.sandbox, { intervalMs: interval }) : undefined;
  const client = new KubeClient({ server: sb.url, namespace: "flyte" });
  let closing: Promise<void> | undefined;
  return {
    client,
    namespaces: options.namespaces?.length ? [...options.namespaces] : ["flyte"],
    describe: `sandbox ${sb.url}`,
    sandbox: sb.sandbox,
    url: sb.url,
    close: () => {
      closing ??= (async () => {
        activity?.stop();
        await client.close();
        await sb.close();
      })();
      return closing;
    },
  };
}
