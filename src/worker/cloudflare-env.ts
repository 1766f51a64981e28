/**
 * The Cloudflare Worker's configuration: its `vars` and secrets. The service's settings are the
 * same `APPWATCH_*` variables as everywhere, read and checked by the one environment reader
 * (`src/service/settings/env.ts`, docs/operations.md); only the API server's URL and token are the Worker's
 * own, since `serve` finds them in a kubeconfig instead. Settings with no meaning here (the
 * listen address, gRPC, the sandbox, kubeconfig) are read but unused.
 * @module
 */
import * as v from "valibot";
import { settingsFromEnv as serviceSettingsFromEnv } from "../service/settings/env.ts";
import type { ServiceSettings, SettingsOf } from "../service/settings/table.ts";

const ClusterSchema = v.object({
  /** The Kubernetes API server, e.g. `https://k8s.example.com:6443` (a publicly trusted certificate: see docs/edge-cloudflare.md). */
  APPWATCH_KUBE_API_URL: v.pipe(v.string(), v.url("must be a URL such as https://k8s.example.com:6443"), v.regex(/^https?:\/\//, "must be http:// or https://")),
  /** A bearer token for the API server (a secret); none: anonymous. */
  APPWATCH_KUBE_TOKEN: v.optional(v.pipe(v.string(), v.trim(), v.nonEmpty("must not be empty when set"))),
});

/** The Worker's settings: the cluster, and the service's settings. */
export interface CloudflareSettings {
  apiServer: string;
  token: string | undefined;
  /** One or more namespaces (default `flyte`), or `["*"]` for all. */
  namespaces: string[];
  service: ServiceSettings;
  logLevel: SettingsOf<"serve">["logLevel"];
}

/** Reads the settings from the Worker's `env` (bindings that are not strings are ignored). */
export function settingsFromEnv(env: Record<string, unknown>): { ok: true; value: CloudflareSettings } | { ok: false; message: string } {
  const strings: Record<string, string> = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string"));
  const cluster = v.safeParse(ClusterSchema, strings);
  if (!cluster.success) {
    const first = cluster.issues[0];
    const key = first.path?.map((p) => String(p.key)).join(".") ?? "?";
    // A missing key's own message is valibot's "Invalid key: …": say what to set instead.
    return { ok: false, message: first.input === undefined ? `${key} is required` : `${key} ${first.message}` };
  }
  const read = serviceSettingsFromEnv("serve", strings);
  if (!read.ok) return { ok: false, message: read.problems.join("; ") };
  const { namespaces, ...service } = read.settings;
  return {
    ok: true,
    value: {
      apiServer: cluster.output.APPWATCH_KUBE_API_URL,
      token: cluster.output.APPWATCH_KUBE_TOKEN,
      namespaces: namespaces.length ? namespaces : ["flyte"],
      service: service as ServiceSettings,
      logLevel: read.settings.logLevel,
    },
  };
}
