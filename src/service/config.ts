/**
 * Reads a subcommand's settings from four layers, each overriding the one
 * before: the defaults < the config file (`--config` or `$APPWATCH_CONFIG`,
 * YAML) < `APPWATCH_*` environment variables < flags. Which settings a
 * command reads, and their flags, variables, file keys, defaults and help
 * lines, all come from the one table in `settings.ts`; so does `--help`.
 *
 * Every value is validated with valibot, and every error names the key and
 * where it came from: `appwatch.yaml: port: …`, `APPWATCH_PORT: …`, `--port: …`.
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
import { yamlErrorText } from "../yaml-error.ts";
import { check, fromString, type Layer, type Problems, readEnvLayer, splitList } from "./settings-env.ts";
import {
  type Command,
  CONFIG_ENV,
  type InputKeyOf,
  type KeyOf,
  RULES,
  rowsOf,
  SECTIONS,
  type SettingDef,
  SETTINGS,
  type SettingsOf,
  settingsSchema,
  type StringKind,
  stringKind,
  Token,
  valueSchema,
} from "./settings.ts";

export { CONFIG_ENV };

/** Everything `appwatch serve` runs with: the service's settings, the cluster's and the log level. */
export type AppwatchSettings = SettingsOf<"serve">;

/** Where a setting's value came from. */
export type SettingSource = "default" | "file" | "env" | "flag";

/** A setting's key in the config file (camelCase, as in Flyte's `internalApps`). */
export type FileKey = InputKeyOf<"serve">;
/** A key of {@link AppwatchSettings}. */
export type SettingKey = KeyOf<"serve">;

/** The result of {@link loadCommand}. */
export interface Loaded<C extends Command> {
  /** `--help` was given: `settings` are the defaults and nothing else was read. */
  help: boolean;
  settings: SettingsOf<C>;
  /** The config file read, if any. */
  configFile: string | undefined;
  /** Where each setting came from (`authTokens` also covers `authTokensFile`). */
  sources: Record<KeyOf<C>, SettingSource>;
}

/** The result of {@link loadSettings}. */
export interface LoadedSettings {
  /** `help`: `--help` was given (print {@link SERVE_HELP}); `serve`: run the service. */
  command: "serve" | "help";
  settings: AppwatchSettings;
  configFile: string | undefined;
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

/** The defaults of `appwatch serve` (documented in `--help`). */
export const DEFAULT_SETTINGS: Readonly<AppwatchSettings> = Object.freeze(
  v.parse(settingsSchema("serve"), {}) as AppwatchSettings,
);

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

/** Every file key of every command: a file shared by `serve` and `events` may hold either's. */
const FILE_ROWS: ReadonlyMap<string, SettingDef> = new Map(SETTINGS.filter((r) => "file" in r).map((r) => [r.key, r]));
const FILE_KEYS = [...FILE_ROWS.keys(), "internalApps"];

function internalAppsKeys(): string[] {
  return [...FILE_ROWS.values()].filter((r) => r.internalApps).map((r) => r.key);
}

// ---------------------------------------------------------------------------------------------
// Help.

/** The default as `--help` shows it; undefined: nothing to show. */
function shownDefault(row: SettingDef): string | undefined {
  if (row.shown !== undefined) return row.shown;
  const d = row.default;
  if (d === undefined) return undefined;
  if (Array.isArray(d)) return d.length ? d.join(",") : "none";
  return d === "" ? '""' : String(d);
}

/** Whether a command reads the config file: when any of its settings has a file key. */
function readsFile(command: Command): boolean {
  return rowsOf(command).some((r) => r.file);
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

// ---------------------------------------------------------------------------------------------
// Reading one layer.


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

function isMapping(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** The config file: every known key accepted, the keys `rows` names validated (others ignored). */
function readFileLayer(path: string, text: string, rows: ReadonlyMap<string, SettingDef>, problems: Problems): Layer {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    problems.push(`${path}: not valid YAML at ${yamlErrorText(err)}`);
    return {};
  }
  if (doc === null || doc === undefined) return {};
  if (!isMapping(doc)) {
    problems.push(`${path}: must be a mapping of settings (key: value), not ${Array.isArray(doc) ? "a list" : typeof doc}`);
    return {};
  }
  const apps = internalAppsKeys();
  const appsText = `${apps.slice(0, -1).join(", ")} and ${apps.at(-1)}`;
  const before = problems.length;
  const raw: Record<string, unknown> = {};
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!FILE_KEYS.includes(key)) {
      problems.push(`${path}: ${key}: is not a known key${suggestion(key, FILE_KEYS)}`);
      continue;
    }
    if (key !== "internalApps") {
      raw[key] = value;
      labels[key] = key;
    }
  }
  if (doc.internalApps !== undefined) {
    if (!isMapping(doc.internalApps)) {
      problems.push(`${path}: internalApps: must be a mapping (${apps.join(", ")})`);
    } else {
      for (const [key, value] of Object.entries(doc.internalApps)) {
        if (!apps.includes(key)) {
          problems.push(`${path}: internalApps.${key}: is not a known key; appwatch reads ${appsText} there${suggestion(key, apps)}`);
        } else if (raw[key] !== undefined) {
          problems.push(`${path}: internalApps.${key}: also set at the top level as ${key}; set it once`);
        } else {
          raw[key] = value;
          labels[key] = `internalApps.${key}`;
        }
      }
    }
  }
  const layer: Layer = {};
  for (const [key, value] of Object.entries(raw)) {
    const row = rows.get(key);
    if (!row) continue; // another command's setting
    // YAML scalars for list keys: "a,b" is the list [a, b].
    const input = stringKind(row) === "list" && typeof value === "string" ? splitList(value) : value;
    const out = check(row, input, `${path}: ${labels[key]}`, problems);
    if (out !== undefined) layer[key] = out;
  }
  // The layer once more through a strict schema (a safety net: it agrees with the above).
  if (problems.length === before) {
    const schema = v.strictObject(Object.fromEntries([...rows.values()].filter((r) => r.file).map((r) => [r.key, v.optional(valueSchema(r))])));
    const r = v.safeParse(schema, layer);
    if (!r.success) for (const i of r.issues) problems.push(`${path}: ${i.path?.map((p) => String(p.key)).join(".") ?? ""}: ${i.message}`);
  }
  return layer;
}

interface FlagResult {
  layer: Layer;
  help: boolean;
  config: string | undefined;
}

/** A boolean flag with both spellings of false (`--no-sandbox`, `--sandbox=false`); `--no-snapshot`-style rows are their own flag. */
function isTwoWayBool(r: SettingDef): boolean {
  return r.type === "bool" && r.flag !== undefined && !r.negate;
}

/**
 * Takes the long forms of two-way boolean flags out of `argv` — `--x`, `--x=<bool>`, `--no-x` —
 * since `parseArgs` knows only `--x` (its `allowNegative` is not on every runtime we run on).
 * `<bool>` reads like the environment's (true/1/yes/on, false/0/no/off). The values of
 * value-taking options and everything after `--` are left alone. Contradicting forms are an error.
 */
function takeBoolFlags(rows: readonly SettingDef[], argv: string[], problems: Problems): { rest: string[]; values: Map<SettingDef, boolean> } {
  const bools = new Map(rows.filter(isTwoWayBool).map((r) => [r.flag!, r]));
  const withValue = new Set<string>(["--config"]);
  for (const r of rows) {
    if (!r.flag || r.type === "bool") continue;
    withValue.add(`--${r.flag}`);
    if (r.short) withValue.add(`-${r.short}`);
  }
  const rest: string[] = [];
  const values = new Map<SettingDef, boolean>();
  const set = (row: SettingDef, value: boolean, token: string) => {
    const before = values.get(row);
    if (before !== undefined && before !== value) problems.push(`--${row.flag}: ${token} contradicts an earlier ${before ? `--${row.flag}` : `--no-${row.flag}`}; give one`);
    values.set(row, value);
  };
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const eq = token.indexOf("=");
    const name = token.startsWith("--") ? token.slice(2, eq < 0 ? undefined : eq) : "";
    const row = bools.get(name);
    const negated = name.startsWith("no-") ? bools.get(name.slice(3)) : undefined;
    if (row && eq < 0) set(row, true, token);
    else if (row) {
      const out = check(row, fromString("bool", token.slice(eq + 1)), `--${row.flag}`, problems);
      if (typeof out === "boolean") set(row, out, token);
    } else if (negated && eq < 0) set(negated, false, token);
    else if (negated) problems.push(`--no-${negated.flag}: takes no value (use --${negated.flag}=${token.slice(eq + 1)})`);
    else {
      rest.push(token);
      if (eq < 0 && withValue.has(token) && i + 1 < argv.length) rest.push(argv[++i]!);
    }
  }
  return { rest, values };
}

function readFlagLayer(command: Command, rows: readonly SettingDef[], argv: string[], problems: Problems): FlagResult {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = { help: { type: "boolean", short: "h" } };
  if (readsFile(command)) options.config = { type: "string" };
  for (const r of rows) {
    if (!r.flag) continue;
    options[r.flag] = { type: r.type === "bool" ? "boolean" : "string", ...(r.short ? { short: r.short } : {}), ...(stringKind(r) === "list" ? { multiple: true } : {}) };
    if (r.all) options[r.all.flag] = { type: "boolean", short: r.all.short };
  }
  const bools = takeBoolFlags(rows, argv, problems);
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: bools.rest, options, strict: true, allowPositionals: false }));
  } catch (err) {
    const msg = (err as Error).message;
    const tokens = rows.find((r) => r.secret && !r.flag && r.type === "tokens");
    problems.push(tokens && /--auth-tokens?\b/.test(msg) && !/--auth-tokens-file/.test(msg)
      ? `${msg} (tokens are never taken from the command line: use --auth-tokens-file or ${tokens.env})`
      : msg);
    return { layer: {}, help: false, config: undefined };
  }
  const layer: Layer = {};
  for (const r of rows) {
    if (!r.flag) continue;
    const long = bools.values.get(r);
    // A short form (-v) next to a long one: the long one, which can say false, decides.
    const val = long ?? values[r.flag];
    if (val !== undefined) {
      const input = r.type === "bool" ? (r.negate ? !val : val) : Array.isArray(val) ? val.flatMap((x) => splitList(String(x))) : fromString(stringKind(r), String(val));
      const out = check(r, input, `--${r.flag}`, problems);
      if (out !== undefined) layer[r.key] = out;
    }
    if (r.all && values[r.all.flag]) {
      const set = layer[r.key];
      if (set !== undefined && JSON.stringify(set) !== JSON.stringify(r.all.value)) problems.push(`--${r.all.flag}: cannot be combined with --${r.flag}`);
      layer[r.key] = [...r.all.value];
    }
  }
  const config = values.config as string | undefined;
  if (config !== undefined && config.trim() === "") problems.push("--config: must not be empty");
  return { layer, help: values.help === true, config: config?.trim() || undefined };
}

// ---------------------------------------------------------------------------------------------

/** Options of {@link loadCommand} and {@link loadSettings}. */
export interface LoadSettingsOptions {
  /** Arguments after the subcommand (for {@link loadSettings}, a leading `serve` is skipped). */
  argv: string[];
  env: Record<string, string | undefined>;
  /** Reads a file as UTF-8 (default: `readFileSync`); tests pass their own. */
  readFile?: (path: string) => string;
}

/**
 * Reads the settings of `appwatch <command>`: defaults < config file < environment < flags,
 * each layer only for the settings the command reads. Throws a {@link ConfigError} listing
 * every problem, each naming its key and source.
 */
export function loadCommand<C extends Command>(command: C, options: LoadSettingsOptions): Loaded<C> {
  const rows = rowsOf(command);
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const env = options.env;
  const readFile = options.readFile ?? ((p: string) => readFileSync(p, "utf8"));
  const schema = settingsSchema(command);
  const problems: Problems = [];
  const sources = Object.fromEntries(rows.filter((r) => r.into === undefined).map((r) => [r.key, "default"])) as Record<string, SettingSource>;

  const flagProblems: Problems = []; // reported after the file's and the environment's, in layer order
  const flags = readFlagLayer(command, rows, options.argv, flagProblems);
  if (flags.help) {
    return { help: true, settings: v.parse(schema, {}) as SettingsOf<C>, configFile: undefined, sources: sources as Record<KeyOf<C>, SettingSource> };
  }
  const envConfig = readsFile(command) ? env[CONFIG_ENV]?.trim() || undefined : undefined;
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
    if (text !== undefined) fileLayer = readFileLayer(configFile, text, byKey, problems);
  }
  const envLayer = readEnvLayer(rows, env, problems);

  // A file of values (authTokensFile): read per layer; the highest layer that names the setting
  // (its values or the file) wins, and within a layer they add up.
  const fed = rows.find((r) => r.into !== undefined);
  const valuesOf = (layer: Layer, fileLabel: string, base: string | undefined): string[] | undefined => {
    if (!fed || (layer[fed.into!] === undefined && layer[fed.key] === undefined)) return undefined;
    const values = [...((layer[fed.into!] as string[] | undefined) ?? [])];
    const path = layer[fed.key] as string | undefined;
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
        values.push(...fromFile);
      }
    }
    return values;
  };
  const fileValues = valuesOf(fileLayer, configFile !== undefined && fed ? `${configFile}: ${fed.key}` : "", configFile);
  const envValues = valuesOf(envLayer, fed?.env ?? "", undefined);
  const flagValues = valuesOf(flags.layer, fed?.flag ? `--${fed.flag}` : "", undefined);
  problems.push(...flagProblems);

  if (problems.length > 0) throw new ConfigError(problems);

  const merged: Record<string, unknown> = {};
  const labels: Record<string, string> = {};
  const apply = (layer: Layer, source: SettingSource, label: (row: SettingDef) => string, fedValues: string[] | undefined) => {
    for (const [key, value] of Object.entries(layer)) {
      const row = byKey.get(key)!;
      if (row.into !== undefined || (fed && key === fed.into)) continue;
      merged[key] = value;
      sources[key] = source;
      labels[key] = label(row);
    }
    if (fed && fedValues !== undefined) {
      merged[fed.into!] = [...new Set(fedValues)];
      sources[fed.into!] = source;
    }
  };
  apply(fileLayer, "file", (r) => `${configFile}: ${r.key}`, fileValues);
  apply(envLayer, "env", (r) => r.env!, envValues);
  apply(flags.layer, "flag", (r) => `--${r.flag}`, flagValues);

  const r = v.safeParse(schema, merged);
  if (!r.success) {
    // Not reachable when every layer validated; kept so a schema mismatch is never silent.
    throw new ConfigError(r.issues.map((i) => `${i.path?.map((p) => String(p.key)).join(".") ?? "settings"}: ${i.message}`));
  }
  const settings = r.output as SettingsOf<C>;
  const rules = RULES[command] as readonly { key: string; check: (s: SettingsOf<C>) => boolean; message: string }[];
  const broken = rules.filter((rule) => !rule.check(settings)).map((rule) => {
    const row = byKey.get(rule.key)!;
    return `${labels[rule.key] ?? (row.flag ? `--${row.flag}` : row.env ?? row.key)}: ${rule.message}`;
  });
  if (broken.length > 0) throw new ConfigError(broken);
  return { help: false, settings, configFile, sources: sources as Record<KeyOf<C>, SettingSource> };
}

/**
 * Reads the settings of `appwatch serve` (a leading `serve` in `argv` is skipped).
 * Throws a {@link ConfigError} listing every problem, each naming its key and source.
 */
export function loadSettings(options: LoadSettingsOptions): LoadedSettings {
  const argv = options.argv[0] === "serve" ? options.argv.slice(1) : options.argv;
  const loaded = loadCommand("serve", { ...options, argv });
  return { command: loaded.help ? "help" : "serve", settings: loaded.settings, configFile: loaded.configFile, sources: loaded.sources };
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
