import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLogger, type Logger } from "../src/log.ts";
import type { KubeObject } from "../src/watch/types.ts";
import {
  ANNOTATIONS,
  AppConversionError,
  AppConverter,
  appIdentity,
  kserviceToApp,
  LABELS,
} from "../src/flyte/convert.ts";
import { toProtoTimestamp } from "../src/flyte/timestamps.ts";
import {
  type App,
  type AppsConfig,
  type Condition,
  DEFAULT_APPS_CONFIG,
} from "../src/flyte/model.ts";
import { KServiceName, publicIngress } from "../src/flyte/naming.ts";
import { specFromAnnotation, specToAnnotation } from "../src/flyte/spec.ts";

// Flyte's devbox values (manager/config.yaml): the config behind the reference's example JSON.
const DEVBOX: AppsConfig = { baseDomain: "localhost", scheme: "http", ingressAppsPort: 30081, watchBufferSize: 100 };
const T0 = "2026-04-30T12:00:00Z";

interface KCond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

function ksvc(opts: {
  appId?: string | null;
  org?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  conditions?: KCond[];
  namespace?: string;
  name?: string;
  creationTimestamp?: string | null;
}): KubeObject {
  const annotations: Record<string, string> = { ...opts.annotations };
  if (opts.appId !== null) annotations[ANNOTATIONS.APP_ID] = opts.appId ?? "proj/dev/myapp";
  if (opts.org !== undefined) annotations[ANNOTATIONS.APP_ORG] = opts.org;
  const metadata: KubeObject["metadata"] = {
    name: opts.name ?? "myapp-proj-dev",
    namespace: opts.namespace ?? "flyte",
    resourceVersion: "1",
    labels: { [LABELS.APP_MANAGED]: "true", ...opts.labels },
    annotations,
  };
  if (opts.creationTimestamp !== null) metadata.creationTimestamp = opts.creationTimestamp ?? T0;
  return { apiVersion: "serving.knative.dev/v1", kind: "Service", metadata, status: { conditions: opts.conditions ?? [] } };
}

const at = (s: number) => `2026-04-30T12:00:${String(s).padStart(2, "0")}Z`;
const kc = (type: string, status: string, s: number, reason?: string, message?: string): KCond => ({
  type,
  status,
  lastTransitionTime: at(s),
  ...(reason !== undefined ? { reason } : {}),
  ...(message !== undefined ? { message } : {}),
});
const ACTIVE = "DEPLOYMENT_STATUS_ACTIVE";
const PENDING = "DEPLOYMENT_STATUS_PENDING";
const DEPLOYING = "DEPLOYMENT_STATUS_DEPLOYING";
const FAILED = "DEPLOYMENT_STATUS_FAILED";
const STOPPED = "DEPLOYMENT_STATUS_STOPPED";
const c = (s: number, deploymentStatus: string, message?: string): Condition => ({
  lastTransitionTime: at(s),
  deploymentStatus: deploymentStatus as Condition["deploymentStatus"],
  ...(message !== undefined ? { message } : {}),
});

const TRAFFIC = "Traffic is not yet migrated to the latest revision.";
const WAITING = 'Configuration "myapp-proj-dev" is waiting for a Revision to become ready.';
const REV_FAILED = 'Revision "myapp-proj-dev-00001" failed with message: Back-off pulling image.';
const REV_MISSING = 'Configuration "myapp-proj-dev" does not have any ready Revision.';

function capture(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { logger: createLogger({ level: "debug", sink: (l) => lines.push(JSON.parse(l)) }), lines };
}

// §2.5 worked condition mappings, every row (plus the rule edges around them).
describe("§2.5 worked condition mappings", () => {
  const rows: { name: string; conditions: KCond[]; labels?: Record<string, string>; want: Condition[] | undefined }[] = [
    { name: "none → [] (conditions omitted)", conditions: [], want: undefined },
    { name: "Ready=True (no reason/msg)", conditions: [kc("Ready", "True", 1)], want: [c(1, ACTIVE, "Service is ready")] },
    {
      name: "Config=True, Ready=True, Routes=True",
      conditions: [kc("ConfigurationsReady", "True", 1), kc("Ready", "True", 2), kc("RoutesReady", "True", 3)],
      want: [c(1, ACTIVE, "Configuration is ready"), c(2, ACTIVE, "Service is ready"), c(3, ACTIVE, "Routes are ready")],
    },
    {
      name: "Ready=Unknown TrafficNotMigrated, Routes=Unknown (MarkRouteNotYetReady)",
      conditions: [
        kc("Ready", "Unknown", 4, "TrafficNotMigrated", TRAFFIC),
        kc("RoutesReady", "Unknown", 4, "TrafficNotMigrated", TRAFFIC),
      ],
      want: [c(4, PENDING, `TrafficNotMigrated: ${TRAFFIC}`)],
    },
    {
      name: "Config=Unknown, Ready=Unknown, Routes=Unknown",
      conditions: [
        kc("ConfigurationsReady", "Unknown", 1, "RevisionMissing", WAITING),
        kc("Ready", "Unknown", 2, "RevisionMissing", WAITING),
        kc("RoutesReady", "Unknown", 3, "RevisionMissing", WAITING),
      ],
      want: [c(1, PENDING, `RevisionMissing: ${WAITING}`), c(2, PENDING, `RevisionMissing: ${WAITING}`)],
    },
    {
      name: "Config=True, Ready=Unknown, Routes=Unknown",
      conditions: [
        kc("ConfigurationsReady", "True", 1),
        kc("Ready", "Unknown", 2, "TrafficNotMigrated", TRAFFIC),
        kc("RoutesReady", "Unknown", 2, "TrafficNotMigrated", TRAFFIC),
      ],
      want: [c(1, DEPLOYING, "Configuration is ready"), c(2, PENDING, `TrafficNotMigrated: ${TRAFFIC}`)],
    },
    {
      name: "Config=Unknown, Ready=Unknown, Routes=True (rollout)",
      conditions: [
        kc("ConfigurationsReady", "Unknown", 5, "RevisionMissing", WAITING),
        kc("Ready", "Unknown", 5, "RevisionMissing", WAITING),
        kc("RoutesReady", "True", 3),
      ],
      want: [
        c(5, PENDING, `RevisionMissing: ${WAITING}`),
        c(5, PENDING, `RevisionMissing: ${WAITING}`),
        c(3, DEPLOYING, "Routes are ready"),
      ],
    },
    {
      name: "Config=False RevisionFailed, Ready=False RevisionMissing, Routes=False",
      conditions: [
        kc("ConfigurationsReady", "False", 6, "RevisionFailed", REV_FAILED),
        kc("Ready", "False", 6, "RevisionMissing", REV_MISSING),
        kc("RoutesReady", "False", 7, "RevisionMissing", REV_MISSING),
      ],
      want: [
        c(6, FAILED, `RevisionFailed: ${REV_FAILED}`),
        c(6, FAILED, `RevisionMissing: ${REV_MISSING}`),
        c(7, FAILED, `RevisionMissing: ${REV_MISSING}`),
      ],
    },
    {
      name: "Config=False, Ready=False, Routes=Unknown",
      conditions: [
        kc("ConfigurationsReady", "False", 6, "RevisionFailed", REV_FAILED),
        kc("Ready", "False", 6, "RevisionFailed", REV_FAILED),
        kc("RoutesReady", "Unknown", 6),
      ],
      want: [c(6, FAILED, `RevisionFailed: ${REV_FAILED}`), c(6, FAILED, `RevisionFailed: ${REV_FAILED}`)],
    },
    {
      name: "Config=True, Ready=False, Routes=False",
      conditions: [
        kc("ConfigurationsReady", "True", 1),
        kc("Ready", "False", 8, "RevisionMissing", REV_MISSING),
        kc("RoutesReady", "False", 8, "RevisionMissing", REV_MISSING),
      ],
      want: [
        c(1, DEPLOYING, "Configuration is ready"),
        c(8, FAILED, `RevisionMissing: ${REV_MISSING}`),
        c(8, FAILED, `RevisionMissing: ${REV_MISSING}`),
      ],
    },
    {
      name: "label app-stopped=true (any conditions) → only STOPPED, stamped at the latest transition",
      labels: { [LABELS.APP_STOPPED]: "true" },
      conditions: [kc("ConfigurationsReady", "True", 1), kc("Ready", "True", 9), kc("RoutesReady", "True", 2)],
      want: [c(9, STOPPED, "App scaled to zero")],
    },
    // Rule edges (§2.4 B.2)
    {
      name: "False is skipped unless Ready=False",
      conditions: [kc("ConfigurationsReady", "False", 1, "RevisionFailed", REV_FAILED), kc("Ready", "Unknown", 2)],
      want: [c(2, PENDING, "Service is ready")],
    },
    {
      name: "True without a Ready condition → DEPLOYING",
      conditions: [kc("ConfigurationsReady", "True", 1)],
      want: [c(1, DEPLOYING, "Configuration is ready")],
    },
    {
      name: "stored order is kept (not re-sorted)",
      conditions: [kc("RoutesReady", "True", 3), kc("Ready", "True", 2), kc("ConfigurationsReady", "True", 1)],
      want: [c(3, ACTIVE, "Routes are ready"), c(2, ACTIVE, "Service is ready"), c(1, ACTIVE, "Configuration is ready")],
    },
    {
      name: "reason with empty message → 'Reason: '; message without reason → message; other type → no message",
      conditions: [
        kc("ConfigurationsReady", "Unknown", 1, "Deploying", ""),
        kc("Ready", "Unknown", 2, "", "just a message"),
        kc("CustomThing", "Unknown", 3),
      ],
      want: [c(1, PENDING, "Deploying: "), c(2, PENDING, "just a message"), c(3, PENDING)],
    },
    {
      name: "empty or unexpected status → PENDING; RoutesReady=Unknown always skipped",
      conditions: [kc("Ready", "", 1), kc("ConfigurationsReady", "Maybe", 2), kc("RoutesReady", "Unknown", 3)],
      want: [c(1, PENDING, "Service is ready"), c(2, PENDING, "Configuration is ready")],
    },
    {
      name: "a False condition with no reason or message still gets the per-type default",
      conditions: [kc("Ready", "False", 4), kc("RoutesReady", "False", 5)],
      want: [c(4, FAILED, "Service is ready"), c(5, FAILED, "Routes are ready")],
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const app = kserviceToApp(ksvc({ conditions: row.conditions, labels: row.labels }), DEVBOX);
      assert.deepEqual(app.status?.conditions, row.want);
      if (row.want === undefined) assert.equal("conditions" in (app.status ?? {}), false);
    });
  }
});

describe("§2.6 KServiceName and publicIngress", () => {
  const LONG = "this-is-a-very-long-app-name-that-exceeds-the-kubernetes-dns-label-limit";
  const vectors: [string, { org?: string; project: string; domain: string; name: string }, string][] = [
    ["short", { project: "proj", domain: "dev", name: "myapp" }, "myapp-proj-dev"],
    ["lowercased", { project: "proj", domain: "dev", name: "MyApp" }, "myapp-proj-dev"],
    ["org unused", { org: "acme", project: "proj", domain: "dev", name: "myapp" }, "myapp-proj-dev"],
    ["app_client_test.go long vector", { project: "proj", domain: "dev", name: LONG }, "this-is-a-very-long-app-name-that-exceeds-the-kubernet-3111c9c5"],
    // exactly 63 characters: kept as is
    ["63 chars kept", { project: "proj", domain: "dev", name: "a".repeat(54) }, `${"a".repeat(54)}-proj-dev`],
    // 64: hashed
    [
      "64 chars hashed",
      { project: "proj", domain: "dev", name: "a".repeat(55) },
      `${"a".repeat(54)}-${createHash("sha256").update(`proj/dev/${"a".repeat(55)}`).digest("hex").slice(0, 8)}`,
    ],
  ];
  for (const [name, id, want] of vectors) {
    test(name, () => {
      const got = KServiceName(id);
      assert.equal(got, want);
      assert.ok(got.length <= 63);
    });
  }
  test("the hash input is not lowercased", () => {
    const upper = KServiceName({ project: "proj", domain: "dev", name: LONG.toUpperCase() });
    const lower = KServiceName({ project: "proj", domain: "dev", name: LONG });
    assert.equal(upper.slice(0, 55), lower.slice(0, 55));
    assert.notEqual(upper, lower);
    assert.equal(upper.slice(55), createHash("sha256").update(`proj/dev/${LONG.toUpperCase()}`).digest("hex").slice(0, 8));
    assert.equal(upper.length, 63);
  });
  const id = { project: "proj", domain: "dev", name: "MyApp" };
  const ingress: [string, Partial<AppsConfig>, string | undefined][] = [
    ["devbox", {}, "http://myapp-proj-dev.localhost:30081"],
    ["no baseDomain → none", { baseDomain: "" }, undefined],
    ["empty scheme → https", { scheme: "" }, "https://myapp-proj-dev.localhost:30081"],
    ["port 0 → omitted", { ingressAppsPort: 0 }, "http://myapp-proj-dev.localhost"],
    ["host lowercased", { baseDomain: "Apps.Example.COM", scheme: "https", ingressAppsPort: 0 }, "https://myapp-proj-dev.apps.example.com"],
  ];
  for (const [name, patch, want] of ingress) {
    test(`publicIngress: ${name}`, () => {
      assert.deepEqual(publicIngress(id, { ...DEVBOX, ...patch }), want === undefined ? undefined : { publicUrl: want });
    });
  }
  test("ingress comes from the app-id identity, not the KService name or status.url", () => {
    const obj = ksvc({ appId: "team/prod/x", name: "something-else" });
    (obj.status as Record<string, unknown>).url = "http://elsewhere.example.com";
    assert.deepEqual(kserviceToApp(obj, DEVBOX).status?.ingress, { publicUrl: "http://x-team-prod.localhost:30081" });
    assert.equal("ingress" in (kserviceToApp(obj, DEFAULT_APPS_CONFIG).status ?? {}), false);
  });
});

describe("§2.2 identity", () => {
  const ok: [string, string, string | undefined, object][] = [
    ["split on the first two '/'", "a/b/c/d", undefined, { org: "flyte", project: "a", domain: "b", name: "c/d" }],
    ["empty parts accepted", "p/d/", undefined, { org: "flyte", project: "p", domain: "d", name: "" }],
    ["org from annotation", "proj/dev/myapp", "acme", { org: "acme", project: "proj", domain: "dev", name: "myapp" }],
    ["empty org → flyte", "proj/dev/myapp", "", { org: "flyte", project: "proj", domain: "dev", name: "myapp" }],
    ["case kept", "Proj/Dev/MyApp", undefined, { org: "flyte", project: "Proj", domain: "Dev", name: "MyApp" }],
  ];
  for (const [name, appId, org, want] of ok) {
    test(name, () => {
      const obj = ksvc({ appId, org, labels: { [LABELS.PROJECT]: "other", [LABELS.DOMAIN]: "other", [LABELS.APP_NAME]: "other" } });
      assert.deepEqual(appIdentity(obj), want);
      // proto3 JSON omits default values: an empty part is not printed
      const printed = Object.fromEntries(Object.entries(want).filter(([, v]) => v !== ""));
      assert.deepEqual(kserviceToApp(obj, DEVBOX).metadata, { id: printed });
    });
  }
  const bad: [string, string | null, string][] = [
    ["missing", null, "KService myksvc missing flyte.org/app-id annotation"],
    ["two parts", "proj/dev", 'KService myksvc has malformed flyte.org/app-id annotation: "proj/dev"'],
    ["no slash", "myapp", 'KService myksvc has malformed flyte.org/app-id annotation: "myapp"'],
    ["empty", "", 'KService myksvc has malformed flyte.org/app-id annotation: ""'],
    ["quoted with escapes (Go %q)", 'a"b\n', 'KService myksvc has malformed flyte.org/app-id annotation: "a\\"b\\n"'],
  ];
  for (const [name, appId, message] of bad) {
    test(`error: ${name}`, () => {
      const obj = ksvc({ appId, name: "myksvc", namespace: "ns1" });
      for (const f of [() => appIdentity(obj), () => kserviceToApp(obj, DEVBOX)]) {
        assert.throws(f, (err: unknown) => {
          assert.ok(err instanceof AppConversionError);
          assert.ok(err instanceof Error);
          assert.equal(err.message, message);
          assert.equal(err.ksvc, "ns1/myksvc");
          assert.equal(err.name, "AppConversionError");
          return true;
        });
      }
    });
  }
});

describe("§2.4 A stopped short-circuit and the desiredState override", () => {
  const stopped = { [LABELS.APP_STOPPED]: "true" };
  const specActive = specToAnnotation({ container: { image: "nginx:latest" }, desiredState: "DESIRED_STATE_ACTIVE" });
  test("only the STOPPED condition: no ingress, createdAt, k8sMetadata or currentReplicas", () => {
    const app = kserviceToApp(
      ksvc({ labels: stopped, conditions: [kc("Ready", "False", 7, "RevisionMissing", REV_MISSING)] }),
      DEVBOX,
      { currentReplicas: 3 },
    );
    assert.deepEqual(app.status, { conditions: [c(7, STOPPED, "App scaled to zero")] });
  });
  test("stable timestamp: same input, same output (latest transition, else creation, else none)", () => {
    const obj = ksvc({ labels: stopped, conditions: [kc("Ready", "Unknown", 4), kc("RoutesReady", "Unknown", 8)] });
    const a = kserviceToApp(obj, DEVBOX);
    const b = kserviceToApp(structuredClone(obj), DEVBOX);
    assert.deepEqual(a, b);
    assert.equal(a.status?.conditions?.[0]?.lastTransitionTime, at(8));
    const fresh = kserviceToApp(ksvc({ labels: stopped, creationTimestamp: "2026-04-30T11:00:00Z" }), DEVBOX);
    assert.equal(fresh.status?.conditions?.[0]?.lastTransitionTime, "2026-04-30T11:00:00Z");
    const bare = kserviceToApp(ksvc({ labels: stopped, creationTimestamp: null }), DEVBOX);
    assert.deepEqual(bare.status, { conditions: [{ deploymentStatus: STOPPED, message: "App scaled to zero" }] });
  });
  test("label value must be exactly 'true'", () => {
    const app = kserviceToApp(ksvc({ labels: { [LABELS.APP_STOPPED]: "True" }, conditions: [kc("Ready", "True", 1)] }), DEVBOX);
    assert.deepEqual(app.status?.conditions, [c(1, ACTIVE, "Service is ready")]);
  });
  test("stopped + spec → desiredState forced to DESIRED_STATE_STOPPED", () => {
    const app = kserviceToApp(ksvc({ labels: stopped, annotations: { [ANNOTATIONS.SPEC]: specActive } }), DEVBOX);
    assert.deepEqual(app.spec, { container: { image: "nginx:latest" }, desiredState: "DESIRED_STATE_STOPPED" });
  });
  test("not stopped → the annotation's own desiredState is kept (ACTIVE, or unset)", () => {
    const app = kserviceToApp(ksvc({ annotations: { [ANNOTATIONS.SPEC]: specActive } }), DEVBOX);
    assert.deepEqual(app.spec, { container: { image: "nginx:latest" }, desiredState: "DESIRED_STATE_ACTIVE" });
    const unset = kserviceToApp(ksvc({ annotations: { [ANNOTATIONS.SPEC]: specToAnnotation({ container: { image: "x" } }) } }), DEVBOX);
    assert.deepEqual(unset.spec, { container: { image: "x" } });
  });
  test("stopped without a spec annotation → still no spec", () => {
    assert.equal("spec" in kserviceToApp(ksvc({ labels: stopped }), DEVBOX), false);
  });
});

describe("§2.4 B status fields and §0 defaults omitted", () => {
  test("a fresh object: no conditions, no currentReplicas; k8sMetadata + createdAt + ingress present", () => {
    const app = kserviceToApp(ksvc({}), DEVBOX);
    assert.deepEqual(app, {
      metadata: { id: { org: "flyte", project: "proj", domain: "dev", name: "myapp" } },
      status: {
        ingress: { publicUrl: "http://myapp-proj-dev.localhost:30081" },
        createdAt: T0,
        k8sMetadata: { namespace: "flyte" },
      },
    });
  });
  test("currentReplicas from the caller; 0 omitted", () => {
    assert.equal(kserviceToApp(ksvc({}), DEVBOX, { currentReplicas: 2 }).status?.currentReplicas, 2);
    assert.equal("currentReplicas" in (kserviceToApp(ksvc({}), DEVBOX, { currentReplicas: 0 }).status ?? {}), false);
  });
  test("k8sMetadata is the KService's own namespace; no creationTimestamp → no createdAt", () => {
    const app = kserviceToApp(ksvc({ namespace: "team-a", creationTimestamp: null }), DEFAULT_APPS_CONFIG);
    assert.deepEqual(app.status, { k8sMetadata: { namespace: "team-a" } });
  });
});

describe("timestamps → RFC 3339 UTC as Go protojson prints them", () => {
  const cases: [unknown, string | undefined][] = [
    ["2026-04-30T12:00:05Z", "2026-04-30T12:00:05Z"],
    ["2026-04-30T12:00:05.000Z", "2026-04-30T12:00:05Z"],
    ["2026-04-30T12:00:05.5Z", "2026-04-30T12:00:05.500Z"],
    ["2026-04-30T12:00:05.123Z", "2026-04-30T12:00:05.123Z"],
    ["2026-04-30T12:00:05.1234Z", "2026-04-30T12:00:05.123400Z"],
    ["2026-04-30T12:00:05.123456Z", "2026-04-30T12:00:05.123456Z"],
    ["2026-04-30T12:00:05.1234567Z", "2026-04-30T12:00:05.123456700Z"],
    ["2026-04-30T12:00:05.123456789Z", "2026-04-30T12:00:05.123456789Z"],
    ["2026-04-30T14:30:05+02:30", "2026-04-30T12:00:05Z"],
    ["2026-04-30T23:00:00-02:00", "2026-05-01T01:00:00Z"],
    ["0001-01-01T00:00:00Z", undefined], // Go's zero time
    ["2026-02-30T00:00:00Z", undefined],
    ["2026-04-30 12:00:05Z", undefined],
    ["yesterday", undefined],
    ["", undefined],
    [undefined, undefined],
    [1714478400, undefined],
  ];
  for (const [input, want] of cases) {
    test(`${JSON.stringify(input)} → ${want}`, () => assert.equal(toProtoTimestamp(input), want));
  }
  test("createdAt and lastTransitionTime are normalised", () => {
    const app = kserviceToApp(
      ksvc({ creationTimestamp: "2026-04-30T14:00:00+02:00", conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-04-30T12:00:01.250Z" }] }),
      DEVBOX,
    );
    assert.equal(app.status?.createdAt, "2026-04-30T12:00:00Z");
    assert.equal(app.status?.conditions?.[0]?.lastTransitionTime, "2026-04-30T12:00:01.250Z");
  });
  test("a condition without lastTransitionTime gets the stable time (latest transition, else creation), not now()", () => {
    const app = kserviceToApp(
      ksvc({ conditions: [{ type: "ConfigurationsReady", status: "True" }, kc("Ready", "True", 7), kc("RoutesReady", "True", 3)] }),
      DEVBOX,
    );
    assert.deepEqual(app.status?.conditions?.map((x) => x.lastTransitionTime), [at(7), at(7), at(3)]);
    const none = kserviceToApp(ksvc({ conditions: [{ type: "Ready", status: "True" }] }), DEVBOX);
    assert.deepEqual(none.status?.conditions, [{ lastTransitionTime: T0, deploymentStatus: ACTIVE, message: "Service is ready" }]);
  });
});

describe("§1.13 golden: the reference's example JSON", () => {
  const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`./fixtures/flyte/${name}`, import.meta.url)), "utf8");
  test("Ready KService → updateEvent JSON, equal value and Go's field order", () => {
    const obj = JSON.parse(fixture("ready-kservice.json")) as KubeObject;
    // The spec annotation is what our own declarations encode for {container:{image:"nginx:latest"}}.
    assert.equal(obj.metadata.annotations?.[ANNOTATIONS.SPEC], specToAnnotation({ container: { image: "nginx:latest" } }));
    const want = JSON.parse(fixture("ready-update-event.json"));
    const got = { updateEvent: { updatedApp: kserviceToApp(obj, DEVBOX, { currentReplicas: 1 }) } };
    assert.deepEqual(got, want);
    assert.equal(JSON.stringify(got), JSON.stringify(want));
  });
});

describe("§2.3 spec annotation", () => {
  const good = specToAnnotation({ container: { image: "nginx:latest" } });
  test("round trip of a rich spec through binary protobuf (proto3 JSON defaults omitted)", () => {
    const spec = {
      container: {
        image: "ghcr.io/acme/app:1",
        args: ["serve", "--port", "8080"],
        resources: { requests: [{ name: "CPU", value: "1" }], limits: [{ name: "MEMORY", value: "1Gi" }] },
        env: [{ key: "A", value: "b" }],
        ports: [{ containerPort: 8080, name: "http" }],
        architecture: "ARM64",
      },
      autoscaling: { replicas: { min: 1, max: 3 }, scaledownPeriod: "300s", scalingMetric: { requestRate: { targetValue: 10 } } },
      ingress: { private: true, subdomain: "x" },
      desiredState: "DESIRED_STATE_ACTIVE",
      clusterPool: "gpu",
      images: { images: [{ tag: "t", buildJobUrl: "https://b" }] },
      securityContext: { runAs: { k8sServiceAccount: "sa" }, secrets: [{ group: "g", key: "k", mountRequirement: "ENV_VAR" }], allowAnonymous: true },
      extendedResources: { gpuAccelerator: { device: "nvidia-l4", partitionSize: "1g.5gb" }, sharedMemory: { mountPath: "/dev/shm" } },
      runtimeMetadata: { type: "FLYTE_SDK", version: "2.0.0", flavor: "python" },
      profile: { type: "FastAPI", name: "n", shortDescription: "d", iconUrl: "https://i" },
      inputs: { items: [{ name: "a", stringValue: "v" }, { name: "b", appId: { project: "p", domain: "d", name: "n" } }] },
      links: [{ path: "/docs", title: "Docs", isRelative: true }],
      timeouts: { requestTimeout: "60s" },
    };
    assert.deepEqual(specFromAnnotation(specToAnnotation(spec)), spec);
    const pod = { pod: { metadata: { labels: { a: "b" } }, podSpec: { containers: [{ name: "c", image: "i" }] }, primaryContainerName: "c" } };
    assert.deepEqual(specFromAnnotation(specToAnnotation(pod)), pod);
  });
  test("creator (common.EnrichedIdentity) and artifact inputs round-trip", () => {
    const spec = {
      container: { image: "i" },
      creator: {
        user: {
          id: { subject: "u-1" },
          spec: { firstName: "Ada", email: "ada@example.com", groups: ["eng", "ops"], photoUrl: "https://p" },
          roles: [{ id: { organization: "o", name: "r" }, roleType: "ROLE_TYPE_VIEWER", actions: ["ACTION_VIEW_FLYTE_INVENTORY"] }],
          policies: [{
            id: { name: "pol" },
            bindings: [{ roleId: { name: "r" }, resource: { project: { name: "p", domain: { name: "d", organization: { name: "o" } } } } }],
            description: "x",
          }],
        },
      },
      inputs: {
        items: [
          { name: "model", artifactId: { key: { project: "p", domain: "d", name: "m", org: "o" }, version: "v3" } },
          { name: "plain", stringValue: "x" },
          { name: "other-app", appId: { org: "o", project: "p", domain: "d", name: "a" } },
        ],
      },
    };
    assert.deepEqual(specFromAnnotation(specToAnnotation(spec)), spec);
    const app = { creator: { application: { id: { subject: "svc" }, spec: { name: "ci", organization: "o" } } } };
    assert.deepEqual(specFromAnnotation(specToAnnotation(app)), app);
  });
  test("creator and artifact_id (field 6, ArtifactVersionId) decode from hand-encoded bytes (field numbers, not just a self round trip)", () => {
    const enc = new TextEncoder();
    const ld = (no: number, body: number[]): number[] => [(no << 3) | 2, body.length, ...body];
    const str = (no: number, s: string): number[] => ld(no, [...enc.encode(s)]);
    // Spec{ creator(12){ user(1){ id(1){subject(1)}, spec(2){ email(3), groups(6) } } },
    //       inputs(13){ items(1){ name(1), artifact_id(6){ key(1){name(3)}, version(2) } } } }
    const creator = ld(12, ld(1, [...ld(1, str(1, "u-1")), ...ld(2, [...str(3, "a@b.c"), ...str(6, "g")])]));
    const inputs = ld(13, ld(1, [...str(1, "m"), ...ld(6, [...ld(1, str(3, "model")), ...str(2, "v1")])]));
    assert.deepEqual(specFromAnnotation(btoa(String.fromCharCode(...creator, ...inputs))), {
      creator: { user: { id: { subject: "u-1" }, spec: { email: "a@b.c", groups: ["g"] } } },
      inputs: { items: [{ name: "m", artifactId: { key: { name: "model" }, version: "v1" } }] },
    });
    // fields 3 and 4 were removed from Input (flyteorg/flyte#7808): unknown now, not printed
    const old = ld(13, ld(1, [...str(1, "m"), ...ld(4, [...ld(1, str(3, "model")), ...str(2, "v1")])]));
    assert.deepEqual(specFromAnnotation(btoa(String.fromCharCode(...old))), { inputs: { items: [{ name: "m" }] } });
  });
  test("missing annotation → no spec; empty annotation → empty Spec (Go decodes \"\" to zero bytes); no warning", () => {
    const { logger, lines } = capture();
    assert.equal(specFromAnnotation(undefined, logger), undefined);
    assert.deepEqual(specFromAnnotation("", logger), {});
    assert.deepEqual(specFromAnnotation("\r\n", logger), {});
    assert.deepEqual(lines, []);
  });
  test("kserviceToApp: empty flyte.org/spec → \"spec\":{} (with the stopped override when stopped)", () => {
    const running = kserviceToApp(ksvc({ annotations: { [ANNOTATIONS.SPEC]: "" } }), DEVBOX);
    assert.deepEqual(running.spec, {});
    const stopped = kserviceToApp(ksvc({ annotations: { [ANNOTATIONS.SPEC]: "" }, labels: { [LABELS.APP_STOPPED]: "true" } }), DEVBOX);
    assert.deepEqual(stopped.spec, { desiredState: "DESIRED_STATE_STOPPED" });
  });
  test("embedded CR/LF are skipped (Go StdEncoding)", () => {
    assert.deepEqual(specFromAnnotation(`${good.slice(0, 8)}\r\n${good.slice(8)}\n`), { container: { image: "nginx:latest" } });
  });
  const invalidBase64 = ["not base64!", good.replace(/=+$/, ""), "Cg4K=DG5", "Cg4KDG5naW54OmxhdGVzdA===", "Cg-_", " Cg4K"];
  for (const value of invalidBase64) {
    test(`invalid base64 ${JSON.stringify(value)} → no spec + warning`, () => {
      const { logger, lines } = capture();
      assert.equal(specFromAnnotation(value, logger), undefined);
      assert.equal(lines.length, 1);
      assert.equal(lines[0]?.level, "warn");
      assert.match(String(lines[0]?.msg), /not valid base64/);
    });
  }
  const invalidProto: [string, number[]][] = [
    ["truncated length-delimited field", [0x0a, 0x05, 0x01]],
    ["wire type 7", [0x0f]],
    ["field number 0", [0x00, 0x01]],
    ["bad UTF-8 in a string", [0x0a, 0x03, 0x0a, 0x01, 0xff]],
  ];
  for (const [name, bytes] of invalidProto) {
    test(`invalid protobuf (${name}) → no spec + warning`, () => {
      const { logger, lines } = capture();
      assert.equal(specFromAnnotation(btoa(String.fromCharCode(...bytes)), logger), undefined);
      assert.equal(lines.length, 1);
      assert.match(String(lines[0]?.msg), /not a valid flyteidl2\.app\.Spec/);
    });
  }
  test("unknown fields are accepted and not printed (like protojson)", () => {
    const known = atob(good);
    // field 98 length-delimited {1: "u"}; field 99 varint 1 (neither is declared by any Flyte version)
    const extra = String.fromCharCode(0x92, 0x06, 0x03, 0x0a, 0x01, 0x75, 0x98, 0x06, 0x01);
    assert.deepEqual(specFromAnnotation(btoa(known + extra)), { container: { image: "nginx:latest" } });
  });
  test("kserviceToApp: an undecodable spec → App without spec + one warning naming the KService", () => {
    const { logger, lines } = capture();
    const app = kserviceToApp(ksvc({ annotations: { [ANNOTATIONS.SPEC]: "%%%" } }), DEVBOX, { logger });
    assert.equal("spec" in app, false);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.kservice, "flyte/myapp-proj-dev");
  });
});

describe("config", () => {
  test("DEFAULT_APPS_CONFIG is Flyte's internalApps defaults", () => {
    assert.deepEqual(DEFAULT_APPS_CONFIG, { baseDomain: "", scheme: "", ingressAppsPort: 0, watchBufferSize: 100 });
  });
  test("a named cluster: status.assignedCluster first (Status field 1), running and stopped; unnamed: absent", () => {
    const running = ksvc({ conditions: [kc("Ready", "True", 5)] });
    const stoppedKsvc = ksvc({ labels: { [LABELS.APP_STOPPED]: "true" }, conditions: [kc("Ready", "False", 7)] });
    const named = new AppConverter(DEVBOX, { cluster: "east" });
    const plain = new AppConverter(DEVBOX);
    for (const obj of [running, stoppedKsvc]) {
      const withName = named.convert(obj, { currentReplicas: 2 });
      const without = plain.convert(obj, { currentReplicas: 2 });
      assert.equal(Object.keys(withName.status!)[0], "assignedCluster");
      assert.equal(withName.status!.assignedCluster, "east");
      const { assignedCluster: _, ...rest } = withName.status!;
      assert.deepEqual(rest, without.status, "nothing else changes");
      assert.equal("assignedCluster" in without.status!, false);
    }
  });
});

describe("cached values are never shared mutable", () => {
  const annotation = specToAnnotation({ container: { image: "nginx:latest", args: ["serve"] } });
  const twins = () => [
    ksvc({ appId: "proj/dev/one", name: "one", annotations: { [ANNOTATIONS.SPEC]: annotation } }),
    ksvc({ appId: "proj/dev/two", name: "two", annotations: { [ANNOTATIONS.SPEC]: annotation } }),
  ] as const;
  /** Edits an App's spec as a library user might; a frozen spec refuses (TypeError in strict code). */
  const edit = (app: App) => {
    try {
      (app.spec!.container as { image: string }).image = "evil:latest";
      (app.spec!.container as { args: string[] }).args.push("--pwn");
    } catch (err) {
      assert.ok(err instanceof TypeError, String(err));
    }
  };

  test("kserviceToApp: editing one App's spec does not change another App's with the same annotation", () => {
    const [a, b] = twins();
    const one = kserviceToApp(a, DEVBOX);
    edit(one);
    assert.deepEqual(kserviceToApp(b, DEVBOX).spec, { container: { image: "nginx:latest", args: ["serve"] } });
  });

  test("AppConverter: Apps built from one cached Spec share a frozen Spec; an edit cannot reach the other", () => {
    const converter = new AppConverter(DEVBOX);
    const [a, b] = twins();
    const one = converter.convert(a);
    const two = converter.convert(b);
    edit(one);
    assert.deepEqual(two.spec, { container: { image: "nginx:latest", args: ["serve"] } });
    assert.deepEqual(converter.convert(a).spec, { container: { image: "nginx:latest", args: ["serve"] } });
    assert.ok(Object.isFrozen(two.spec!.container), "the shared Spec is frozen");
  });
});
