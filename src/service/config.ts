/**
 * The settings of `appwatch serve`, read from four layers, each overriding the
 * one before: built-in defaults < the config file (`--config` or
 * `$APPWATCH_CONFIG`, YAML) < `APPWATCH_*` environment variables < flags.
 *
 * One table ({@link OPTIONS}) names every setting's file key, flag, environment
 * variable, default and help line; the help text, the flag parser and the
 * environment reader are all built from it. Every value is validated with
 * valibot, and every error names the key and where it came from:
 * `appwatch.yaml: port: …`, `APPWATCH_PORT: …`, `--port: …`.
 *
 * Auth tokens are secrets: they are never echoed in errors or logs, and they
 * can come from a file (`authTokensFile`, one token per line) so they need not
 * be in the environment or on the command line.
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseArgs } from "node:util";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import type { LogLevel } from "../log.ts";
import type { ServiceSettings } from "./server.ts";

/** Everything `appwatch serve` runs with: the service settings plus the log level. */
export interface AppwatchSettings extends ServiceSettings {
  logLevel: LogLevel;
}

/** Where a setting's value came from. */
export type SettingSource = "default" | "file" | "env" | "flag";

/** The result of {@link loadSettings}. */
export interface LoadedSettings {
  /** `help`: `--help` was given (print {@link SERVE_HELP}); `serve`: run the service. */
  command: "serve" | "help";
  settings: AppwatchSettings;
  /** The config file read, if any. */
  configFile: string | undefined;
  /** Where each setting came from (`authTokens` also covers `authTokensFile`). */
  sources: Record<SettingKey, SettingSource>;
}

/** A configuration mistake; `message` lists every problem, one per line, each naming its key and source. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.length === 1 ? problems[0]! : `invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.problems = problems;
  }
}

// ---------------------------------------------------------------------------------------------
// Value schemas: one per setting, applied to typed values (from YAML as is, from strings after
// conversion). Messages are phrased to follow "<source>: ".

const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
const SLOW_CONSUMER = ["coalesce", "drop", "disconnect"] as const;
const SCHEMES = ["", "http", "https"] as const;

const int = (min: number, max: number, what = `an integer from ${min} to ${max}`) =>
  v.pipe(v.number(`must be ${what}`), v.integer(`must be ${what}`), v.minValue(min, `must be ${what}`), v.maxValue(max, `must be ${what}`));
const port = (what = "a port number (0-65535; 0: any free port)") => int(0, 65535, what);
const seconds = (min: number, max: number) =>
  v.pipe(v.number(`must be a number of seconds (${min}-${max})`), v.minValue(min, `must be a number of seconds (${min}-${max})`), v.maxValue(max, `must be a number of seconds (${min}-${max})`));
const nonEmpty = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));

const NAMESPACE_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const Namespace = v.pipe(
  v.string("must be a string"),
  v.check((s) => s === "*" || (s.length <= 63 && NAMESPACE_RE.test(s)), "a namespace is a DNS label (at most 63 lowercase letters, digits, '-') or '*' for all"),
);
const Namespaces = v.pipe(
  v.array(Namespace, "must be a list of namespaces"),
  v.check((l) => !l.includes("*") || l.length === 1, "'*' (all namespaces) cannot be combined with other namespaces"),
);

/** An HTTP(S) origin as browsers send it: scheme://host[:port], nothing else. */
const Origin = v.pipe(
  v.string("must be a string"),
  v.check((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && u.origin === s;
    } catch {
      return false;
    }
  }, "an origin is scheme://host[:port] with no path or trailing slash, e.g. https://board.example.com"),
);

/** A bearer token. Messages never include the value. */
const Token = v.pipe(
  v.string("a token must be a string"),
  v.minLength(1, "a token must not be empty"),
  v.maxLength(4096, "a token must be at most 4096 characters"),
  v.regex(/^[\x21-\x7e]+$/, "a token must be printable ASCII without spaces"),
);

const VALUES = {
  port: port(),
  grpcPort: port(),
  host: nonEmpty,
  namespaces: Namespaces,
  sandbox: v.boolean("must be true or false"),
  sandboxPort: port(),
  logLevel: v.picklist(LOG_LEVELS, "must be debug, info, warn or error"),
  kubeconfig: nonEmpty,
  context: nonEmpty,
  baseDomain: v.pipe(
    v.string("must be a string"),
    v.regex(/^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)?$/, "must be a DNS domain such as apps.example.com (no scheme, port or path), or empty for no public URLs"),
  ),
  scheme: v.picklist(SCHEMES, 'must be http, https or "" (https)'),
  ingressAppsPort: port("a port number (0-65535; 0: none in public URLs)"),
  watchBufferSize: int(1, 1_000_000),
  slowConsumer: v.picklist(SLOW_CONSUMER, "must be coalesce, drop or disconnect"),
  authTokens: v.array(Token, "must be a list of tokens"),
  authTokensFile: nonEmpty,
  allowedOrigins: v.array(Origin, "must be a list of origins"),
  maxConnectionsPerClient: int(1, 1_000_000),
  maxMessageBytes: int(64, 16 * 1024 * 1024),
  heartbeatSeconds: seconds(0.05, 3600),
  pingSeconds: seconds(1, 3600),
  resumeWindow: int(0, 10_000_000),
  shutdownTimeoutSeconds: seconds(0, 3600),
  demoIntervalMs: int(0, 3_600_000),
} as const;

/** A setting's key (in the file, camelCase, as in Flyte's `internalApps`). */
export type FileKey = keyof typeof VALUES;
/** A key of {@link AppwatchSettings}. */
export type SettingKey = Exclude<FileKey, "authTokensFile">;

/** The fully resolved settings, validated once more as a whole. */
const SettingsSchema = v.strictObject({
  port: VALUES.port,
  grpcPort: v.optional(VALUES.grpcPort),
  host: VALUES.host,
  namespaces: VALUES.namespaces,
  sandbox: VALUES.sandbox,
  sandboxPort: v.optional(VALUES.sandboxPort),
  logLevel: VALUES.logLevel,
  kubeconfig: v.optional(VALUES.kubeconfig),
  context: v.optional(VALUES.context),
  baseDomain: VALUES.baseDomain,
  scheme: VALUES.scheme,
  ingressAppsPort: VALUES.ingressAppsPort,
  watchBufferSize: VALUES.watchBufferSize,
  slowConsumer: VALUES.slowConsumer,
  authTokens: VALUES.authTokens,
  allowedOrigins: VALUES.allowedOrigins,
  maxConnectionsPerClient: VALUES.maxConnectionsPerClient,
  maxMessageBytes: VALUES.maxMessageBytes,
  heartbeatSeconds: VALUES.heartbeatSeconds,
  pingSeconds: VALUES.pingSeconds,
  resumeWindow: VALUES.resumeWindow,
  shutdownTimeoutSeconds: VALUES.shutdownTimeoutSeconds,
  demoIntervalMs: VALUES.demoIntervalMs,
});
// Compile-time: the schema's output is exactly what startService takes (plus logLevel).
const _sameShape: (s: v.InferOutput<typeof SettingsSchema>) => AppwatchSettings = (s) => s;
void _sameShape;

/** The defaults (documented in `--help`). */
export const DEFAULT_SETTINGS: Readonly<AppwatchSettings> = Object.freeze({
  port: 8080,
  host: "0.0.0.0",
  namespaces: [],
  sandbox: false,
  logLevel: "info",
  baseDomain: "",
  scheme: "",
  ingressAppsPort: 0,
  watchBufferSize: 100,
  slowConsumer: "coalesce",
  authTokens: [],
  allowedOrigins: [],
  maxConnectionsPerClient: 64,
  maxMessageBytes: 4096,
  heartbeatSeconds: 15,
  pingSeconds: 30,
  resumeWindow: 10_000,
  shutdownTimeoutSeconds: 10,
  demoIntervalMs: 2000,
} satisfies AppwatchSettings);

// ---------------------------------------------------------------------------------------------
// The option table.

type Kind = "int" | "number" | "bool" | "string" | "list";

/** One setting as the help text, the flag parser and the environment reader see it. */
export interface OptionSpec {
  key: FileKey;
  kind: Kind;
  /** Long flag without dashes. */
  flag: string;
  short?: string;
  /** Placeholder of the flag's value (none: a boolean flag). */
  arg?: string;
  env: string;
  /** The default as shown in the help. */
  shown: string;
  help: string;
  section: string;
  /** A flag that may be repeated (values are also comma-split). */
  repeatable?: boolean;
  /** Never echo the value. */
  secret?: boolean;
}

const S_SERVER = "Server";
const S_CLUSTER = "Cluster (kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster)";
const S_APPS = "Flyte apps (Flyte's internalApps keys)";
const S_STREAMS = "Streams";
const S_SECURITY = "Security";
const S_SANDBOX = "Sandbox";

/** Every setting, in help order. */
export const OPTIONS: readonly OptionSpec[] = [
  { key: "host", kind: "string", flag: "host", arg: "<addr>", env: "APPWATCH_HOST", shown: "0.0.0.0 (all IPv4 interfaces)", help: "address to listen on; 127.0.0.1 for this machine only, :: for IPv6", section: S_SERVER },
  { key: "port", kind: "int", flag: "port", arg: "<port>", env: "APPWATCH_PORT", shown: "8080", help: "port to listen on (0: any free port)", section: S_SERVER },
  { key: "grpcPort", kind: "int", flag: "grpc-port", arg: "<port>", env: "APPWATCH_GRPC_PORT", shown: "off", help: "also serve Flyte's AppService over gRPC (HTTP/2 cleartext) on this port (0: any free port)", section: S_SERVER },
  { key: "logLevel", kind: "string", flag: "log-level", arg: "<level>", env: "APPWATCH_LOG_LEVEL", shown: "info", help: "debug | info | warn | error (logs are JSON lines on stderr)", section: S_SERVER },
  { key: "shutdownTimeoutSeconds", kind: "number", flag: "shutdown-timeout", arg: "<sec>", env: "APPWATCH_SHUTDOWN_TIMEOUT", shown: "10", help: "on SIGTERM/SIGINT, how long to wait for streams to close", section: S_SERVER },
  { key: "kubeconfig", kind: "string", flag: "kubeconfig", arg: "<path>", env: "APPWATCH_KUBECONFIG", shown: "$KUBECONFIG, else ~/.kube/config, else in-cluster", help: "kubeconfig file", section: S_CLUSTER },
  { key: "context", kind: "string", flag: "context", arg: "<name>", env: "APPWATCH_CONTEXT", shown: "the kubeconfig's current-context", help: "kubeconfig context", section: S_CLUSTER },
  { key: "namespaces", kind: "list", flag: "namespace", short: "n", arg: "<ns>", env: "APPWATCH_NAMESPACE", shown: "the context's namespace, else flyte", help: "namespace(s) to watch; repeat or comma-separate; '*' (or --all-namespaces) for all", section: S_CLUSTER, repeatable: true },
  { key: "baseDomain", kind: "string", flag: "base-domain", arg: "<domain>", env: "APPWATCH_BASE_DOMAIN", shown: '"" (no public URLs)', help: "public URL host suffix: <app>-<project>-<domain>.<base-domain>", section: S_APPS },
  { key: "scheme", kind: "string", flag: "scheme", arg: "<scheme>", env: "APPWATCH_SCHEME", shown: '"" (https)', help: "public URL scheme: http | https", section: S_APPS },
  { key: "ingressAppsPort", kind: "int", flag: "ingress-apps-port", arg: "<port>", env: "APPWATCH_INGRESS_APPS_PORT", shown: "0 (none)", help: "port appended to public URLs", section: S_APPS },
  { key: "watchBufferSize", kind: "int", flag: "watch-buffer-size", arg: "<n>", env: "APPWATCH_WATCH_BUFFER_SIZE", shown: "100", help: "events buffered per subscriber", section: S_APPS },
  { key: "slowConsumer", kind: "string", flag: "slow-consumer", arg: "<policy>", env: "APPWATCH_SLOW_CONSUMER", shown: "coalesce", help: "when a subscriber's buffer is full: coalesce | drop | disconnect", section: S_STREAMS },
  { key: "heartbeatSeconds", kind: "number", flag: "heartbeat-seconds", arg: "<sec>", env: "APPWATCH_HEARTBEAT_SECONDS", shown: "15", help: "heartbeat frame period", section: S_STREAMS },
  { key: "pingSeconds", kind: "number", flag: "ping-seconds", arg: "<sec>", env: "APPWATCH_PING_SECONDS", shown: "30", help: "WebSocket ping period; a peer that stops answering is closed", section: S_STREAMS },
  { key: "resumeWindow", kind: "int", flag: "resume-window", arg: "<n>", env: "APPWATCH_RESUME_WINDOW", shown: "10000", help: "app changes kept for resuming streams (0: no resume)", section: S_STREAMS },
  { key: "maxConnectionsPerClient", kind: "int", flag: "max-connections-per-client", arg: "<n>", env: "APPWATCH_MAX_CONNECTIONS_PER_CLIENT", shown: "64", help: "open streams per client address", section: S_STREAMS },
  { key: "maxMessageBytes", kind: "int", flag: "max-message-bytes", arg: "<n>", env: "APPWATCH_MAX_MESSAGE_BYTES", shown: "4096", help: "largest WebSocket message a client may send", section: S_STREAMS },
  { key: "authTokensFile", kind: "string", flag: "auth-tokens-file", arg: "<path>", env: "APPWATCH_AUTH_TOKENS_FILE", shown: "none", help: "bearer tokens clients must present, one per line (# comments)", section: S_SECURITY },
  { key: "authTokens", kind: "list", flag: "", env: "APPWATCH_AUTH_TOKENS", shown: "none (no auth)", help: "bearer tokens, comma-separated (environment and file only: never on the command line)", section: S_SECURITY, secret: true },
  { key: "allowedOrigins", kind: "list", flag: "allowed-origin", arg: "<origin>", env: "APPWATCH_ALLOWED_ORIGINS", shown: "any", help: "browser Origin allowed on /v1/*; repeat or comma-separate", section: S_SECURITY, repeatable: true },
  { key: "sandbox", kind: "bool", flag: "sandbox", env: "APPWATCH_SANDBOX", shown: "false (but used, with a warning, without a cluster)", help: "serve demo apps from the built-in sandbox API server", section: S_SANDBOX },
  { key: "sandboxPort", kind: "int", flag: "sandbox-port", arg: "<port>", env: "APPWATCH_SANDBOX_PORT", shown: "any free port", help: "port of the sandbox API server", section: S_SANDBOX },
  { key: "demoIntervalMs", kind: "int", flag: "demo-interval-ms", arg: "<ms>", env: "APPWATCH_DEMO_INTERVAL_MS", shown: "2000", help: "sandbox: ms between demo app changes (0: none)", section: S_SANDBOX },
];

const BY_KEY = new Map(OPTIONS.map((o) => [o.key, o]));
const APPS_KEYS = ["baseDomain", "scheme", "ingressAppsPort", "watchBufferSize"] as const;
/** Environment variable naming the config file. */
export const CONFIG_ENV = "APPWATCH_CONFIG";

// ---------------------------------------------------------------------------------------------
// Help.

function helpLines(): string {
  const out: string[] = [];
  let section = "";
  const indent = " ".repeat(34);
  /** Packs `parts` (joined by `sep`) into lines that end by column 100. */
  const pack = (parts: string[], sep: string): string[] => {
    const lines: string[] = [];
    let line = "";
    for (const part of parts) {
      if (line && indent.length + line.length + sep.length + part.length > 98) { // room for "(" and ")"
        lines.push(line + sep.trimEnd());
        line = part;
      } else line = line ? `${line}${sep}${part}` : part;
    }
    if (line) lines.push(line);
    return lines;
  };
  const row = (left: string, text: string, meta: string[]) => {
    const body = [...pack(text.split(" "), " "), ...pack(meta, "; ").map((l, i, all) => `${i === 0 ? "(" : " "}${l}${i === all.length - 1 ? ")" : ""}`)];
    if (left.length < 32) out.push(`  ${left.padEnd(32)}${body.shift()}`);
    else out.push(`  ${left}`);
    for (const l of body) out.push(`${indent}${l}`);
  };
  for (const o of OPTIONS) {
    if (o.section !== section) {
      section = o.section;
      out.push("", `${section}:`);
    }
    const left = o.flag ? `${o.short ? `-${o.short}, ` : ""}--${o.flag}${o.arg ? ` ${o.arg}` : ""}` : `${o.env}`;
    row(left, o.help, [`default: ${o.shown}`, o.flag ? `env ${o.env}` : "", `file: ${o.key}`].filter(Boolean));
    if (o.key === "namespaces") row("-A, --all-namespaces", "watch every namespace (same as -n '*')", ["flag only"]);
  }
  return out.join("\n");
}

/** `appwatch serve --help` (also `appwatch --help`). */
export const SERVE_HELP = `appwatch — watch Flyte apps (Knative Services) and serve their changes

Usage: appwatch [serve] [options]      run the service (the default command)
       appwatch watch [options]        stream changes from a running service (appwatch watch --help)
       appwatch events [options]       print raw KService events (appwatch events --help)

The service streams app changes over WebSocket and Server-Sent Events
(GET /v1/watch), lists apps (GET /v1/apps), and answers /healthz, /readyz and
/metrics. Logs are JSON lines on stderr.

Settings, each layer overriding the one before: defaults < config file
(YAML) < APPWATCH_* environment variables < flags. Every option below can be
set in the file under its "file:" key (camelCase); Flyte's nesting
"internalApps: {baseDomain, scheme, ingressAppsPort, watchBufferSize}" is
accepted too. Unknown keys are errors. An empty environment variable counts
as unset.

  --config <path>                 config file (env ${CONFIG_ENV}; default: none)
  -h, --help                      show this help
${helpLines()}

Examples:
  appwatch                                  # the current kubectl cluster; sandbox demo without one
  appwatch --sandbox --port 9000            # demo apps on http://localhost:9000
  appwatch -n flyte --base-domain apps.example.com --auth-tokens-file /etc/appwatch/tokens
  APPWATCH_CONFIG=/etc/appwatch/appwatch.yaml appwatch serve
`;

// ---------------------------------------------------------------------------------------------
// Reading one layer.

type Layer = Partial<Record<FileKey, unknown>>;
type Problems = string[];

function describe(value: unknown): string {
  const s = JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Validates one value; pushes `<label>: <message>` problems. */
function check(key: FileKey, value: unknown, label: string, problems: Problems): unknown {
  const r = v.safeParse(VALUES[key], value);
  if (r.success) return r.output;
  const secret = BY_KEY.get(key)?.secret ?? false;
  const seen = new Set<string>();
  for (const issue of r.issues) {
    const index = issue.path?.find((p) => typeof p.key === "number")?.key;
    const where = typeof index === "number" && Array.isArray(value) ? (secret ? `: item ${index + 1}` : `: ${describe(value[index])}`) : "";
    const got = secret || where || value === undefined ? "" : `; got ${describe(value)}`;
    const line = `${label}${where}: ${issue.message}${got}`;
    if (!seen.has(line)) problems.push(line);
    seen.add(line);
  }
  return undefined;
}

function splitList(s: string): string[] {
  return s.split(",").map((x) => x.trim()).filter(Boolean);
}

/** A string (from the environment or a flag) → the typed value to validate. */
function fromString(kind: Kind, s: string): unknown {
  switch (kind) {
    case "int":
    case "number": {
      const t = s.trim();
      return /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(t) ? Number(t) : s;
    }
    case "bool": {
      const t = s.trim().toLowerCase();
      return ["true", "1", "yes", "on"].includes(t) ? true : ["false", "0", "no", "off"].includes(t) ? false : s;
    }
    case "list":
      return splitList(s);
    case "string":
      return s;
  }
}

/** Parses the lines of an auth tokens file: one token per line, blank lines and `#` comments ignored. */
export function parseTokenLines(text: string): string[] {
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
}

/** Suggests the known key a mistyped one was probably meant to be. */
function suggestion(key: string, known: readonly string[]): string {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, "");
  const hit = known.find((k) => norm(k) === norm(key)) ?? (norm(key) === "namespace" ? "namespaces" : undefined);
  return hit ? ` (did you mean ${hit}?)` : "";
}

const FILE_KEYS = [...Object.keys(VALUES), "internalApps"];

/** Strict schema of the config file (after list strings are split); unknown keys are reported before it runs. */
const FileSchema = v.strictObject({
  ...Object.fromEntries(Object.entries(VALUES).map(([k, s]) => [k, v.optional(s)])) as { [K in FileKey]: v.OptionalSchema<(typeof VALUES)[K], undefined> },
  internalApps: v.optional(v.strictObject({
    baseDomain: v.optional(VALUES.baseDomain),
    scheme: v.optional(VALUES.scheme),
    ingressAppsPort: v.optional(VALUES.ingressAppsPort),
    watchBufferSize: v.optional(VALUES.watchBufferSize),
  })),
});

function isMapping(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function readFileLayer(path: string, text: string, problems: Problems): Layer {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    problems.push(`${path}: not valid YAML: ${(err as Error).message.split("\n")[0]}`);
    return {};
  }
  if (doc === null || doc === undefined) return {};
  if (!isMapping(doc)) {
    problems.push(`${path}: must be a mapping of settings (key: value), not ${Array.isArray(doc) ? "a list" : typeof doc}`);
    return {};
  }
  const before = problems.length;
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!FILE_KEYS.includes(key)) {
      problems.push(`${path}: ${key}: is not a known key${suggestion(key, FILE_KEYS)}`);
      continue;
    }
    raw[key] = value;
  }
  if (raw.internalApps !== undefined) {
    if (!isMapping(raw.internalApps)) {
      problems.push(`${path}: internalApps: must be a mapping (baseDomain, scheme, ingressAppsPort, watchBufferSize)`);
      delete raw.internalApps;
    } else {
      const nested: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(raw.internalApps)) {
        if (!(APPS_KEYS as readonly string[]).includes(key)) {
          problems.push(`${path}: internalApps.${key}: is not a known key; appwatch reads baseDomain, scheme, ingressAppsPort and watchBufferSize there${suggestion(key, APPS_KEYS)}`);
        } else if (raw[key] !== undefined) {
          problems.push(`${path}: internalApps.${key}: also set at the top level as ${key}; set it once`);
        } else nested[key] = value;
      }
      raw.internalApps = nested;
    }
  }
  // YAML scalars for list keys: "a,b" is the list [a, b].
  for (const key of ["namespaces", "authTokens", "allowedOrigins"] as const) {
    if (typeof raw[key] === "string") raw[key] = splitList(raw[key]);
  }
  const layer: Layer = {};
  const label = (key: string) => `${path}: ${key}`;
  for (const [key, value] of Object.entries(raw)) {
    if (key === "internalApps") {
      for (const [k, val] of Object.entries(value as Record<string, unknown>)) {
        const out = check(k as FileKey, val, label(`internalApps.${k}`), problems);
        if (out !== undefined) layer[k as FileKey] = out;
      }
      continue;
    }
    const out = check(key as FileKey, value, label(key), problems);
    if (out !== undefined) layer[key as FileKey] = out;
  }
  // The whole file once more through the strict schema (a safety net: it agrees with the above).
  if (problems.length === before) {
    const r = v.safeParse(FileSchema, raw);
    if (!r.success) for (const i of r.issues) problems.push(`${path}: ${i.path?.map((p) => String(p.key)).join(".") ?? ""}: ${i.message}`);
  }
  return layer;
}

function readEnvLayer(env: Record<string, string | undefined>, problems: Problems): Layer {
  const layer: Layer = {};
  for (const o of OPTIONS) {
    const raw = env[o.env];
    if (raw === undefined || raw.trim() === "") continue;
    const out = check(o.key, fromString(o.kind, raw), o.env, problems);
    if (out !== undefined) layer[o.key] = out;
  }
  return layer;
}

interface FlagResult {
  layer: Layer;
  help: boolean;
  config: string | undefined;
}

function readFlagLayer(argv: string[], problems: Problems): FlagResult {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {
    help: { type: "boolean", short: "h" },
    config: { type: "string" },
    "all-namespaces": { type: "boolean", short: "A" },
  };
  for (const o of OPTIONS) {
    if (!o.flag) continue;
    options[o.flag] = { type: o.kind === "bool" ? "boolean" : "string", ...(o.short ? { short: o.short } : {}), ...(o.repeatable ? { multiple: true } : {}) };
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    const msg = (err as Error).message;
    problems.push(/--auth-tokens?\b/.test(msg) && !/--auth-tokens-file/.test(msg)
      ? `${msg} (tokens are never taken from the command line: use --auth-tokens-file or APPWATCH_AUTH_TOKENS)`
      : msg);
    return { layer: {}, help: false, config: undefined };
  }
  const layer: Layer = {};
  for (const o of OPTIONS) {
    if (!o.flag) continue;
    const val = values[o.flag];
    if (val === undefined) continue;
    const input = o.kind === "bool" ? val : Array.isArray(val) ? val.flatMap((x) => splitList(String(x))) : fromString(o.kind, String(val));
    const out = check(o.key, input, `--${o.flag}`, problems);
    if (out !== undefined) layer[o.key] = out;
  }
  if (values["all-namespaces"]) {
    if (layer.namespaces !== undefined && !(Array.isArray(layer.namespaces) && layer.namespaces.join() === "*")) {
      problems.push("--all-namespaces: cannot be combined with --namespace");
    }
    layer.namespaces = ["*"];
  }
  const config = values.config as string | undefined;
  if (config !== undefined && config.trim() === "") problems.push("--config: must not be empty");
  return { layer, help: values.help === true, config: config?.trim() || undefined };
}

// ---------------------------------------------------------------------------------------------

/** Options of {@link loadSettings}. */
export interface LoadSettingsOptions {
  /** Arguments after the program (a leading `serve` is skipped). */
  argv: string[];
  env: Record<string, string | undefined>;
  /** Reads a file as UTF-8 (default: `readFileSync`); tests pass their own. */
  readFile?: (path: string) => string;
}

/**
 * Reads the settings of `appwatch serve`: defaults < config file < environment < flags.
 * Throws a {@link ConfigError} listing every problem, each naming its key and source.
 */
export function loadSettings(options: LoadSettingsOptions): LoadedSettings {
  const argv = options.argv[0] === "serve" ? options.argv.slice(1) : options.argv;
  const env = options.env;
  const readFile = options.readFile ?? ((p: string) => readFileSync(p, "utf8"));
  const problems: Problems = [];

  const flagProblems: Problems = []; // reported after the file's and the environment's, in layer order
  const flags = readFlagLayer(argv, flagProblems);
  if (flags.help) {
    return { command: "help", settings: { ...DEFAULT_SETTINGS, namespaces: [], authTokens: [], allowedOrigins: [] }, configFile: undefined, sources: defaultSources() };
  }
  const envConfig = env[CONFIG_ENV]?.trim() || undefined;
  const configFile = flags.config ?? envConfig;
  const configLabel = flags.config !== undefined ? "--config" : CONFIG_ENV;

  let fileLayer: Layer = {};
  if (configFile !== undefined) {
    let text: string | undefined;
    try {
      text = readFile(configFile);
    } catch (err) {
      problems.push(`${configLabel}: cannot read the config file ${configFile}: ${errorText(err)}`);
    }
    if (text !== undefined) fileLayer = readFileLayer(configFile, text, problems);
  }
  const envLayer = readEnvLayer(env, problems);

  // Token files: read per layer; the highest layer that names tokens (list or file) wins.
  const tokensOf = (layer: Layer, fileLabel: string, base: string | undefined): string[] | undefined => {
    if (layer.authTokens === undefined && layer.authTokensFile === undefined) return undefined;
    const tokens = [...((layer.authTokens as string[] | undefined) ?? [])];
    const path = layer.authTokensFile as string | undefined;
    if (path !== undefined) {
      const full = base !== undefined && !isAbsolute(path) ? resolve(dirname(base), path) : path;
      let text: string | undefined;
      try {
        text = readFile(full);
      } catch (err) {
        problems.push(`${fileLabel}: cannot read the auth tokens file ${full}: ${errorText(err)}`);
      }
      if (text !== undefined) {
        const fromFile = parseTokenLines(text);
        if (fromFile.length === 0) problems.push(`${fileLabel}: the auth tokens file ${full} has no tokens (one per line); refusing to run without auth`);
        fromFile.forEach((t, i) => {
          const r = v.safeParse(Token, t);
          if (!r.success) problems.push(`${fileLabel}: ${full}: token ${i + 1}: ${r.issues[0]!.message}`);
        });
        tokens.push(...fromFile);
      }
    }
    return tokens;
  };
  const fileTokens = tokensOf(fileLayer, configFile !== undefined ? `${configFile}: authTokensFile` : "", configFile);
  const envTokens = tokensOf(envLayer, "APPWATCH_AUTH_TOKENS_FILE", undefined);
  const flagTokens = tokensOf(flags.layer, "--auth-tokens-file", undefined);
  problems.push(...flagProblems);

  if (problems.length > 0) throw new ConfigError(problems);

  const sources = defaultSources();
  const merged: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  const apply = (layer: Layer, source: SettingSource, tokens: string[] | undefined) => {
    for (const [key, value] of Object.entries(layer)) {
      if (key === "authTokens" || key === "authTokensFile") continue;
      merged[key] = value;
      sources[key as SettingKey] = source;
    }
    if (tokens !== undefined) {
      merged.authTokens = tokens;
      sources.authTokens = source;
    }
  };
  apply(fileLayer, "file", fileTokens);
  apply(envLayer, "env", envTokens);
  apply(flags.layer, "flag", flagTokens);
  merged.authTokens = [...new Set(merged.authTokens as string[])];

  const r = v.safeParse(SettingsSchema, merged);
  if (!r.success) {
    // Not reachable when every layer validated; kept so a schema mismatch is never silent.
    throw new ConfigError(r.issues.map((i) => `${i.path?.map((p) => String(p.key)).join(".") ?? "settings"}: ${i.message}`));
  }
  return { command: "serve", settings: r.output, configFile, sources };
}

function defaultSources(): Record<SettingKey, SettingSource> {
  return Object.fromEntries(Object.keys(SettingsSchema.entries).map((k) => [k, "default"])) as Record<SettingKey, SettingSource>;
}

function errorText(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code === "ENOENT" ? "no such file" : e.code === "EACCES" ? "permission denied" : e.message ?? String(err);
}

/** The settings as they may be logged: everything but the tokens (their count instead). */
export function describeSettings(loaded: LoadedSettings): Record<string, unknown> {
  const { authTokens, ...rest } = loaded.settings;
  const nonDefault = Object.entries(loaded.sources).filter(([, s]) => s !== "default").map(([k, s]) => `${k}=${s}`);
  return { ...rest, auth: authTokens.length > 0 ? `${authTokens.length} bearer token(s)` : "off", configFile: loaded.configFile, from: nonDefault.join(" ") };
}
