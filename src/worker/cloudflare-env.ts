/**
 * The Cloudflare Worker's configuration: its `vars` and secrets, checked with valibot. The names
 * are the service's own `APPWATCH_*` variables (docs/operations.md) where the setting exists on
 * Cloudflare, plus the API server's URL and token, which `serve` finds in a kubeconfig instead.
 * @module
 */
import * as v from "valibot";

/** A comma-separated list: items trimmed, empty ones dropped. */
const List = v.pipe(v.string(), v.transform((s) => s.split(",").map((x) => x.trim()).filter((x) => x !== "")));
const SECONDS = "must be seconds from 0.05 to 3600";
const Seconds = v.pipe(v.string(), v.transform(Number), v.number(SECONDS), v.minValue(0.05, SECONDS), v.maxValue(3600, SECONDS));
const PORT = "must be a port number (0-65535)";
const Port = v.pipe(v.string(), v.transform(Number), v.number(PORT), v.integer(PORT), v.minValue(0, PORT), v.maxValue(65535, PORT));

const EnvSchema = v.object({
  /** The Kubernetes API server, e.g. `https://k8s.example.com:6443` (a publicly trusted certificate: see docs/edge-cloudflare.md). */
  APPWATCH_KUBE_API_URL: v.pipe(v.string(), v.url("must be a URL such as https://k8s.example.com:6443"), v.regex(/^https?:\/\//, "must be http:// or https://")),
  /** A bearer token for the API server (a secret); none: anonymous. */
  APPWATCH_KUBE_TOKEN: v.optional(v.pipe(v.string(), v.trim(), v.nonEmpty("must not be empty when set"))),
  APPWATCH_NAMESPACE: v.optional(List, "flyte"),
  APPWATCH_BASE_DOMAIN: v.optional(v.string(), ""),
  APPWATCH_SCHEME: v.optional(v.picklist(["", "http", "https"], 'must be http, https or ""'), ""),
  APPWATCH_INGRESS_APPS_PORT: v.optional(Port, "0"),
  APPWATCH_SLOW_CONSUMER: v.optional(v.picklist(["coalesce", "drop", "disconnect"], "must be coalesce, drop or disconnect"), "coalesce"),
  APPWATCH_HEARTBEAT_SECONDS: v.optional(Seconds, "15"),
  APPWATCH_AUTH_TOKENS: v.optional(List, ""),
  APPWATCH_ALLOWED_ORIGINS: v.optional(List, ""),
  APPWATCH_LOG_LEVEL: v.optional(v.picklist(["debug", "info", "warn", "error"], "must be debug, info, warn or error"), "info"),
});

/** The Worker's settings. */
export interface CloudflareSettings {
  apiServer: string;
  token: string | undefined;
  /** One or more namespaces, or `["*"]` for all. */
  namespaces: string[];
  baseDomain: string;
  scheme: "" | "http" | "https";
  ingressAppsPort: number;
  slowConsumer: "coalesce" | "drop" | "disconnect";
  heartbeatSeconds: number;
  authTokens: string[];
  allowedOrigins: string[];
  logLevel: "debug" | "info" | "warn" | "error";
}

/** Reads the settings from the Worker's `env` (bindings that are not strings are ignored). */
export function settingsFromEnv(env: Record<string, unknown>): { ok: true; value: CloudflareSettings } | { ok: false; message: string } {
  const strings = Object.fromEntries(Object.entries(env).filter(([, x]) => typeof x === "string"));
  const r = v.safeParse(EnvSchema, strings);
  if (!r.success) {
    const first = r.issues[0];
    const key = first.path?.map((p) => String(p.key)).join(".") ?? "?";
    // A missing key's own message is valibot's "Invalid key: …": say what to set instead.
    return { ok: false, message: first.input === undefined ? `${key} is required` : `${key} ${first.message}` };
  }
  const e = r.output;
  return {
    ok: true,
    value: {
      apiServer: e.APPWATCH_KUBE_API_URL,
      token: e.APPWATCH_KUBE_TOKEN,
      namespaces: e.APPWATCH_NAMESPACE.length ? e.APPWATCH_NAMESPACE : ["flyte"],
      baseDomain: e.APPWATCH_BASE_DOMAIN,
      scheme: e.APPWATCH_SCHEME,
      ingressAppsPort: e.APPWATCH_INGRESS_APPS_PORT,
      slowConsumer: e.APPWATCH_SLOW_CONSUMER,
      heartbeatSeconds: e.APPWATCH_HEARTBEAT_SECONDS,
      authTokens: e.APPWATCH_AUTH_TOKENS,
      allowedOrigins: e.APPWATCH_ALLOWED_ORIGINS,
      logLevel: e.APPWATCH_LOG_LEVEL,
    },
  };
}
