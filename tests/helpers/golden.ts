/**
 * Flyte's golden answers (tests/fixtures/flyte-golden/, recorded from Flyte's own code):
 * KServices with the App that Flyte's own Go `kserviceToApp` produced, and how to compare
 * appwatch's answer with Flyte's — value for value and key for key, Flyte's `now()` replaced by
 * the stable time appwatch documents (docs/flyte-compatibility.md, divergence 1).
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "../../src/watch/types.ts";
import type { AppsConfig } from "../../src/flyte/model.ts";

export const GOLDEN_DIR: string = fileURLToPath(new URL("../fixtures/flyte-golden/", import.meta.url));

/** One input vector. */
export interface GoldenVector {
  id: string;
  tags: string[];
  config: { baseDomain: string; scheme: string; ingressAppsPort: number };
  ksvc: KubeObject;
  revisions?: KubeObject[];
}

/** Flyte's answer for one vector. */
export interface GoldenAnswer {
  id: string;
  outcome: "app" | "error" | "decodeError" | "marshalError";
  /** protojson of the App (outcome `app`). */
  app?: string;
  /** The App with out-of-range timestamps clamped, as Flyte's generator printed it (outcome `marshalError`). */
  appClamped?: string;
  /** Flyte's conversion error (`error`) or its client's decode error (`decodeError`). */
  error?: string;
  nowFrom?: string;
  nowTo?: string;
  stableTime?: string | null;
}

function ndjson<T>(file: string): T[] {
  const text = new TextDecoder().decode(gunzipSync(readFileSync(GOLDEN_DIR + file)));
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as T);
}

/** Every vector with Flyte's answer, in file order. */
export function loadGolden(): { vector: GoldenVector; answer: GoldenAnswer }[] {
  const answers = new Map(ndjson<GoldenAnswer>("flyte.ndjson.gz").map((a) => [a.id, a]));
  return ndjson<GoldenVector>("vectors.ndjson.gz").map((vector) => {
    const answer = answers.get(vector.id);
    if (!answer) throw new Error(`golden: no answer for ${vector.id}`);
    return { vector, answer };
  });
}

/** Flyte's `schema.json`: messages (fields), enums (values) and the AppService methods. */
export interface GoldenSchema {
  messages: Record<string, GoldenField[]>;
  enums: Record<string, [number, string][]>;
  methods: string[];
}
export interface GoldenField {
  number: number;
  name: string;
  jsonName: string;
  type: string;
  label?: string;
  oneof?: string;
  [key: string]: unknown;
}

export function loadSchema(): GoldenSchema {
  return JSON.parse(readFileSync(GOLDEN_DIR + "schema.json", "utf8")) as GoldenSchema;
}

/** The vector's config as appwatch's `AppsConfig`. */
export function goldenConfig(v: GoldenVector): AppsConfig {
  return { ...v.config, watchBufferSize: 100 };
}

/**
 * What Flyte's Revision GET gives: `status.actualReplicas` of the Revision named by
 * `status.latestReadyRevisionName` in the KService's namespace (`undefined` when there is none).
 */
export function goldenReplicas(v: GoldenVector): number | undefined {
  const status = v.ksvc.status as { latestReadyRevisionName?: unknown } | undefined;
  const name = status?.latestReadyRevisionName;
  if (typeof name !== "string" || name === "") return undefined;
  const ns = v.ksvc.metadata?.namespace ?? "";
  const rev = (v.revisions ?? []).find((r) => r.metadata?.name === name && (r.metadata?.namespace ?? "") === ns);
  const replicas = (rev?.status as { actualReplicas?: unknown } | undefined)?.actualReplicas;
  return typeof replicas === "number" ? replicas : undefined;
}

/** Nanoseconds since the epoch of a protojson timestamp (`…T…[.fraction]Z`). */
function nanos(ts: string): bigint {
  const m = /^(.*?)(?:\.(\d+))?Z$/.exec(ts);
  if (!m) throw new Error(`golden: not a timestamp: ${ts}`);
  return BigInt(Date.parse(m[1] + "Z")) * 1_000_000n + BigInt((m[2] ?? "").padEnd(9, "0"));
}

/**
 * Flyte's App with each `now()` stamp (a `lastTransitionTime` inside the call's window) replaced by
 * the stable time appwatch uses instead — or removed, when the KService has none.
 */
export function expectedApp(answer: GoldenAnswer, text: string): unknown {
  const app = JSON.parse(text) as { status?: { conditions?: Record<string, unknown>[] } };
  const from = answer.nowFrom ? nanos(answer.nowFrom) : undefined;
  const to = answer.nowTo ? nanos(answer.nowTo) : undefined;
  for (const cond of app.status?.conditions ?? []) {
    const ltt = cond.lastTransitionTime;
    if (typeof ltt !== "string" || from === undefined || to === undefined) continue;
    const t = nanos(ltt);
    if (t < from || t > to) continue;
    // keep the key's position: rebuild the condition with the replacement in place
    const entries = Object.entries(cond).flatMap(([k, val]): [string, unknown][] =>
      k !== "lastTransitionTime" ? [[k, val]] : answer.stableTime ? [[k, answer.stableTime]] : []
    );
    for (const k of Object.keys(cond)) delete cond[k];
    Object.assign(cond, Object.fromEntries(entries));
  }
  return app;
}

/**
 * Where two JSON values differ, key order of objects included (`undefined` when they are equal).
 * Both sides go through JS objects, so integer-like keys are ordered alike on both.
 */
export function jsonDiff(actual: unknown, expected: unknown, path = "$"): string | undefined {
  if (expected === null || typeof expected !== "object") {
    return Object.is(actual, expected) ? undefined : `${path}: ${JSON.stringify(actual)} ≠ Flyte's ${JSON.stringify(expected)}`;
  }
  if (actual === null || typeof actual !== "object" || Array.isArray(actual) !== Array.isArray(expected)) {
    return `${path}: ${JSON.stringify(actual)} ≠ Flyte's ${JSON.stringify(expected)}`;
  }
  const ak = Object.keys(actual);
  const ek = Object.keys(expected);
  if (ak.join("\0") !== ek.join("\0")) return `${path}: keys [${ak.join(",")}] ≠ Flyte's [${ek.join(",")}]`;
  for (const k of ek) {
    const d = jsonDiff((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], `${path}.${k}`);
    if (d) return d;
  }
  return undefined;
}
