/**
 * The `appwatch` command line: parse and validate options, connect to the
 * cluster (or start the built-in sandbox), and print every change of the
 * watched Knative Services as one JSON line on stdout. Logs go to stderr.
 * @module
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import * as v from "valibot";
import { connect } from "./kube/connect.ts";
import type { KubeClient } from "./kube/client.ts";
import { KubeClient as Client } from "./kube/client.ts";
import { createLogger, type Logger, type LogLevel } from "./log.ts";
import { seedDemo, startDemoActivity, startSandbox } from "./sandbox/mod.ts";
import { createWatcher } from "./watch/group.ts";
import { KNATIVE_SERVICES, type ReflectorEvent } from "./watch/types.ts";

/** The `--help` text. */
export const HELP = `appwatch — watch Flyte apps (Knative Services) and print every change

Usage: appwatch [options]

Prints one JSON line per change on stdout ("added", "modified", "deleted",
and "synced" markers); logs go to stderr as JSON lines.

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
  appwatch --sandbox                      # demo: a local API server with changing apps
  appwatch -n flyte,flytesnacks           # two namespaces of the current cluster
  appwatch --context prod -n '*' -o objects
`;

const Namespace = v.pipe(
  v.string(),
  v.regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?|\*)$/, "a namespace is a DNS label (lowercase letters, digits, '-') or '*'"),
  v.maxLength(63),
);
const PositiveSeconds = v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/, "must be a number of seconds"), v.transform(Number), v.minValue(0.1));

/** Validated command-line options. */
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

/** Parses `argv` (without the runtime and script) into validated options. */
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
    throw new UsageError(`${(err as Error).message}\nRun with --help for usage.`);
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
    throw new UsageError(`invalid options:\n${lines.join("\n")}\nRun with --help for usage.`);
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

/** True when kubectl would find some cluster configuration. */
export function clusterConfigExists(env: Record<string, string | undefined> = process.env): boolean {
  if (env.KUBECONFIG && env.KUBECONFIG.split(/[:;]/).some((p) => p && existsSync(p))) return true;
  const home = env.HOME || homedir();
  if (existsSync(join(home, ".kube", "config"))) return true;
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
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

/** Runs the command until `signal` aborts. Returns the process exit code. */
export async function runCli(
  argv: string[],
  io: { stdout: (line: string) => void; stderr: (line: string) => void; signal: AbortSignal; env?: Record<string, string | undefined> },
): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`appwatch: ${err.message}`);
      return 2;
    }
    throw err;
  }
  if (options.help) {
    io.stdout(HELP);
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
