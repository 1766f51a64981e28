/**
 * Deterministic generator of realistic Knative Service watch events, as the
 * API server would send them for Flyte apps: `flyte.org/*` labels and
 * annotations (one of them a base64 spec), 2–3 `managedFields` entries, a pod
 * template, three conditions and traffic; about 5 KB per event, and ~1% of the
 * objects carry non-ASCII text (which matters for V8's one-/two-byte strings).
 *
 * Plain web-standard code: runs unchanged on Deno, Bun and Node.
 * @module
 */

import { seededRandom } from "../../src/prng.ts";

/** The collection the benchmark server serves and every consumer watches. */
export const BENCH_NAMESPACE = "bench";
/** Path of the Knative Services collection in {@link BENCH_NAMESPACE}. */
export const BENCH_PATH = `/apis/serving.knative.dev/v1/namespaces/${BENCH_NAMESPACE}/services`;
/** Size of the writes of the benchmark server and of the in-memory chunks. */
export const CHUNK_BYTES = 64 * 1024;

/** Options for {@link generateEvents}. */
export interface GenerateOptions {
  /** PRNG seed (default 20251130). */
  seed?: number;
  /** How many distinct services the events are spread over (default 500). */
  services?: number;
  /** Probability that an event's object carries non-ASCII text (default 0.01). */
  nonAsciiRate?: number;
}

/** The generated stream. */
export interface GeneratedEvents {
  /** One compact JSON watch event per entry, without the trailing newline. */
  lines: string[];
  /** How many objects carry non-ASCII text. */
  nonAscii: number;
  /** {@link NameChecksum} over the object names, in stream order. */
  checksum: number;
}


/**
 * An order-sensitive 32-bit FNV-1a checksum over a sequence of names. Every
 * consumer feeds it the `metadata.name` of each event it received, so equal
 * checksums mean the same events in the same order.
 */
export class NameChecksum {
  value = 0x811c9dc5;
  count = 0;

  add(name: string): void {
    let h = this.value;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    this.value = Math.imul(h ^ 0x0a, 16777619) >>> 0; // separator, so "ab"+"c" != "a"+"bc"
    this.count++;
  }
}

const PROJECTS = ["flytesnacks", "forecasting", "recsys", "vision", "nlp-playground", "payments-risk", "search-ranking"];
const DOMAINS = ["development", "staging", "production"];
const IMAGES = [
  "cr.flyte.org/flyteorg/flytekit:py3.11-1.14.3",
  "ghcr.io/unionai/serving-runtime:0.9.2",
  "registry.internal.example.com/ml/app-server:2025.11.3-7f3c2a1",
];
const WORDS = ["model", "serving", "batch", "realtime", "embedding", "ranker", "gateway", "dashboard", "notebook", "feature"];
const NON_ASCII_TEXT = [
  "Prévisions météo — modèle ☕ für Zürich",
  "東京リージョンの推論サーバー (β)",
  "Análisis de señales · año fiscal 2025 ✓",
  "Сервис рекомендаций — тестовая версия",
];
const ALPHANUM = "abcdefghijklmnopqrstuvwxyz0123456789";
const HEX = "0123456789abcdef";

interface Service {
  name: string;
  uid: string;
  project: string;
  domain: string;
  created: number;
  generation: number;
  image: string;
  specBytes: number;
  managers: number;
}

function pick<T>(rnd: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rnd() * xs.length)] as T;
}

function randomString(rnd: () => number, alphabet: string, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(rnd() * alphabet.length)];
  return s;
}

function uuid(rnd: () => number): string {
  const h = randomString(rnd, HEX, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Base64 of `bytes` random bytes (like a serialized protobuf spec), 3 bytes per PRNG draw. */
function base64(rnd: () => number, bytes: number): string {
  const parts: string[] = [];
  for (let i = 0; i < bytes; i += 3) {
    const v = Math.floor(rnd() * 16777216);
    parts.push(B64[v >>> 18]! + B64[(v >>> 12) & 63]! + B64[(v >>> 6) & 63]! + B64[v & 63]!);
  }
  return parts.join("");
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const EPOCH = Date.UTC(2025, 9, 1, 8, 0, 0);

function makeService(rnd: () => number, i: number): Service {
  const project = pick(rnd, PROJECTS);
  return {
    name: `${pick(rnd, WORDS)}-${pick(rnd, WORDS)}-${randomString(rnd, ALPHANUM, 5)}-${i}`,
    uid: uuid(rnd),
    project,
    domain: pick(rnd, DOMAINS),
    created: EPOCH + Math.floor(rnd() * 30 * 86_400_000),
    generation: 1 + Math.floor(rnd() * 20),
    image: pick(rnd, IMAGES),
    specBytes: 420 + Math.floor(rnd() * 420),
    managers: rnd() < 0.5 ? 2 : 3,
  };
}

function managedField(manager: string, operation: string, time: string, subresource: boolean): Record<string, unknown> {
  if (subresource) {
    return {
      manager,
      operation,
      apiVersion: "serving.knative.dev/v1",
      time,
      fieldsType: "FieldsV1",
      fieldsV1: {
        "f:status": {
          ".": {},
          "f:address": { ".": {}, "f:url": {} },
          "f:conditions": {},
          "f:latestCreatedRevisionName": {},
          "f:latestReadyRevisionName": {},
          "f:observedGeneration": {},
          "f:traffic": {},
          "f:url": {},
        },
      },
      subresource: "status",
    };
  }
  return {
    manager,
    operation,
    apiVersion: "serving.knative.dev/v1",
    time,
    fieldsType: "FieldsV1",
    fieldsV1: {
      "f:metadata": {
        "f:annotations": {
          ".": {},
          "f:flyte.org/app-spec": {},
          "f:flyte.org/description": {},
          "f:flyte.org/owner": {},
          "f:flyte.org/spec-sha256": {},
        },
        "f:labels": {
          ".": {},
          "f:flyte.org/app-managed": {},
          "f:flyte.org/app-name": {},
          "f:flyte.org/domain": {},
          "f:flyte.org/project": {},
          "f:flyte.org/revision": {},
        },
      },
      "f:spec": {
        ".": {},
        "f:template": {
          ".": {},
          "f:metadata": { ".": {}, "f:annotations": {}, "f:labels": {} },
          "f:spec": {
            ".": {},
            "f:containerConcurrency": {},
            "f:containers": {},
            "f:serviceAccountName": {},
            "f:timeoutSeconds": {},
          },
        },
        "f:traffic": {},
      },
    },
  };
}

function makeEvent(rnd: () => number, svc: Service, rv: number, at: number, nonAscii: boolean): Record<string, unknown> {
  svc.generation += rnd() < 0.4 ? 1 : 0;
  const gen = svc.generation;
  const revision = `${svc.name}-${String(gen).padStart(5, "0")}`;
  const ready = rnd() < 0.85;
  const t = iso(at);
  const description = nonAscii ? pick(rnd, NON_ASCII_TEXT) : `${pick(rnd, WORDS)} ${pick(rnd, WORDS)} app for ${svc.project}`;
  const appName = svc.name.slice(0, svc.name.lastIndexOf("-"));
  const fqdn = `${svc.name}.${BENCH_NAMESPACE}.svc.cluster.local`;
  const managedFields = [
    managedField("flyteadmin", "Update", t, false),
    managedField("controller", "Update", t, true),
  ];
  if (svc.managers === 3) managedFields.unshift(managedField("kubectl-client-side-apply", "Update", iso(svc.created), false));
  const condition = (type: string) =>
    ready
      ? { lastTransitionTime: t, status: "True", type }
      : {
        lastTransitionTime: t,
        message: nonAscii ? `Révision « ${revision} » pas encore prête ⏳` : `Revision "${revision}" failed with message: container failed to start.`,
        reason: "RevisionMissing",
        status: "False",
        type,
      };
  return {
    type: "MODIFIED",
    object: {
      apiVersion: "serving.knative.dev/v1",
      kind: "Service",
      metadata: {
        annotations: {
          "flyte.org/app-spec": base64(rnd, svc.specBytes),
          "flyte.org/description": description,
          "flyte.org/owner": `user-${randomString(rnd, ALPHANUM, 6)}@example.com`,
          "flyte.org/spec-sha256": randomString(rnd, HEX, 64),
          "serving.knative.dev/creator": "system:serviceaccount:flyte:flyteadmin",
          "serving.knative.dev/lastModifier": "system:serviceaccount:flyte:flyteadmin",
        },
        creationTimestamp: iso(svc.created),
        generation: gen,
        labels: {
          "flyte.org/app-managed": "true",
          "flyte.org/app-name": appName,
          "flyte.org/domain": svc.domain,
          "flyte.org/project": svc.project,
          "flyte.org/revision": String(gen),
          "app.kubernetes.io/managed-by": "flyteadmin",
        },
        managedFields,
        name: svc.name,
        namespace: BENCH_NAMESPACE,
        resourceVersion: String(rv),
        uid: svc.uid,
      },
      spec: {
        template: {
          metadata: {
            annotations: {
              "autoscaling.knative.dev/max-scale": String(1 + Math.floor(rnd() * 10)),
              "autoscaling.knative.dev/min-scale": "0",
              "autoscaling.knative.dev/target": "100",
            },
            creationTimestamp: null,
            labels: { "flyte.org/app-name": appName, "flyte.org/revision": String(gen) },
          },
          spec: {
            containerConcurrency: 0,
            containers: [{
              args: ["serve", "--port", "8080", "--app", appName, "--log-level", "info"],
              env: [
                { name: "FLYTE_PROJECT", value: svc.project },
                { name: "FLYTE_DOMAIN", value: svc.domain },
                { name: "FLYTE_APP_NAME", value: appName },
                { name: "FLYTE_REVISION", value: String(gen) },
                { name: "FLYTE_INTERNAL_IMAGE", value: svc.image },
                { name: "PYTHONUNBUFFERED", value: "1" },
                { name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: "http://otel-collector.observability:4317" },
              ],
              image: svc.image,
              name: "app",
              ports: [{ containerPort: 8080, protocol: "TCP" }],
              readinessProbe: { successThreshold: 1, tcpSocket: { port: 0 } },
              resources: {
                limits: { cpu: "2", memory: "4Gi" },
                requests: { cpu: `${250 * (1 + Math.floor(rnd() * 4))}m`, memory: "1Gi" },
              },
            }],
            enableServiceLinks: false,
            serviceAccountName: "flyte-apps",
            timeoutSeconds: 300,
          },
        },
        traffic: [{ latestRevision: true, percent: 100 }],
      },
      status: {
        address: { url: `http://${fqdn}` },
        conditions: [condition("ConfigurationsReady"), condition("Ready"), condition("RoutesReady")],
        latestCreatedRevisionName: revision,
        latestReadyRevisionName: ready ? revision : `${svc.name}-${String(Math.max(1, gen - 1)).padStart(5, "0")}`,
        observedGeneration: gen,
        traffic: [{ latestRevision: true, percent: 100, revisionName: revision }],
        url: `https://${svc.name}.${svc.project}-${svc.domain}.apps.example.com`,
      },
    },
  };
}

/**
 * Generates `n` MODIFIED events spread over a pool of services. Deterministic
 * for a given `n` and options; every event has a fresh, increasing
 * resourceVersion, so a reflector turns each one into exactly one output event.
 */
export function generateEvents(n: number, options: GenerateOptions = {}): GeneratedEvents {
  const rnd = seededRandom(options.seed ?? 20251130);
  const pool: Service[] = [];
  const services = options.services ?? 500;
  for (let i = 0; i < services; i++) pool.push(makeService(rnd, i));
  const nonAsciiRate = options.nonAsciiRate ?? 0.01;
  const lines: string[] = [];
  const sum = new NameChecksum();
  let nonAscii = 0;
  let rv = 4_000_000;
  let at = EPOCH + 40 * 86_400_000;
  for (let i = 0; i < n; i++) {
    const svc = pick(rnd, pool);
    rv += 1 + Math.floor(rnd() * 5);
    at += Math.floor(rnd() * 3000);
    const withNonAscii = rnd() < nonAsciiRate;
    if (withNonAscii) nonAscii++;
    lines.push(JSON.stringify(makeEvent(rnd, svc, rv, at, withNonAscii)));
    sum.add(svc.name);
  }
  return { lines, nonAscii, checksum: sum.value };
}

/** Joins lines into one NDJSON byte buffer (every line newline-terminated). */
export function encodeNdjson(lines: readonly string[]): Uint8Array {
  // Line by line: joining first would build one huge (two-byte, if any line is non-ASCII) string.
  const encoder = new TextEncoder();
  let out: Uint8Array = new Uint8Array(1 << 20);
  let at = 0;
  for (const line of lines) {
    const need = at + line.length * 3 + 1; // UTF-8 needs at most 3 bytes per UTF-16 unit
    if (need > out.length) {
      const bigger: Uint8Array = new Uint8Array(Math.max(need, out.length * 2));
      bigger.set(out.subarray(0, at));
      out = bigger;
    }
    at += encoder.encodeInto(line, out.subarray(at)).written;
    out[at++] = 10;
  }
  return out.slice(0, at);
}

/**
 * Splits NDJSON bytes into strings on raw newlines and decodes each line on its
 * own, so an ASCII line stays a one-byte string in V8 (decoding the whole
 * buffer at once would make every line a slice of one two-byte string).
 */
export function splitLines(bytes: Uint8Array): string[] {
  const decoder = new TextDecoder();
  const out: string[] = [];
  let start = 0;
  let nl: number;
  while ((nl = bytes.indexOf(10, start)) !== -1) {
    if (nl > start) out.push(decoder.decode(bytes.subarray(start, nl)));
    start = nl + 1;
  }
  if (start < bytes.length) out.push(decoder.decode(bytes.subarray(start)));
  return out;
}

/** Cuts bytes into independent (copied) chunks of `size` bytes, like network reads. */
export function chunkBytes(bytes: Uint8Array, size = CHUNK_BYTES): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.slice(at, at + size));
  return out;
}
