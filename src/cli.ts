/**
 * The `appwatch` command line. Subcommands:
 *
 * - `serve` (the default): the HTTP/WebSocket service (`src/service/`);
 * - `watch`: the client of a running service (`src/client/`);
 * - `events`: connect to the cluster (or the built-in sandbox) and print every
 *   change of the watched Knative Services as one JSON line on stdout.
 *
 * Each reads its settings through the one settings table (`src/service/settings/table.ts`):
 * defaults < config file < `APPWATCH_*` < flags. This is the composition root: it
 * alone chooses between the sandbox and a real cluster ({@link openCluster}).
 *
 * Logs go to stderr. Exit codes: 0 done, 1 failure, 2 usage or configuration error.
 * @module
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import process from "node:process";
import { parseWatchArgs, WatchUsageError } from "./client/options.ts";
import { KubeconfigError } from "./kube/kubeconfig.ts";
import { createLogger, type Logger } from "./log.ts";
import { runtimeName, runtimeVersion } from "./runtime.ts";
import { listenProblem, type PortProblem, probePort } from "./service/adapters/port-probe.ts";
import { type ClusterSource, connectCluster } from "./service/server.ts";
import { ConfigError, describeSettings, EVENTS_HELP, loadCommand, loadSettings, SERVE_HELP, type SettingsOf, WATCH_HELP } from "./service/settings/mod.ts";
import { createWatcher } from "./watch/group.ts";
import { KNATIVE_SERVICES, type ReflectorEvent } from "./watch/types.ts";
import { VERSION } from "./version.ts";

export { EVENTS_HELP, SERVE_HELP, WATCH_HELP };

/** The subcommands. */
export const COMMANDS = ["serve", "watch", "events", "help"] as const;

/** Validated `appwatch events` options. */
export type CliOptions = SettingsOf<"events"> & { help: boolean };

/** A command-line mistake, reported without a stack trace. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * Parses `appwatch events` arguments (after `events`) into validated options: the
 * settings it shares with serve also from `env` and the config file.
 */
export function parseCli(argv: string[], env: Record<string, string | undefined> = {}, readFile?: (path: string) => string): CliOptions {
  try {
    const loaded = loadCommand("events", { argv, env, ...(readFile ? { readFile } : {}) });
    return { help: loaded.help, ...loaded.settings };
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/** The path list in `$KUBECONFIG` (`:`-separated; `;` on Windows), empty entries dropped. */
function kubeconfigList(env: Record<string, string | undefined>): string[] {
  return (env.KUBECONFIG ?? "").split(delimiter).filter((p) => p.trim() !== "");
}

/** True when kubectl would find some cluster configuration (a `$KUBECONFIG` file, `~/.kube/config`, in-cluster). */
export function clusterConfigExists(env: Record<string, string | undefined> = process.env): boolean {
  if (kubeconfigList(env).some((p) => existsSync(p))) return true;
  const home = env.HOME || homedir();
  if (!env.KUBECONFIG && existsSync(join(home, ".kube", "config"))) return true;
  return Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
}

/** The settings that choose the cluster (`serve` and `events` share them). */
export type ClusterSettings = Pick<SettingsOf<"events">, "kubeconfig" | "context" | "namespaces" | "sandbox" | "sandboxPort" | "demoIntervalMs">;

/** A cluster that cannot be chosen as configured (exit code 2, like any configuration error). */
export class ClusterChoiceError extends Error {
  override readonly name = "ClusterChoiceError";
}

/** What {@link chooseCluster} decided. */
export type ClusterChoice =
  | { kind: "cluster" }
  | { kind: "sandbox"; why: "asked" | "no-config" };

const DEMO_HINT = "for demo data without a cluster, pass --sandbox (or APPWATCH_SANDBOX=true)";

/**
 * Which cluster to watch, from the settings and the environment alone (nothing is started):
 *
 * - `sandbox: true` (`--sandbox`): the sandbox;
 * - a named kubeconfig or context: that cluster (the loader reports a missing file);
 * - `$KUBECONFIG` set: its files, like kubectl — missing ones are skipped; when every one is
 *   missing, the in-cluster account if there is one (client-go's fallback), else an error naming
 *   the files, never the sandbox;
 * - `~/.kube/config` (when `$KUBECONFIG` is unset) or the in-cluster account: that cluster;
 * - nothing at all: the sandbox with a warning, unless `sandbox: false` (`--no-sandbox`) says
 *   never, which is an error.
 */
export function chooseCluster(s: Pick<ClusterSettings, "kubeconfig" | "context" | "sandbox">, env: Record<string, string | undefined>): ClusterChoice {
  if (s.sandbox === true) return { kind: "sandbox", why: "asked" };
  if (s.kubeconfig !== undefined || s.context !== undefined) return { kind: "cluster" };
  const inCluster = Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
  if (env.KUBECONFIG) {
    const files = kubeconfigList(env);
    if (files.some((p) => existsSync(p)) || inCluster) return { kind: "cluster" };
    const named = files.length ? `names only missing files: ${files.map((f) => resolve(f)).join(", ")}` : `(${JSON.stringify(env.KUBECONFIG)}) names no file`;
    throw new ClusterChoiceError(`KUBECONFIG ${named}. kubectl would find no cluster either; fix or unset KUBECONFIG, or name a file with --kubeconfig; ${DEMO_HINT}`);
  }
  if (clusterConfigExists(env)) return { kind: "cluster" };
  if (s.sandbox === false) {
    const home = env.HOME || homedir();
    throw new ClusterChoiceError(
      `no cluster configuration found (KUBECONFIG is unset, ${join(home, ".kube", "config")} does not exist, not running in a pod) and the sandbox is turned off (sandbox=false). Pass --kubeconfig or --context, or drop --no-sandbox to get demo data`,
    );
  }
  return { kind: "sandbox", why: "no-config" };
}

/** The cluster {@link openCluster} opened, and whether it is the sandbox (every surface says so). */
export interface OpenedCluster {
  source: ClusterSource;
  sandbox: boolean;
}

/**
 * The one place that chooses the cluster, for `serve` and `events` ({@link chooseCluster}):
 * the built-in sandbox, loaded only then, or the cluster kubectl would use.
 */
export async function openCluster(s: ClusterSettings, io: { env: Record<string, string | undefined>; logger: Logger }): Promise<OpenedCluster> {
  const choice = chooseCluster(s, io.env);
  if (choice.kind === "cluster") {
    try {
      const source = await connectCluster({ kubeconfig: s.kubeconfig, context: s.context, namespaces: s.namespaces, env: io.env, logger: io.logger });
      return { source, sandbox: false };
    } catch (err) {
      // A missing or unparsable kubeconfig, an unknown context, a bad field: a configuration error
      // like a bad flag (exit 2, one plain line), whether --kubeconfig or $KUBECONFIG named it.
      if (err instanceof KubeconfigError) throw new ClusterChoiceError(err.message);
      throw err;
    }
  }
  const { startSandboxCluster } = await import("./sandbox/mod.ts");
  const sb = await startSandboxCluster({ port: s.sandboxPort ?? 0, namespaces: s.namespaces, demoIntervalMs: s.demoIntervalMs, logger: io.logger.child({ component: "sandbox" }) });
  io.logger.warn(
    choice.why === "asked"
      ? "SANDBOX MODE (--sandbox): demo apps from a built-in fake Kubernetes API, not a real cluster"
      : "SANDBOX MODE: no cluster configuration found ($KUBECONFIG, ~/.kube/config, in-cluster), so appwatch watches demo apps on a built-in fake Kubernetes API. Pass --kubeconfig or --context to watch a real cluster, or --no-sandbox to fail instead.",
    { sandbox: sb.url },
  );
  return { source: sb, sandbox: true };
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
 * How to ask for help the way this process was started: under `npm start` / `npm run watch` the
 * flags go after `--` (`npm start -- --help`: npm itself takes a bare `--help`), under `bun run`
 * they follow the script, else `appwatch [command] --help`.
 */
export function helpCommand(env: Record<string, string | undefined>, command?: "watch" | "events"): string {
  const script = env.npm_lifecycle_event;
  if (script === "start" || script === "watch") {
    const args = command !== undefined && command !== script ? `${command} --help` : "--help";
    const bun = (env.npm_config_user_agent ?? "").startsWith("bun/") || /\bbun(\.exe)?$/.test(env.npm_execpath ?? "");
    const run = script === "start" ? (bun ? "bun run start" : "npm start") : `${bun ? "bun" : "npm"} run ${script}`;
    return bun ? `${run} ${args}` : `${run} -- ${args}`;
  }
  return `appwatch ${command ? `${command} ` : ""}--help`;
}

/** `appwatch --version`: the version and the runtime. */
export function versionLine(): string {
  return `appwatch ${VERSION} (${runtimeName()} ${runtimeVersion()})`;
}

/** A port `serve` cannot listen on, as one plain line naming the setting to change. */
function portMessage(problem: PortProblem, port: number, host: string, flag: "--port" | "--grpc-port"): string {
  const which = flag === "--port" ? `port ${port}` : `port ${port} (${flag})`;
  if (problem.kind === "in-use") return `${which} is in use; pass ${flag} <port> (0: any free port), or stop what listens there`;
  if (problem.kind === "denied") return `cannot listen on ${which}: permission denied (ports below 1024 need privileges); pass ${flag} <port>`;
  return `cannot listen on ${host} ${which}: ${problem.message}; check --host`;
}

/** The first port of `serve` that cannot be listened on, as a message; undefined when both can. */
async function checkPorts(s: { port: number; grpcPort?: number; host: string }): Promise<string | undefined> {
  for (const [port, flag] of [[s.port, "--port"], [s.grpcPort, "--grpc-port"]] as const) {
    if (port === undefined) continue;
    const problem = await probePort(port, s.host);
    if (problem) return portMessage(problem, port, s.host, flag);
  }
  return undefined;
}

/**
 * Runs `appwatch [serve|watch|events|help] …` until `signal` aborts. With no
 * subcommand (or only options) it serves. Returns the process exit code.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const first = argv[0];
  if (first === "--version" || (first !== undefined && (COMMANDS as readonly string[]).includes(first) && argv[1] === "--version")) {
    io.stdout(versionLine());
    return 0;
  }
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
      io.stderr(`appwatch: unknown command "${first}" (commands: serve, watch, events, help)\nRun ${helpCommand(io.env ?? process.env)} for usage.`);
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
      io.stderr(`appwatch: ${err.message}\nRun ${helpCommand(env)} for usage.`);
      return 2;
    }
    throw err;
  }
  if (loaded.command === "help") {
    io.stdout(SERVE_HELP);
    return 0;
  }
  // A busy port is found before anything starts (the cluster, the sandbox): one plain line, exit 2.
  const busy = await checkPorts(loaded.settings);
  if (busy) {
    io.stderr(`appwatch: ${busy}`);
    return 2;
  }
  const logger = createLogger({ level: loaded.settings.logLevel, sink: io.stderr });
  logger.info("starting appwatch", describeSettings(loaded));
  if (io.signal.aborted) return 0;
  const { startService } = await import("./service/server.ts");
  let service;
  try {
    const opened = await openCluster(loaded.settings, { env, logger });
    service = await startService(loaded.settings, { logger, cluster: opened.source, sandbox: opened.sandbox });
  } catch (err) {
    if (err instanceof ClusterChoiceError) {
      io.stderr(`appwatch: ${err.message}`);
      return 2;
    }
    // The port was free when checked, but something took it before the listener did.
    const lost = listenProblem(err);
    if (lost) {
      const { port, grpcPort, host } = loaded.settings;
      io.stderr(`appwatch: ${grpcPort === undefined ? portMessage(lost, port, host, "--port") : `cannot listen on port ${port} or ${grpcPort} (--grpc-port): ${lost.message}`}`);
      return 2;
    }
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
      io.stderr(`appwatch watch: ${err.message}\nRun ${helpCommand(io.env ?? process.env, "watch")} for usage.`);
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
  const env = io.env ?? process.env;
  let options: CliOptions;
  try {
    options = parseCli(argv, env, io.readFile);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`appwatch events: ${err.message}\nRun ${helpCommand(env, "events")} for usage.`);
      return 2;
    }
    throw err;
  }
  if (options.help) {
    io.stdout(EVENTS_HELP);
    return 0;
  }
  const logger = createLogger({ level: options.logLevel, sink: io.stderr });
  let cluster: ClusterSource | undefined;
  try {
    cluster = (await openCluster(options, { env, logger })).source;
    const namespaces = cluster.namespaces.includes("*") ? [] : [...cluster.namespaces];
    logger.info("watching", { server: cluster.describe, namespaces: namespaces.length ? namespaces : "*", selector: options.selector });
    const watcher = createWatcher({
      client: cluster.client,
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
    if (err instanceof ClusterChoiceError) {
      io.stderr(`appwatch events: ${err.message}`);
      return 2;
    }
    logger.error("appwatch failed", { error: (err as Error).message });
    return 1;
  } finally {
    await cluster?.close().catch(() => {});
  }
}
