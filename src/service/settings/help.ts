/**
 * `--help`, made from the settings table: each command's option lines by section, with the
 * default, the environment variable and the config-file key of every setting
 * ({@link optionsHelp}), and each command's whole `--help`: {@link SERVE_HELP} (also
 * `appwatch --help`), {@link WATCH_HELP}, {@link EVENTS_HELP}.
 * @module
 */
import { stringKind, type StringKind } from "./schemas.ts";
import { type Command, CONFIG_ENV, type FileKey, internalAppsKeys, isTwoWayBool, readsFile, rowsOf, SECTIONS, type SettingDef } from "./table.ts";

/** One serve setting as the help text, the flag parser and the environment reader see it. */
export interface OptionSpec {
  key: FileKey;
  kind: StringKind;
  /** Long flag without dashes ("": none). */
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

/** Every `serve` setting, in table order (a view of `SETTINGS`). */
export const OPTIONS: readonly OptionSpec[] = rowsOf("serve").map((r) => ({
  key: r.key as FileKey,
  kind: stringKind(r),
  flag: r.flag ?? "",
  ...(r.short ? { short: r.short } : {}),
  ...(r.arg ? { arg: r.arg } : {}),
  env: r.env ?? "",
  shown: shownDefault(r) ?? "none",
  help: r.help,
  section: r.section,
  ...(stringKind(r) === "list" && r.flag ? { repeatable: true } : {}),
  ...(r.secret ? { secret: true } : {}),
}));

/** The default as `--help` shows it; undefined: nothing to show. */
function shownDefault(row: SettingDef): string | undefined {
  if (row.shown !== undefined) return row.shown;
  const d = row.default;
  if (d === undefined) return undefined;
  if (Array.isArray(d)) return d.length ? d.join(",") : "none";
  return d === "" ? '""' : String(d);
}

/**
 * The option lines of `appwatch <command> --help`: `--config` (where the
 * command reads a file), `--help`, then every setting by section with its
 * default, environment variable and file key.
 */
export function optionsHelp(command: Command): string {
  const out: string[] = [];
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
  if (readsFile(command)) row("--config <path>", "config file", ["default: none", `env ${CONFIG_ENV}`]);
  row("-h, --help", "show this help", []);
  row("--version", "print the version and exit", []);
  const rows = rowsOf(command);
  for (const section of SECTIONS) {
    const mine = rows.filter((r) => r.section === section);
    if (mine.length === 0) continue;
    out.push("", `${section}:`);
    for (const r of mine) {
      const shown = shownDefault(r);
      // A boolean without a default has three states: show how to say false.
      const no = isTwoWayBool(r) && r.default === undefined ? `, --no-${r.flag}` : "";
      const left = r.flag ? `${r.short ? `-${r.short}, ` : ""}--${r.flag}${r.arg ? ` ${r.arg}` : ""}${no}` : r.env ?? r.key;
      row(left, r.help, [shown !== undefined ? `default: ${shown}` : "", r.flag && r.env ? `env ${r.env}` : "", r.file ? `file: ${r.key}` : ""].filter(Boolean));
      if (r.all) row(`-${r.all.short}, --${r.all.flag}`, r.all.help, ["flag only"]);
    }
  }
  return out.join("\n");
}

/** `appwatch serve --help` (also `appwatch --help`). */
export const SERVE_HELP: string = `appwatch — watch Flyte apps (Knative Services) and serve their changes

Usage: appwatch [serve] [options]      run the service (the default command)
       appwatch watch [options]        stream changes from a running service (appwatch watch --help)
       appwatch events [options]       print raw KService events (appwatch events --help)

The service streams app changes over WebSocket and Server-Sent Events
(GET /v1/watch), lists apps (GET /v1/apps), and answers /healthz, /readyz and
/metrics. Logs are JSON lines on stderr.

Settings, each layer overriding the one before: defaults < config file
(YAML) < APPWATCH_* environment variables < flags. Every option below can be
set in the file under its "file:" key (camelCase); Flyte's nesting
"internalApps: {${internalAppsKeys().join(", ")}}" is
accepted too. Unknown keys are errors. An empty environment variable counts
as unset.

${optionsHelp("serve")}

Examples:
  appwatch                                  # the current kubectl cluster; sandbox demo without one
  appwatch --sandbox --port 9000            # demo apps on http://localhost:9000
  appwatch -n flyte --base-domain apps.example.com --auth-tokens-file /etc/appwatch/tokens
  APPWATCH_CONFIG=/etc/appwatch/appwatch.yaml appwatch serve
`;

/** `appwatch watch --help`. */
export const WATCH_HELP: string = `appwatch watch — stream Flyte app changes from a running appwatch service

Usage: appwatch watch [options]

Prints one line per change; reconnects by itself with the last resume token
(0.5 s backoff doubling to 10 s) and says whether the stream resumed or
started over with a fresh snapshot. Stops on Ctrl-C.

${optionsHelp("watch")}

Human output:
  12:01:02 CONNECTED  http://127.0.0.1:8080  snapshot (6 apps)
  12:01:02 CREATE  flyte/llm/development/gradio-chat  ACTIVE  1 replica  http://…
  12:01:02 SYNCED snapshot (6 apps)
  12:03:10 DISCONNECTED  server shutting down (1001); reconnecting in 0.5 s
  12:03:11 RECONNECTED  http://127.0.0.1:8080  resumed (2 replayed)

Exit status: 0 when stopped, 1 when the service refuses the stream (HTTP 400, 401, 403),
2 for a usage error.

Examples:
  appwatch watch --project flytesnacks --domain development
  APPWATCH_TOKEN=… appwatch watch --url https://appwatch.example.com -o json
`;

/** `appwatch events --help`. */
export const EVENTS_HELP: string = `appwatch events — print every change of the Flyte app KServices in the cluster

Usage: appwatch events [options]

Prints one JSON line per change on stdout ("added", "modified", "deleted",
and "synced" markers); logs go to stderr as JSON lines. (To serve the
changes over HTTP, use \`appwatch serve\`; to follow a running service, \`appwatch watch\`.)
The settings it shares with serve (the cluster, the sandbox, the log level) are
read the same way: defaults < config file < APPWATCH_* environment variables < flags.

${optionsHelp("events")}

Examples:
  appwatch events --sandbox               # demo: a local API server with changing apps
  appwatch events -n flyte,flytesnacks    # two namespaces of the current cluster
  appwatch events --context prod -n '*' -o objects
`;
