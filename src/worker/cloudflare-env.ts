/**
 * The Cloudflare Worker's configuration: its `vars` and secrets. The service's settings are the
 * same `APPWATCH_*` variables as everywhere, read and checked by the one environment reader
 * (`src/service/settings/env.ts`, docs/operations.md); only the API server's URL and token are the
 * Worker's own, since `serve` finds them in a kubeconfig instead (declared in the same table, as
 * `worker` rows). Settings with no meaning here (the listen address, gRPC, the sandbox,
 * kubeconfig) are read but unused.
 * @module
 */
import { settingsFromEnv as serviceSettingsFromEnv, workerSettingsFromEnv } from "../service/settings/env.ts";
import { FALLBACK_NAMESPACE, type ServiceSettings, type SettingsOf } from "../service/settings/table.ts";

/** The Worker's settings: the cluster, and the service's settings. */
export interface CloudflareSettings {
  apiServer: string;
  token: string | undefined;
  /** One or more namespaces (default {@link FALLBACK_NAMESPACE}, `flyte`), or `["*"]` for all. */
  namespaces: string[];
  service: ServiceSettings;
  logLevel: SettingsOf<"serve">["logLevel"];
}

/** Reads the settings from the Worker's `env` (bindings that are not strings are ignored). */
export function settingsFromEnv(env: Record<string, unknown>): { ok: true; value: CloudflareSettings } | { ok: false; message: string } {
  const strings: Record<string, string> = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string"));
  const cluster = workerSettingsFromEnv(strings);
  if (!cluster.ok) return cluster;
  const read = serviceSettingsFromEnv("serve", strings);
  if (!read.ok) return { ok: false, message: read.problems.join("; ") };
  const { namespaces, ...service } = read.settings;
  return {
    ok: true,
    value: {
      apiServer: cluster.settings.apiServer,
      token: cluster.settings.apiToken,
      namespaces: namespaces.length ? namespaces : [FALLBACK_NAMESPACE],
      service: service as ServiceSettings,
      logLevel: read.settings.logLevel,
    },
  };
}
