/**
 * Reads a subcommand's settings from four layers, each overriding the one before: the defaults <
 * the config file (`--config` or `$APPWATCH_CONFIG`, YAML: `file.ts`) < `APPWATCH_*` environment
 * variables (`env.ts`) < flags (`flags.ts`). Which settings a command reads, and their flags,
 * variables, file keys and defaults, all come from the one table (`table.ts`).
 *
 * Every value is validated with valibot, and every error names the key and where it came from:
 * `appwatch.yaml: port: …`, `APPWATCH_PORT: …`, `--port: …`.
 *
 * Auth tokens are secrets: they are never echoed in errors or logs, and they can come from a file
 * (`authTokensFile`, one token per line) so they need not be in the environment or on the command
 * line.
 * @module
 */
import * as v from "valibot";
import { readEnvLayer } from "./env.ts";
import { fedValues, type ReadFile, readConfigFile, readTextFile } from "./file.ts";
import { readFlagLayer } from "./flags.ts";
import { type Layer, type Problems, settingsSchema } from "./schemas.ts";
import { type AppwatchSettings, type Command, CONFIG_ENV, type KeyOf, readsFile, RULES, rowsOf, type SettingDef, type SettingKey, type SettingsOf } from "./table.ts";

/** Where a setting's value came from. */
export type SettingSource = "default" | "file" | "env" | "flag";

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
  /** `help`: `--help` was given (print `SERVE_HELP`, `help.ts`); `serve`: run the service. */
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

/** Options of {@link loadCommand} and {@link loadSettings}. */
export interface LoadSettingsOptions {
  /** Arguments after the subcommand (for {@link loadSettings}, a leading `serve` is skipped). */
  argv: string[];
  env: Record<string, string | undefined>;
  /** Reads a file as UTF-8 (default: `readFileSync`); tests pass their own. */
  readFile?: ReadFile;
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
  const readFile = options.readFile ?? readTextFile;
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

  const fileLayer: Layer = configFile === undefined ? {} : readConfigFile(configFile, configLabel, readFile, byKey, problems);
  const envLayer = readEnvLayer(rows, env, problems);

  // A file of values (authTokensFile): read per layer; the highest layer that names the setting
  // (its values or the file) wins, and within a layer they add up.
  const fed = rows.find((r) => r.into !== undefined);
  const fileValues = fedValues(fed, fileLayer, configFile !== undefined && fed ? `${configFile}: ${fed.key}` : "", configFile, readFile, problems);
  const envValues = fedValues(fed, envLayer, fed?.env ?? "", undefined, readFile, problems);
  const flagValues = fedValues(fed, flags.layer, fed?.flag ? `--${fed.flag}` : "", undefined, readFile, problems);
  problems.push(...flagProblems);

  if (problems.length > 0) throw new ConfigError(problems);

  const merged: Record<string, unknown> = {};
  const labels: Record<string, string> = {};
  const apply = (layer: Layer, source: SettingSource, label: (row: SettingDef) => string, values: string[] | undefined) => {
    for (const [key, value] of Object.entries(layer)) {
      const row = byKey.get(key)!;
      if (row.into !== undefined || (fed && key === fed.into)) continue;
      merged[key] = value;
      sources[key] = source;
      labels[key] = label(row);
    }
    if (fed && values !== undefined) {
      merged[fed.into!] = [...new Set(values)];
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

/** The settings as they may be logged: everything but the tokens (their count instead). */
export function describeSettings(loaded: LoadedSettings): Record<string, unknown> {
  const { authTokens, ...rest } = loaded.settings;
  const nonDefault = Object.entries(loaded.sources).filter(([, s]) => s !== "default").map(([k, s]) => `${k}=${s}`);
  return { ...rest, auth: authTokens.length > 0 ? `${authTokens.length} bearer token(s)` : "off", configFile: loaded.configFile, from: nonDefault.join(" ") };
}
