/**
 * Every setting of appwatch, declared once: {@link SETTINGS} gives each one its key, type and
 * limits, default, flag, environment variable, config-file key, help line and the subcommands
 * that read it. Everything else is derived from it, by the other files of this folder: the
 * TypeScript types (below: {@link SettingsOf}, {@link ServiceSettings}), the valibot schemas
 * (`schemas.ts`), the environment reader (`env.ts`), the config-file reader (`file.ts`), the
 * flag parser (`flags.ts`), the layering (`load.ts`) and `--help` (`help.ts`).
 *
 * The table is plain data (`as const`) so its types can be derived and still be explicit enough
 * for JSR's no-slow-types rule. Its one import is the Flyte layer's defaults of Flyte's
 * `internalApps` keys (`DEFAULT_APPS_CONFIG`), so the CLI and a library user of `AppK8sClient` get
 * the same ones from one declaration.
 * @module
 */
import { DEFAULT_APPS_CONFIG } from "../../flyte/model.ts";

/** The subcommands that read settings. */
export type Command = "serve" | "watch" | "events";

/** What a setting's value is; each maps to one valibot schema (`valueSchema` in `schemas.ts`) and one TypeScript type. */
export type SettingType =
  | "int"
  | "seconds"
  | "bool"
  | "string"
  | "enum"
  | "domain"
  | "namespaces"
  | "tokens"
  | "token"
  | "origins"
  | "url"
  | "name"
  | "text"
  | "apiServer"
  | "apiToken";

/** One row of {@link SETTINGS}. */
export interface SettingDef {
  /** The key in the parsed settings and, with `file`, in the config file (camelCase, as in Flyte's `internalApps`). */
  readonly key: string;
  readonly type: SettingType;
  /** Limits of `int`, `seconds` (no `max`: unbounded) and `text` (`max` only). */
  readonly min?: number;
  readonly max?: number;
  /** `int`: what the number is, for messages ("a port number (…)"). */
  readonly what?: string;
  /** `enum`: the values. */
  readonly values?: readonly string[];
  /** `enum`: the message instead of "must be a, b or c". */
  readonly message?: string;
  /** The default; none: the setting is optional (absent unless set). */
  readonly default?: string | number | boolean | readonly string[];
  readonly commands: readonly Command[];
  /** Long flag without dashes (none: not on the command line). A list flag may be repeated. */
  readonly flag?: string;
  readonly short?: string;
  /** Placeholder of the flag's value; none for a boolean flag. */
  readonly arg?: string;
  /** A boolean flag that sets `false` (`--no-snapshot`). */
  readonly negate?: boolean;
  readonly env?: string;
  /** Settable in the config file under `key`. */
  readonly file?: boolean;
  /** Also accepted nested under Flyte's `internalApps:` in the config file. */
  readonly internalApps?: boolean;
  /** The default as the help shows it (else the default itself). */
  readonly shown?: string;
  readonly help: string;
  /** A heading of {@link SECTIONS}. */
  readonly section: string;
  /** Never echo the value (in errors or logs). */
  readonly secret?: boolean;
  /** A flag that sets the setting to `value` (`-A, --all-namespaces` for `-n '*'`). */
  readonly all?: { readonly flag: string; readonly short: string; readonly value: readonly string[]; readonly help: string };
  /** Not a setting of its own: a file whose lines are added to the `into` setting (`authTokensFile` → `authTokens`). */
  readonly into?: string;
  /**
   * Read by the Cloudflare Worker from its bindings and by no subcommand (`commands: []`): the
   * API server and its token, which `serve` finds in a kubeconfig instead ({@link workerRows}).
   */
  readonly worker?: true;
  /** Must be set: there is no default, and leaving it out is an error (`worker` rows only). */
  readonly required?: true;
}

/** The namespace watched when none is set and the cluster (its kubeconfig context) names none. */
export const FALLBACK_NAMESPACE = "flyte";

/** Default of `appwatch watch --url`. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

const S_SERVER = "Server";
const S_CLUSTER = "Cluster (kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster)";
const S_APPS = "Flyte apps (Flyte's internalApps keys)";
const S_STREAMS = "Streams";
const S_SECURITY = "Security";
const S_SANDBOX = "Sandbox";
const S_KUBE_WATCH = "Watch";
const S_SERVICE = "Server";
const S_WHAT = "What to watch (default: every app the service sees)";
const S_OUTPUT = "Output";
const S_LOGS = "Logs";
const S_WORKER = "Cloudflare Worker";

/** Help headings, in the order `--help` shows them (each command shows those it has settings in). */
export const SECTIONS: readonly string[] = [S_SERVER, S_CLUSTER, S_APPS, S_STREAMS, S_SECURITY, S_SANDBOX, S_KUBE_WATCH, S_WHAT, S_OUTPUT, S_LOGS, S_WORKER];

const PORT = "a port number (0-65535; 0: any free port)";

/** Every setting, in help order within its section. */
export const SETTINGS = [
  // serve: the service itself.
  // Loopback by default: with no auth, every interface would show every app to the network (issue 24).
  // The image and deploy/ say 0.0.0.0 themselves (Dockerfile: APPWATCH_HOST; deploy/deployment.yaml: --host).
  { key: "host", type: "string", default: "127.0.0.1", commands: ["serve"], flag: "host", arg: "<addr>", env: "APPWATCH_HOST", file: true, shown: "127.0.0.1 (this machine only)", help: "address to listen on; 0.0.0.0 (or ::) for every interface: then turn auth on, or a warning says so", section: S_SERVER },
  { key: "port", type: "int", min: 0, max: 65535, what: PORT, default: 8080, commands: ["serve"], flag: "port", arg: "<port>", env: "APPWATCH_PORT", file: true, help: "port to listen on (0: any free port)", section: S_SERVER },
  { key: "grpcPort", type: "int", min: 0, max: 65535, what: PORT, commands: ["serve"], flag: "grpc-port", arg: "<port>", env: "APPWATCH_GRPC_PORT", file: true, shown: "off", help: "also serve Flyte's AppService over gRPC (HTTP/2 cleartext) on this port (0: any free port)", section: S_SERVER },
  { key: "shutdownTimeoutSeconds", type: "seconds", min: 0, max: 3600, default: 10, commands: ["serve"], flag: "shutdown-timeout", arg: "<sec>", env: "APPWATCH_SHUTDOWN_TIMEOUT", file: true, help: "on SIGTERM/SIGINT, how long to wait for streams to close", section: S_SERVER },
  // serve and events: the cluster to watch.
  { key: "kubeconfig", type: "string", commands: ["serve", "events"], flag: "kubeconfig", arg: "<path>", env: "APPWATCH_KUBECONFIG", file: true, shown: "$KUBECONFIG, else ~/.kube/config, else in-cluster", help: "kubeconfig file", section: S_CLUSTER },
  { key: "context", type: "string", commands: ["serve", "events"], flag: "context", arg: "<name>", env: "APPWATCH_CONTEXT", file: true, shown: "the kubeconfig's current-context", help: "kubeconfig context", section: S_CLUSTER },
  {
    key: "namespaces", type: "namespaces", default: [], commands: ["serve", "events"], flag: "namespace", short: "n", arg: "<ns>", env: "APPWATCH_NAMESPACE", file: true,
    shown: `the context's namespace, else ${FALLBACK_NAMESPACE}`, help: "namespace(s) to watch; repeat or comma-separate; '*' (or --all-namespaces) for all", section: S_CLUSTER,
    all: { flag: "all-namespaces", short: "A", value: ["*"], help: "watch every namespace (same as -n '*')" },
  },
  // serve: the cluster's identity in Flyte's terms (common.ClusterIdentifier); unnamed by default, as Flyte's data plane.
  {
    key: "clusterName", type: "name", commands: ["serve"], flag: "cluster-name", arg: "<name>", env: "APPWATCH_CLUSTER_NAME", file: true, shown: "none (unnamed)", section: S_CLUSTER,
    help: "this cluster's name: each App's status.assignedCluster, the cluster_id target, and resume tokens name it",
  },
  { key: "clusterOrg", type: "name", commands: ["serve"], flag: "cluster-org", arg: "<org>", env: "APPWATCH_CLUSTER_ORG", file: true, shown: "none", help: "the organization of --cluster-name (cluster_id.organization)", section: S_CLUSTER },
  // serve: Flyte's app settings and the streams.
  { key: "baseDomain", type: "domain", default: DEFAULT_APPS_CONFIG.baseDomain, commands: ["serve"], flag: "base-domain", arg: "<domain>", env: "APPWATCH_BASE_DOMAIN", file: true, internalApps: true, shown: '"" (no public URLs)', help: "public URL host suffix: <app>-<project>-<domain>.<base-domain>", section: S_APPS },
  { key: "scheme", type: "enum", values: ["", "http", "https"], message: 'must be http, https or "" (https)', default: DEFAULT_APPS_CONFIG.scheme, commands: ["serve"], flag: "scheme", arg: "<scheme>", env: "APPWATCH_SCHEME", file: true, internalApps: true, shown: '"" (https)', help: "public URL scheme: http | https", section: S_APPS },
  { key: "ingressAppsPort", type: "int", min: 0, max: 65535, what: "a port number (0-65535; 0: none in public URLs)", default: DEFAULT_APPS_CONFIG.ingressAppsPort, commands: ["serve"], flag: "ingress-apps-port", arg: "<port>", env: "APPWATCH_INGRESS_APPS_PORT", file: true, internalApps: true, shown: "0 (none)", help: "port appended to public URLs", section: S_APPS },
  { key: "watchBufferSize", type: "int", min: 1, max: 1_000_000, default: DEFAULT_APPS_CONFIG.watchBufferSize, commands: ["serve"], flag: "watch-buffer-size", arg: "<n>", env: "APPWATCH_WATCH_BUFFER_SIZE", file: true, internalApps: true, help: "events buffered per subscriber", section: S_APPS },
  { key: "slowConsumer", type: "enum", values: ["coalesce", "drop", "disconnect"], default: "coalesce", commands: ["serve"], flag: "slow-consumer", arg: "<policy>", env: "APPWATCH_SLOW_CONSUMER", file: true, help: "when a subscriber's buffer is full: coalesce | drop | disconnect", section: S_STREAMS },
  { key: "heartbeatSeconds", type: "seconds", min: 0.05, max: 3600, default: 15, commands: ["serve"], flag: "heartbeat-seconds", arg: "<sec>", env: "APPWATCH_HEARTBEAT_SECONDS", file: true, help: "heartbeat frame period", section: S_STREAMS },
  { key: "pingSeconds", type: "seconds", min: 1, max: 3600, default: 30, commands: ["serve"], flag: "ping-seconds", arg: "<sec>", env: "APPWATCH_PING_SECONDS", file: true, help: "WebSocket ping period; a peer that stops answering is closed", section: S_STREAMS },
  { key: "resumeWindow", type: "int", min: 0, max: 10_000_000, default: 10_000, commands: ["serve"], flag: "resume-window", arg: "<n>", env: "APPWATCH_RESUME_WINDOW", file: true, help: "app changes kept for resuming streams (0: no resume)", section: S_STREAMS },
  { key: "maxConnectionsPerClient", type: "int", min: 1, max: 1_000_000, default: 64, commands: ["serve"], flag: "max-connections-per-client", arg: "<n>", env: "APPWATCH_MAX_CONNECTIONS_PER_CLIENT", file: true, help: "open streams per client address", section: S_STREAMS },
  { key: "streamBufferBytes", type: "int", min: 16 * 1024, max: 64 * 1024 * 1024, default: 1024 * 1024, commands: ["serve"], flag: "stream-buffer-bytes", arg: "<n>", env: "APPWATCH_STREAM_BUFFER_BYTES", file: true, help: "bytes one stream may hold for a client that is not reading (WebSocket, SSE, Connect Watch); past it the slow-consumer policy applies", section: S_STREAMS },
  { key: "maxMessageBytes", type: "int", min: 64, max: 16 * 1024 * 1024, default: 4096, commands: ["serve"], flag: "max-message-bytes", arg: "<n>", env: "APPWATCH_MAX_MESSAGE_BYTES", file: true, help: "largest WebSocket message a client may send", section: S_STREAMS },
  { key: "authTokensFile", type: "string", into: "authTokens", commands: ["serve"], flag: "auth-tokens-file", arg: "<path>", env: "APPWATCH_AUTH_TOKENS_FILE", file: true, shown: "none", help: "bearer tokens clients must present, one per line (# comments)", section: S_SECURITY },
  { key: "authTokens", type: "tokens", default: [], commands: ["serve"], env: "APPWATCH_AUTH_TOKENS", file: true, secret: true, shown: "none (no auth)", help: "bearer tokens, comma-separated (environment and file only: never on the command line)", section: S_SECURITY },
  { key: "allowedOrigins", type: "origins", default: [], commands: ["serve"], flag: "allowed-origin", arg: "<origin>", env: "APPWATCH_ALLOWED_ORIGINS", file: true, shown: "any", help: "browser Origin allowed on /v1/*; repeat or comma-separate", section: S_SECURITY },
  // serve and events: the built-in sandbox (chosen by the CLI, src/cli.ts).
  // No default: unset is "auto" (the sandbox only when no cluster configuration exists at all); false turns that off.
  {
    key: "sandbox", type: "bool", commands: ["serve", "events"], flag: "sandbox", env: "APPWATCH_SANDBOX", file: true, section: S_SANDBOX,
    shown: "auto (only without any cluster configuration)",
    help: "watch demo apps on the built-in sandbox API server; --no-sandbox (false): never, fail without a cluster",
  },
  { key: "sandboxPort", type: "int", min: 0, max: 65535, what: PORT, commands: ["serve", "events"], flag: "sandbox-port", arg: "<port>", env: "APPWATCH_SANDBOX_PORT", file: true, shown: "any free port", help: "port of the sandbox API server", section: S_SANDBOX },
  { key: "demoIntervalMs", type: "int", min: 0, max: 3_600_000, default: 2000, commands: ["serve", "events"], flag: "demo-interval-ms", arg: "<ms>", env: "APPWATCH_DEMO_INTERVAL_MS", file: true, help: "sandbox: ms between demo app changes (0: none)", section: S_SANDBOX },
  // events: the Kubernetes watch and what it prints.
  { key: "selector", type: "string", default: "flyte.org/app-managed=true", commands: ["events"], flag: "selector", short: "l", arg: "<sel>", help: "label selector", section: S_KUBE_WATCH },
  { key: "initialList", type: "enum", values: ["auto", "streaming", "paginated"], default: "auto", commands: ["events"], flag: "initial-list", arg: "<mode>", help: "auto | streaming | paginated", section: S_KUBE_WATCH },
  { key: "idleTimeoutSeconds", type: "seconds", min: 0.1, max: 86_400, default: 60, commands: ["events"], flag: "idle-timeout", arg: "<sec>", help: "abort a connection silent for this long", section: S_KUBE_WATCH },
  { key: "output", type: "enum", values: ["events", "objects"], default: "events", commands: ["events"], flag: "output", short: "o", arg: "<format>", help: "events (a summary per change) | objects (full objects)", section: S_OUTPUT },
  // watch: the client of a running service.
  { key: "url", type: "url", default: DEFAULT_URL, commands: ["watch"], flag: "url", arg: "<url>", env: "APPWATCH_URL", help: "the appwatch service", section: S_SERVICE },
  {
    key: "token", type: "token", commands: ["watch"], flag: "token", arg: "<token>", env: "APPWATCH_TOKEN", secret: true, shown: "none", section: S_SERVICE,
    help: 'bearer token (APPWATCH_TOKEN keeps it out of the process list); sent as "Authorization: Bearer" where the runtime\'s WebSocket can (Node), else as the access_token parameter',
  },
  { key: "org", type: "name", commands: ["watch"], flag: "org", arg: "<org>", help: "apps of one org", section: S_WHAT },
  { key: "cluster", type: "name", commands: ["watch"], flag: "cluster", arg: "<name>", help: "only from a service of this cluster (its --cluster-name); another one refuses", section: S_WHAT },
  { key: "project", type: "name", commands: ["watch"], flag: "project", arg: "<p>", help: "apps of one project (with --domain)", section: S_WHAT },
  { key: "domain", type: "name", commands: ["watch"], flag: "domain", arg: "<d>", help: "apps of one domain (with --project)", section: S_WHAT },
  { key: "app", type: "name", commands: ["watch"], flag: "app", arg: "<name>", help: "one app (needs --project and --domain)", section: S_WHAT },
  { key: "snapshot", type: "bool", default: true, commands: ["watch"], flag: "no-snapshot", negate: true, shown: "a snapshot first", help: "start with live changes only (no createEvent per existing app)", section: S_WHAT },
  { key: "resume", type: "text", max: 8192, commands: ["watch"], flag: "resume", arg: "<token>", help: "start after this resume token (from an earlier stream)", section: S_WHAT },
  { key: "output", type: "enum", values: ["human", "json"], default: "human", commands: ["watch"], flag: "output", short: "o", arg: "<format>", help: "human | json (each frame's JSON verbatim, one per line; connection notes go to stderr as JSON log lines)", section: S_OUTPUT },
  { key: "verbose", type: "bool", default: false, commands: ["watch"], flag: "verbose", short: "v", help: "human output: also show heartbeats and other control frames", section: S_OUTPUT },
  { key: "idleTimeoutSeconds", type: "seconds", min: 1, default: 60, commands: ["watch"], flag: "idle-timeout", arg: "<sec>", help: "reconnect when nothing arrives for this long (keep it above the service's --heartbeat-seconds)", section: S_OUTPUT },
  // serve and events.
  { key: "logLevel", type: "enum", values: ["debug", "info", "warn", "error"], default: "info", commands: ["serve", "events"], flag: "log-level", arg: "<level>", env: "APPWATCH_LOG_LEVEL", file: true, help: "debug | info | warn | error (logs are JSON lines on stderr)", section: S_LOGS },
  // The Cloudflare Worker (src/worker/cloudflare-env.ts): it reads serve's settings from its bindings too.
  {
    key: "apiServer", type: "apiServer", commands: [], worker: true, required: true, env: "APPWATCH_KUBE_API_URL", shown: "(required)", section: S_WORKER,
    help: "the Kubernetes API server, https://… (or http:// for a test server)",
  },
  { key: "apiToken", type: "apiToken", commands: [], worker: true, env: "APPWATCH_KUBE_TOKEN", secret: true, shown: "none (anonymous)", help: "bearer token for the API server", section: S_WORKER },
] as const satisfies readonly SettingDef[];

/** Cross-setting rules: `key` is the setting the message is about (errors are labelled with its source). */
export interface SettingRule<C extends Command> {
  readonly key: KeyOf<C>;
  readonly check: (s: SettingsOf<C>) => boolean;
  readonly message: string;
}

/** The rules of each command, checked after its settings are merged. */
export const RULES: { readonly [C in Command]: readonly SettingRule<C>[] } = {
  serve: [
    { key: "clusterOrg", check: (s) => s.clusterOrg === undefined || s.clusterName !== undefined, message: "needs --cluster-name" },
  ],
  events: [],
  watch: [
    { key: "app", check: (s) => s.app === undefined || (s.project !== undefined && s.domain !== undefined), message: "needs --project and --domain" },
    { key: "project", check: (s) => (s.project === undefined) === (s.domain === undefined), message: "--project and --domain go together" },
  ],
};

/** Environment variable naming the config file (`--config`). */
export const CONFIG_ENV = "APPWATCH_CONFIG";

// ---------------------------------------------------------------------------------------------
// Types derived from the table.

type Table = (typeof SETTINGS)[number];
/** The rows a command reads, including the ones that feed another (`into`). */
type RowOf<C extends Command> = Table extends infer E ? (E extends { readonly commands: readonly (infer X)[] } ? (C extends X ? E : never) : never) : never;
type SettingRowOf<C extends Command> = Exclude<RowOf<C>, { readonly into: string }>;
/** The TypeScript type of each {@link SettingType}. */
interface TypeOf {
  int: number;
  seconds: number;
  bool: boolean;
  string: string;
  enum: string;
  domain: string;
  namespaces: string[];
  tokens: string[];
  token: string;
  origins: string[];
  url: string;
  name: string;
  text: string;
  apiServer: string;
  apiToken: string;
}
type ValueOf<E> = E extends { readonly type: "enum"; readonly values: readonly (infer V)[] } ? V
  : E extends { readonly type: infer T extends keyof TypeOf } ? TypeOf[T]
  : never;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The keys of a command's settings. */
export type KeyOf<C extends Command> = SettingRowOf<C>["key"];
/** The keys a command reads, including the ones that feed another (`authTokensFile`). */
export type InputKeyOf<C extends Command> = RowOf<C>["key"];
/** A command's settings: the ones with a default always present, the others optional. */
export type SettingsOf<C extends Command> = Simplify<
  & { -readonly [E in SettingRowOf<C> as E extends { readonly default: unknown } ? E["key"] : never]: ValueOf<E> }
  & { -readonly [E in SettingRowOf<C> as E extends { readonly default: unknown } ? never : E["key"]]?: ValueOf<E> }
>;
/**
 * What `startService` takes: the settings only `serve` reads. The ones it
 * shares with `events` (the cluster, the sandbox, the log level) are the CLI's.
 */
export type ServiceSettings = Simplify<Omit<SettingsOf<"serve">, KeyOf<"events"> | KeyOf<"watch">>>;
type WorkerRow = Extract<Table, { readonly worker: true }>;
/** The Cloudflare Worker's own settings ({@link workerRows}); it reads `serve`'s as well. */
export type WorkerSettings = Simplify<
  & { -readonly [E in WorkerRow as E extends { readonly required: true } ? E["key"] : never]: ValueOf<E> }
  & { -readonly [E in WorkerRow as E extends { readonly required: true } ? never : E["key"]]?: ValueOf<E> }
>;
/** Everything `appwatch serve` runs with: the service's settings, the cluster's and the log level. */
export type AppwatchSettings = SettingsOf<"serve">;
/** A setting's key in the config file (camelCase, as in Flyte's `internalApps`). */
export type FileKey = InputKeyOf<"serve">;
/** A key of {@link AppwatchSettings}. */
export type SettingKey = KeyOf<"serve">;

// ---------------------------------------------------------------------------------------------
// Rows.

/** The rows `command` reads (in table order), including those with `into`. */
export function rowsOf(command: Command): readonly SettingDef[] {
  return SETTINGS.filter((s) => (s.commands as readonly Command[]).includes(command));
}

/** The rows only the Cloudflare Worker reads (in table order). */
export function workerRows(): readonly SettingDef[] {
  return (SETTINGS as readonly SettingDef[]).filter((r) => r.worker);
}

/** Whether a command reads the config file: when any of its settings has a file key. */
export function readsFile(command: Command): boolean {
  return rowsOf(command).some((r) => r.file);
}

/** A boolean flag with both spellings of false (`--no-sandbox`, `--sandbox=false`); `--no-snapshot`-style rows are their own flag. */
export function isTwoWayBool(r: SettingDef): boolean {
  return r.type === "bool" && r.flag !== undefined && !r.negate;
}

/** The keys also accepted nested under Flyte's `internalApps:` in the config file. */
export function internalAppsKeys(): string[] {
  return (SETTINGS as readonly SettingDef[]).filter((r) => r.file && r.internalApps).map((r) => r.key);
}
