/**
 * The `appwatch` command line. Subcommands:
 *
 * - `serve` (the default): the HTTP/WebSocket service (`src/service/`), with
 *   settings from defaults < config file < `APPWATCH_*` < flags (`src/service/config.ts`);
 * - `watch`: the client of a running service (`src/client/`);
 * - `events`: connect to the cluster (or the built-in sandbox) and print every
 *   change of the watched Knative Services as one JSON line on stdout.
 *
 * Logs go to stderr. Exit codes: 0 done, 1 failure, 2 usage or configuration error.
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import * as v from "valibot";
import { parseWatchArgs, WATCH_HELP, WatchUsageError } from "./client/options.ts";
import { connect } from "./kube/connect.ts";
import type { KubeClient } from "./kube/client.ts";
import { KubeClient as Client } from "./kube/client.ts";
import { createLogger, type Logger, type LogLevel } from "./log.ts";
import { seedDemo, startDemoActivity, startSandbox } from "./sandbox/mod.ts";
import { ConfigError, describeSettings, loadSettings, SERVE_HELP } from "./service/config.ts";
import { clusterConfigExists } from "./service/server.ts";
import { createWatcher } from "./watch/group.ts";
import { KNATIVE_SERVICES, type ReflectorEvent } from "./watch/types.ts";

export { clusterConfigExists, SERVE_HELP, WATCH_HELP };

/** The subcommands. */
export const COMMANDS = ["serve", "watch", "events", "help"] as const;

/** `appwatch events --help`. */
export const EVENTS_HELP = `appwatch events — print every change of the Flyte app KServices in the cluster

Usage: appwatch events [options]

Prints one JSON line per change on stdout ("added", "modified", "deleted",
and "synced" markers); logs go to stderr as JSON lines. (To serve the
changes over HTTP, use \`appwatch serve\`; to follow a running service, \`appwatch watch\`.)

Cluster (kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster):
  --kubeconfig <path>     kubeconfig file
  --context <name>        kubeconfig context (default: current-context)
  --sandbox               use the built-in sandbox API server with demo apps
                          (also used, with a warning, when no cluster config exists)
  --sandbox-port <port>   port for the sandbox (default: a free port)

Watch:
  -n, --namespace <ns>    namespace to watch; repeat or comma-separate for several;
                          "*" for all namespaces (default: the context's, else "flyte")
  -l, --selector <sel>    label selector (default: flyte.org/app-managed=true)
  --initial-list <mode>   auto | streaming | paginated (default: auto)
  --idle-timeout <sec>    abort a connection silent for this long (default: 60)

Output:
  -o, --output <format>   events (a summary per change, default) | objects (full objects)
  --log-level <level>     debug | info | warn | error (default: info)
  -h, --help              show this help

Examples:
  appwatch events --sandbox               # demo: a local API server with changing apps
  appwatch events -n flyte,flytesnacks    # two namespaces of the current cluster
  appwatch events --context prod -n '*' -o objects
`;

const Namespace = v.pipe(
  v.string(),
  v.regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?|\*)$/, "a namespace is a DNS label (lowercase letters, digits, '-') or '*'"),
  v.maxLength(63),
);
const PositiveSeconds = v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/, "must be a number of seconds"), v.transform(Number), v.minValue(0.1));

/** Validated `appwatch events` options. */
export const CliOptionsSchema = v.object({
  help: v.boolean(),
  kubeconfig: v.optional(v.pipe(v.string(), v.minLength(1))),
  context: v.optional(v.pipe(v.string(), v.minLength(1))),
  sandbox: v.boolean(),
  sandboxPort: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, "must be a port number"), v.transform(Number), v.maxValue(65535))),
  namespaces: v.array(Namespace),
  selector: v.pipe(v.string(), v.minLength(1)),
  initialList: v.picklist(["auto", "streaming", "paginated"], "must be auto, streaming or paginated"),
  idleTimeoutSeconds: PositiveSeconds,
  output: v.picklist(["events", "objects"], "must be events or objects"),
  logLevel: v.picklist(["debug", "info", "warn", "error"], "must be debug, info, warn or error"),
});

/** Options after validation. */
export type CliOptions = v.InferOutput<typeof CliOptionsSchema>;

/** A command-line mistake, reported without a stack trace. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Parses `appwatch events` arguments (after `events`) into validated options. */
export function parseCli(argv: string[]): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: "boolean", short: "h", default: false },
        kubeconfig: { type: "string" },
        context: { type: "string" },
        sandbox: { type: "boolean", default: false },
        "sandbox-port": { type: "string" },
        namespace: { type: "string", short: "n", multiple: true },
        selector: { type: "string", short: "l", default: "flyte.org/app-managed=true" },
        "initial-list": { type: "string", default: "auto" },
        "idle-timeout": { type: "string", default: "60" },
        output: { type: "string", short: "o", default: "events" },
        "log-level": { type: "string", default: "info" },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nRun appwatch events --help for usage.`);
  }
  const o = parsed.values;
  const result = v.safeParse(CliOptionsSchema, {
    help: o.help,
    kubeconfig: o.kubeconfig,
    context: o.context,
    sandbox: o.sandbox,
    sandboxPort: o["sandbox-port"],
    namespaces: (o.namespace ?? []).flatMap((n) => n.split(",")).map((n) => n.trim()).filter(Boolean),
    selector: o.selector,
    initialList: o["initial-list"],
    idleTimeoutSeconds: o["idle-timeout"],
    output: o.output,
    logLevel: o["log-level"],
  });
  if (!result.success) {
    const lines = result.issues.map((i) => {
      const path = i.path?.map((p) => String(p.key)).join(".") ?? "";
      return `  --${flagName(path)}: ${i.message}`;
    });
    throw new UsageError(`invalid options:\n${lines.join("\n")}\nRun appwatch events --help for usage.`);
  }
  return result.output;
}

function flagName(path: string): string {
  const first = path.split(".")[0] ?? path;
  const map: Record<string, string> = {
    namespaces: "namespace",
    sandboxPort: "sandbox-port",
    initialList: "initial-list",
    idleTimeoutSeconds: "idle-timeout",
    logLevel: "log-level",
  };
  return map[first] ?? first;
}

/** Formats one event as the JSON line printed on stdout. */
export function formatEvent(event: ReflectorEvent, output: "events" | "objects", objects: number): string {
  const time = new Date().toISOString();
  if (event.type === "synced") {
    return JSON.stringify({ time, type: "synced", phase: event.phase, objects, resourceVersion: event.resourceVersion, ...(event.cause ? { cause: event.cause } : {}), ...(event.namespace ? { namespace: event.namespace } : {}) });
  }
  const m = event.object.metadata;
  const base = {
    time,
    type: event.type,
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion,
    ...(event.type === "deleted" && event.inferred ? { inferred: true } : {}),
  };
  return JSON.stringify(output === "objects" ? { ...base, object: event.object } : base);
}

/** What the command line reads and writes (main.ts passes the process's; tests their own). */
export interface CliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  /** Aborted on SIGINT/SIGTERM: every command then stops cleanly and returns 0. */
  signal: AbortSignal;
  env?: Record<string, string | undefined>;
  /** Reads config and token files (default: the file system). */
  readFile?: (path: string) => string;
}

/** The top-level `--help` (the serve help, which lists the subcommands). */
export const HELP = SERVE_HELP;

/**
 * Runs `appwatch [serve|watch|events|help] …` until `signal` aborts. With no
 * subcommand (or only options) it serves. Returns the process exit code.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const first = argv[0];
  if (first === undefined || first.startsWith("-")) return await runServe(argv, io);
  const rest = argv.slice(1);
  switch (first) {
    case "serve":
      return await runServe(rest, io);
    case "watch":
      return await runWatch(rest, io);
    case "events":
      return await runEvents(rest, io);
    case "help": {
      const topic = rest[0];
      io.stdout(topic === "watch" ? WATCH_HELP : topic === "events" ? EVENTS_HELP : SERVE_HELP);
      return 0;
    }
    default:
      io.stderr(`appwatch: unknown command "${first}" (commands: serve, watch, events, help)\nRun appwatch --help for usage.`);
      return 2;
  }
}

/** `appwatch serve`: run the service until the signal; 1 when the cluster says the watch can never work. */
async function runServe(argv: string[], io: CliIo): Promise<number> {
  const env = io.env ?? process.env;
  let loaded;
  try {
    loaded = loadSettings({ argv, env, ...(io.readFile ? { readFile: io.readFile } : {}) });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(`appwatch: ${err.message}\nRun appwatch --help for usage.`);
      return 2;
    }
    throw err;
  }
  if (loaded.command === "help") {
    io.stdout(SERVE_HELP);
    return 0;
  }
  const logger = createLogger({ level: loaded.settings.logLevel, sink: io.stderr });
  logger.info("starting appwatch", describeSettings(loaded));
  if (io.signal.aborted) return 0;
  const { startService } = await import("./service/server.ts");
  let service;
  try {
    service = await startService(loaded.settings, { logger, env });
  } catch (err) {
    logger.error("appwatch could not start", { error: err instanceof Error ? err.message : String(err) });
    return 1;
  }
  const running = service;
  const outcome = await new Promise<{ stop: true } | { error: unknown }>((resolve) => {
    if (io.signal.aborted) return resolve({ stop: true });
    io.signal.addEventListener("abort", () => resolve({ stop: true }), { once: true });
    running.watching.catch((error: unknown) => resolve({ error }));
  });
  await running.stop();
  if ("error" in outcome) {
    const e = outcome.error;
    logger.error("appwatch cannot watch Flyte apps; exiting", { error: e instanceof Error ? e.message : String(e) });
    return 1;
  }
  return 0;
}

/** `appwatch watch`: the client of a running service. */
async function runWatch(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseWatchArgs(argv, io.env ?? process.env);
  } catch (err) {
    if (err instanceof WatchUsageError) {
      io.stderr(`appwatch watch: ${err.message}\nRun appwatch watch --help for usage.`);
      return 2;
    }
    throw err;
  }
  if (parsed.help) {
    io.stdout(WATCH_HELP);
    return 0;
  }
  const { runWatchClient } = await import("./client/watch.ts");
  return await runWatchClient(parsed.options, {
    stdout: io.stdout,
    stderr: io.stderr,
    signal: io.signal,
    logger: createLogger({ level: "info", sink: io.stderr }),
  });
}

/** `appwatch events`: print raw KService events until `signal` aborts. */
export async function runEvents(argv: string[], io: CliIo): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`appwatch events: ${err.message}`);
      return 2;
    }
    throw err;
  }
  if (options.help) {
    io.stdout(EVENTS_HELP);
    return 0;
  }
  const logger = createLogger({ level: options.logLevel as LogLevel, sink: io.stderr });
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const client = await clusterClient(options, logger, cleanups, io.env ?? process.env, io.signal);
    cleanups.push(() => client.close());
    const namespaces = options.namespaces.length > 0
      ? (options.namespaces.includes("*") ? [] : options.namespaces)
      : [client.namespace ?? "flyte"];
    logger.info("watching", { server: client.server, namespaces: namespaces.length ? namespaces : "*", selector: options.selector });
    const watcher = createWatcher({
      client,
      resource: KNATIVE_SERVICES,
      namespaces,
      labelSelector: options.selector,
      initialList: options.initialList,
      idleTimeoutMs: options.idleTimeoutSeconds * 1000,
      logger,
    });
    for await (const event of watcher.run(io.signal)) {
      // Only a synced line reports the object count: snapshot() copies and sorts the store.
      io.stdout(formatEvent(event, options.output, event.type === "synced" ? watcher.snapshot().items.length : 0));
    }
    logger.info("stopped", { objects: watcher.snapshot().items.length });
    return 0;
  } catch (err) {
    logger.error("appwatch failed", { error: (err as Error).message });
    return 1;
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  }
}

async function clusterClient(
  options: CliOptions,
  logger: Logger,
  cleanups: (() => Promise<void>)[],
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<KubeClient> {
  const explicit = options.kubeconfig !== undefined || options.context !== undefined;
  if (!options.sandbox && (explicit || clusterConfigExists(env))) {
    return await connect({ kubeconfig: options.kubeconfig, context: options.context, env, logger });
  }
  if (!options.sandbox) {
    logger.warn("no cluster configuration found ($KUBECONFIG, ~/.kube/config, in-cluster); using the built-in sandbox cluster with demo apps — pass --kubeconfig to watch a real cluster");
  }
  const sb = await startSandbox({ port: options.sandboxPort ?? 0, logger: logger.child({ component: "sandbox" }) });
  cleanups.push(() => sb.close());
  seedDemo(sb.sandbox, { namespace: "flyte", count: 5 });
  startDemoActivity(sb.sandbox, { intervalMs: 2000, signal });
  logger.info("sandbox API server started", { url: sb.url });
  return new Client({ server: sb.url, namespace: "flyte" });
}
