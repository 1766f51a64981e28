/**
 * Flyte app KServices for B3 (fan-out) and B4 (conversion), from the
 * `bench/lib/data.ts` generator (realistic 4–6 KB objects: managedFields,
 * conditions, annotations, pod template), made convertible the way Flyte
 * writes them: the `flyte.org/app-id` annotation from the project/domain/
 * app-name labels, and the generator's random `flyte.org/app-spec` blob
 * replaced by a real binary-protobuf `flyte.org/spec` of about the same size.
 * @module
 */
import { generateEvents } from "./data.ts";
import { specToAnnotation } from "../../src/flyte/spec.ts";
import type { KubeObject } from "../../src/watch/types.ts";

/** A realistic Flyte app Spec (base64 protobuf) for `obj`; `variant` makes it unique. */
export function specFor(obj: KubeObject, variant: number): string {
  const labels = obj.metadata.labels ?? {};
  // deno-lint-ignore no-explicit-any
  const container = (obj.spec as any)?.template?.spec?.containers?.[0] ?? {};
  const project = labels["flyte.org/project"] ?? "p";
  const domain = labels["flyte.org/domain"] ?? "d";
  const app = labels["flyte.org/app-name"] ?? "a";
  return specToAnnotation({
    container: {
      image: container.image ?? "app:1",
      args: container.args ?? ["serve"],
      resources: {
        requests: [{ name: "CPU", value: "500m" }, { name: "MEMORY", value: "1Gi" }],
        limits: [{ name: "CPU", value: "2" }, { name: "MEMORY", value: "4Gi" }],
      },
      env: ((container.env ?? []) as { name: string; value: string }[]).map((e) => ({ key: e.name, value: e.value })),
      ports: [{ containerPort: 8080, name: "http" }],
    },
    autoscaling: { replicas: { min: 0, max: 1 + (variant % 10) }, scaledownPeriod: "300s", scalingMetric: { requestRate: { targetValue: 100 } } },
    ingress: { subdomain: app },
    desiredState: "DESIRED_STATE_ACTIVE",
    clusterPool: "default",
    securityContext: { runAs: { k8sServiceAccount: "flyte-apps" }, secrets: [{ group: "db", key: `password-${variant}`, mountRequirement: "ENV_VAR" }] },
    runtimeMetadata: { type: "FLYTE_SDK", version: "2.0.3", flavor: "python" },
    profile: { type: "FastAPI", name: app, shortDescription: `${app} for ${project}/${domain}` },
    links: [{ path: "/docs", title: "Docs", isRelative: true }, { path: "/metrics", title: "Metrics", isRelative: true }],
    timeouts: { requestTimeout: "60s" },
  });
}

/** Makes a generated object a Flyte app KService (in place). */
export function flyteify(obj: KubeObject, spec: string): KubeObject {
  const labels = obj.metadata.labels ?? {};
  const { "flyte.org/app-spec": _blob, ...rest } = obj.metadata.annotations ?? {};
  obj.metadata.annotations = {
    "flyte.org/app-id": `${labels["flyte.org/project"]}/${labels["flyte.org/domain"]}/${labels["flyte.org/app-name"]}`,
    "flyte.org/app-org": "",
    "flyte.org/spec": spec,
    ...rest,
  };
  return obj;
}

/**
 * `n` watch-event objects in stream order. `uniqueSpecs: false`: one spec per
 * service, shared by its events (as in a real stream, where status changes
 * dominate); `true`: every object gets its own spec.
 */
export function convertibleObjects(n: number, options: { uniqueSpecs: boolean; seed?: number }): KubeObject[] {
  const { lines } = generateEvents(n, { seed: options.seed ?? 20251130 });
  const specs = new Map<string, string>();
  return lines.map((line, i) => {
    const obj = (JSON.parse(line) as { object: KubeObject }).object;
    let spec = options.uniqueSpecs ? undefined : specs.get(obj.metadata.name!);
    if (spec === undefined) {
      spec = specFor(obj, i);
      if (!options.uniqueSpecs) specs.set(obj.metadata.name!, spec);
    }
    return flyteify(obj, spec);
  });
}

/** `count` distinct app KServices (one per generated service), ready to create. */
export function distinctApps(count: number): KubeObject[] {
  const { lines } = generateEvents(count * 8, { services: count, seed: 4242 });
  const seen = new Map<string, KubeObject>();
  lines.forEach((line, i) => {
    const obj = (JSON.parse(line) as { object: KubeObject }).object;
    if (!seen.has(obj.metadata.name!)) seen.set(obj.metadata.name!, flyteify(obj, specFor(obj, i)));
  });
  return [...seen.values()];
}

export interface AppRef {
  name: string;
  project: string;
  domain: string;
  app: string;
}

/** Subscriber i (B3 and B6 mix): `allSubs` (4) all-apps first, then every 20th per project+domain, the rest per app (round-robin). */
export function subscribers(from: number, to: number, apps: AppRef[], allSubs = 4): { id: number; query: string; key: string }[] {
  const groups = [...new Set(apps.map((a) => `${a.project}/${a.domain}`))].sort();
  const out: { id: number; query: string; key: string }[] = [];
  for (let i = from; i < to; i++) {
    if (i < allSubs) {
      out.push({ id: i, query: "snapshot=false", key: "*" });
      continue;
    }
    const j = i - allSubs;
    if (j % 20 === 0) {
      const [project, domain] = groups[(j / 20) % groups.length]!.split("/");
      out.push({ id: i, query: `project=${project}&domain=${domain}&snapshot=false`, key: `${project}/${domain}` });
    } else {
      const a = apps[(j - Math.floor(j / 20) - 1) % apps.length]!;
      out.push({ id: i, query: `project=${a.project}&domain=${a.domain}&app=${a.app}&snapshot=false`, key: `${a.project}/${a.domain}/${a.app}` });
    }
  }
  return out;
}
