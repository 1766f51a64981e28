/**
 * A demo cluster: realistic Flyte-managed Knative Services (labels, annotations, status as the
 * Knative controller writes it, one Revision each) and a loop that keeps changing them.
 * @module
 */
import type { Sandbox } from "./sandbox.ts";
import type { KubeObject } from "./types.ts";
import { seededRandom } from "../prng.ts";
import { type Clock, realClock, type TimerHandle } from "../watch/clock.ts";

/** Options of {@link seedDemo}. */
export interface SeedOptions {
  /** Namespace of the apps (default "flyte"). */
  namespace?: string;
  /** How many apps (default 5). */
  count?: number;
}

interface AppDef {
  name: string;
  project: string;
  domain: string;
  image: string;
  port: number;
}

const CATALOGUE: readonly AppDef[] = [
  { name: "streamlit-hello", project: "flytesnacks", domain: "development", image: "ghcr.io/flyteorg/streamlit-hello:v1", port: 8501 },
  { name: "fastapi-echo", project: "flytesnacks", domain: "staging", image: "ghcr.io/flyteorg/fastapi-echo:v3", port: 8080 },
  { name: "gradio-chat", project: "llm", domain: "development", image: "ghcr.io/flyteorg/gradio-chat:v2", port: 7860 },
  { name: "vllm-llama", project: "llm", domain: "production", image: "vllm/vllm-openai:v0.6.3", port: 8000 },
  { name: "jupyter-lab", project: "research", domain: "development", image: "quay.io/jupyter/base-notebook:2024-10", port: 8888 },
  { name: "dash-metrics", project: "analytics", domain: "production", image: "ghcr.io/flyteorg/dash-metrics:v5", port: 8050 },
  { name: "panel-explorer", project: "analytics", domain: "staging", image: "ghcr.io/flyteorg/panel-explorer:v1", port: 5006 },
  { name: "voila-report", project: "research", domain: "production", image: "ghcr.io/flyteorg/voila-report:v4", port: 8866 },
];

/** `KServiceName` for short ids: lower("{name}-{project}-{domain}"). */
function kserviceName(app: AppDef): string {
  return `${app.name}-${app.project}-${app.domain}`.toLowerCase().slice(0, 63).replace(/-+$/, "");
}

function appFor(index: number): AppDef {
  const base = CATALOGUE[index % CATALOGUE.length]!;
  const round = Math.floor(index / CATALOGUE.length);
  return round === 0 ? base : { ...base, name: `${base.name}-${round + 1}` };
}

function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

function revisionName(service: string, n: number): string {
  return `${service}-${String(n).padStart(5, "0")}`;
}

type CondStatus = "True" | "False" | "Unknown";

function condition(type: string, status: CondStatus, reason?: string, message?: string) {
  const c: Record<string, string> = { lastTransitionTime: timestamp(), status, type };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/** The Knative Service status for a given phase, conditions sorted by type like Knative stores them. */
function serviceStatus(
  name: string,
  namespace: string,
  generation: number,
  phase: "ready" | "rolling" | "failed",
  latestReady: number,
  latestCreated: number,
): Record<string, unknown> {
  const ready = revisionName(name, latestReady);
  const created = revisionName(name, latestCreated);
  const conditions = phase === "ready"
    ? [condition("ConfigurationsReady", "True"), condition("Ready", "True"), condition("RoutesReady", "True")]
    : phase === "rolling"
    ? [
      condition("ConfigurationsReady", "Unknown", "RevisionMissing", `Configuration "${name}" is waiting for a Revision to become ready.`),
      condition("Ready", "Unknown", "RevisionMissing", `Configuration "${name}" is waiting for a Revision to become ready.`),
      condition("RoutesReady", "True"),
    ]
    : [
      condition("ConfigurationsReady", "False", "ContainerMissing", `Unable to fetch image for revision "${created}"`),
      condition("Ready", "False", "RevisionFailed", `Revision "${created}" failed with message: Unable to fetch image.`),
      condition("RoutesReady", "False", "RevisionFailed", `Revision "${created}" failed with message: Unable to fetch image.`),
    ];
  return {
    address: { url: `http://${name}.${namespace}.svc.cluster.local` },
    conditions,
    latestCreatedRevisionName: created,
    latestReadyRevisionName: ready,
    observedGeneration: generation,
    traffic: [{ latestRevision: true, percent: 100, revisionName: ready }],
    url: `http://${name}.${namespace}.example.com`,
  };
}

function revisionObject(service: KubeObject, n: number): KubeObject {
  const name = service.metadata.name!;
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Revision",
    metadata: {
      name: revisionName(name, n),
      namespace: service.metadata.namespace,
      labels: {
        "serving.knative.dev/configuration": name,
        "serving.knative.dev/configurationGeneration": String(n),
        "serving.knative.dev/service": name,
        "flyte.org/app-managed": "true",
      },
    },
    spec: (service.spec as { template?: { spec?: unknown } } | undefined)?.template?.spec ?? {},
  };
}

function revisionStatus(replicas: number): Record<string, unknown> {
  return {
    actualReplicas: replicas,
    conditions: [
      condition("Active", replicas > 0 ? "True" : "False", replicas > 0 ? undefined : "NoTraffic"),
      condition("ContainerHealthy", "True"),
      condition("Ready", "True"),
      condition("ResourcesAvailable", "True"),
    ],
    desiredReplicas: replicas,
    observedGeneration: 1,
  };
}

function serviceObject(app: AppDef, namespace: string, org: string): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: kserviceName(app),
      namespace,
      labels: {
        "flyte.org/app-managed": "true",
        "flyte.org/app-name": app.name,
        "flyte.org/domain": app.domain,
        "flyte.org/project": app.project,
      },
      annotations: {
        "flyte.org/app-id": `${app.project}/${app.domain}/${app.name}`,
        "flyte.org/app-org": org,
      },
    },
    spec: {
      template: {
        metadata: { annotations: { "autoscaling.knative.dev/min-scale": "0", "autoscaling.knative.dev/max-scale": "3" } },
        spec: {
          containers: [{
            image: app.image,
            // Non-ASCII on purpose: drip faults then split real UTF-8 sequences.
            env: [{ name: "GREETING", value: "Grüß dich 👋" }],
            ports: [{ containerPort: app.port }],
          }],
        },
      },
      traffic: [{ latestRevision: true, percent: 100 }],
    },
  };
}

/** Creates one app (KService + first Revision) in the given phase. */
function createApp(sandbox: Sandbox, app: AppDef, namespace: string, phase: "ready" | "failed" | "stopped"): KubeObject {
  const svc = serviceObject(app, namespace, app.project === "llm" ? "" : "demo-org");
  if (phase === "stopped") {
    svc.metadata.labels!["flyte.org/app-stopped"] = "true";
    svc.metadata.labels!["networking.knative.dev/visibility"] = "cluster-local";
  }
  const created = sandbox.create("services", svc);
  const name = created.metadata.name!;
  const rev = sandbox.create("revisions", revisionObject(created, 1));
  sandbox.updateStatus("revisions", namespace, rev.metadata.name!, revisionStatus(phase === "ready" ? 1 : 0));
  return sandbox.updateStatus(
    "services",
    namespace,
    name,
    serviceStatus(name, namespace, 1, phase === "failed" ? "failed" : "ready", 1, 1),
  );
}

/**
 * Creates `count` Flyte-managed Knative Services with realistic labels, annotations, status
 * and one Revision each. Every fifth app (index 3) is failed and every fifth (index 4) stopped.
 * Returns the services as stored.
 */
export function seedDemo(sandbox: Sandbox, options: SeedOptions = {}): KubeObject[] {
  const namespace = options.namespace ?? "flyte";
  const count = options.count ?? 5;
  const out: KubeObject[] = [];
  for (let i = 0; i < count; i++) {
    const phase = i % 5 === 3 ? "failed" : i % 5 === 4 ? "stopped" : "ready";
    out.push(createApp(sandbox, appFor(i), namespace, phase));
  }
  return out;
}

/** Options of {@link startDemoActivity}. */
export interface DemoActivityOptions {
  /** Time between changes (default 2000). */
  intervalMs?: number;
  /** Stops the activity when aborted. */
  signal?: AbortSignal;
  /** Namespace to act in (default "flyte"). */
  namespace?: string;
  /** Seed of the pseudo-random choices, for reproducible demos (default 1). */
  seed?: number;
  /** Time between changes (tests: a `VirtualClock`). Default: the real clock. */
  clock?: Clock;
}

/** A running demo activity. */
export interface DemoActivity {
  stop(): void;
  /** Changes made so far. */
  readonly steps: number;
}


interface SvcStatus {
  latestReadyRevisionName?: string;
  latestCreatedRevisionName?: string;
  conditions?: { type?: string; status?: string }[];
}

function revisionNumber(name: string | undefined): number {
  const m = /-(\d{5})$/.exec(name ?? "");
  return m ? Number(m[1]) : 1;
}

/** One random change; returns a short description, or undefined if nothing applied. */
function step(sandbox: Sandbox, namespace: string, rand: () => number, created: { n: number }): string | undefined {
  const services = sandbox.list("services", namespace).filter((s) => s.metadata.labels?.["flyte.org/app-managed"] === "true");
  const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(rand() * xs.length)];
  const roll = rand();
  if (services.length === 0 || roll < 0.1) {
    const app = appFor(CATALOGUE.length * 2 + created.n++);
    createApp(sandbox, app, namespace, "ready");
    return `created ${kserviceName(app)}`;
  }
  const svc = pick(services)!;
  const name = svc.metadata.name!;
  const status = (svc.status ?? {}) as SvcStatus;
  const ready = status.conditions?.find((c) => c.type === "Ready")?.status;
  const stopped = svc.metadata.labels?.["flyte.org/app-stopped"] === "true";
  if (roll < 0.2 && services.length > 2) {
    sandbox.delete("services", namespace, name);
    for (const rev of sandbox.list("revisions", namespace)) {
      if (rev.metadata.labels?.["serving.knative.dev/service"] === name) sandbox.delete("revisions", namespace, rev.metadata.name!);
    }
    return `deleted ${name}`;
  }
  const gen = svc.metadata.generation ?? 1;
  const latestReady = revisionNumber(status.latestReadyRevisionName);
  const latestCreated = revisionNumber(status.latestCreatedRevisionName);
  if (ready === "Unknown") {
    // Finish a rollout.
    const rev = sandbox.create("revisions", revisionObject(svc, latestCreated));
    sandbox.updateStatus("revisions", namespace, rev.metadata.name!, revisionStatus(1));
    sandbox.updateStatus("services", namespace, name, serviceStatus(name, namespace, gen, "ready", latestCreated, latestCreated));
    return `rolled out ${rev.metadata.name}`;
  }
  if (roll < 0.35) {
    sandbox.patch("services", namespace, name, {
      metadata: { labels: stopped ? { "flyte.org/app-stopped": null, "networking.knative.dev/visibility": null } : { "flyte.org/app-stopped": "true", "networking.knative.dev/visibility": "cluster-local" } },
    });
    return `${stopped ? "started" : "stopped"} ${name}`;
  }
  if (roll < 0.6) {
    // Start a rollout: a spec change (new generation) and a not-yet-ready revision.
    const updated = sandbox.patch("services", namespace, name, {
      spec: { template: { metadata: { annotations: { "appwatch.dev/rollout": String(latestCreated + 1) } } } },
    });
    sandbox.updateStatus(
      "services",
      namespace,
      name,
      serviceStatus(name, namespace, updated.metadata.generation ?? gen, "rolling", latestReady, latestCreated + 1),
    );
    return `rolling ${name}`;
  }
  if (roll < 0.7) {
    const failed = ready === "False";
    sandbox.updateStatus("services", namespace, name, serviceStatus(name, namespace, gen, failed ? "ready" : "failed", latestReady, latestCreated));
    return `${failed ? "recovered" : "failed"} ${name}`;
  }
  // Scale the serving revision.
  const revName = revisionName(name, latestReady);
  if (!sandbox.get("revisions", namespace, revName)) return undefined;
  const replicas = stopped ? 0 : Math.floor(rand() * 4);
  sandbox.updateStatus("revisions", namespace, revName, revisionStatus(replicas));
  return `scaled ${revName} to ${replicas}`;
}

/** Keeps changing the demo apps every `intervalMs` until stopped, aborted or the sandbox is disposed. */
export function startDemoActivity(sandbox: Sandbox, options: DemoActivityOptions = {}): DemoActivity {
  const interval = options.intervalMs ?? 2000;
  const namespace = options.namespace ?? "flyte";
  const rand = seededRandom(options.seed ?? 1);
  const created = { n: 0 };
  let steps = 0;
  const clock = options.clock ?? realClock;
  let timer: TimerHandle | undefined;
  let stopped = false;
  const stop = () => {
    stopped = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    options.signal?.removeEventListener("abort", stop);
  };
  const tick = () => {
    timer = undefined;
    if (stopped || sandbox.disposed) return stop();
    try {
      if (step(sandbox, namespace, rand, created) !== undefined) steps++;
    } catch {
      // A change that raced another one (e.g. a deleted object) is simply skipped.
    }
    timer = clock.setTimeout(tick, interval, "demo");
  };
  if (options.signal?.aborted) stopped = true;
  else {
    options.signal?.addEventListener("abort", stop, { once: true });
    timer = clock.setTimeout(tick, interval, "demo");
  }
  return {
    stop,
    get steps() {
      return steps;
    },
  };
}
