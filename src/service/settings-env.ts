/**
 * The settings from `APPWATCH_*` variables alone: the environment layer of `config.ts`, without
 * files, flags or `node:` built-ins, so the Cloudflare Worker (whose `env` bindings are its only
 * configuration) reads the same variables, with the same checks and messages, as the CLI.
 * @module
 */
import * as v from "valibot";
import { type Command, RULES, rowsOf, type SettingDef, settingsSchema, type SettingsOf, type StringKind, stringKind, valueSchema } from "./settings.ts";

/** Settings by key, as one layer (file, environment or flags) gives them. */
export type Layer = Record<string, unknown>;
/** Problems found so far, each naming its key and source. */
export type Problems = string[];

/** A value for an error message, shortened. */
export function describe(value: unknown): string {
  const s = JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Validates one value of `row`; pushes `<label>: <message>` problems. */
export function check(row: SettingDef, value: unknown, label: string, problems: Problems): unknown {
  const r = v.safeParse(valueSchema(row), value);
  if (r.success) return r.output;
  const secret = row.secret ?? false;
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

export function splitList(s: string): string[] {
  return s.split(",").map((x) => x.trim()).filter(Boolean);
}

/** A string (from the environment or a flag) → the typed value to validate. */
export function fromString(kind: StringKind, s: string): unknown {
  switch (kind) {
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

/** The environment layer of `rows`: each set, non-blank `APPWATCH_*` variable, validated. */
export function readEnvLayer(rows: readonly SettingDef[], env: Record<string, string | undefined>, problems: Problems): Layer {
  const layer: Layer = {};
  for (const row of rows) {
    if (row.env === undefined) continue;
    const raw = env[row.env];
    if (raw === undefined || raw.trim() === "") continue;
    const out = check(row, fromString(stringKind(row), raw), row.env, problems);
    if (out !== undefined) layer[row.key] = out;
  }
  return layer;
}


/**
 * `command`'s settings from the environment alone (defaults for the rest). Settings read from a
 * file (`authTokensFile`) are refused: there is no file system to read them from where this is used.
 */
export function settingsFromEnv<C extends Command>(command: C, env: Record<string, string | undefined>): { ok: true; settings: SettingsOf<C> } | { ok: false; problems: Problems } {
  const rows = rowsOf(command);
  const problems: Problems = [];
  for (const row of rows) {
    if (row.into !== undefined && row.env !== undefined && (env[row.env] ?? "").trim() !== "") problems.push(`${row.env}: files cannot be read here; set the values themselves instead`);
  }
  const layer = readEnvLayer(rows.filter((r) => r.into === undefined), env, problems);
  if (problems.length > 0) return { ok: false, problems };
  const r = v.safeParse(settingsSchema(command), layer);
  if (!r.success) return { ok: false, problems: r.issues.map((i) => `${i.path?.map((p) => String(p.key)).join(".") ?? "settings"}: ${i.message}`) };
  const settings = r.output as SettingsOf<C>;
  const byKey = new Map(rows.map((row) => [row.key, row]));
  const rules = RULES[command] as readonly { key: string; check: (s: SettingsOf<C>) => boolean; message: string }[];
  const broken = rules.filter((rule) => !rule.check(settings)).map((rule) => `${byKey.get(rule.key)?.env ?? rule.key}: ${rule.message}`);
  return broken.length > 0 ? { ok: false, problems: broken } : { ok: true, settings };
}
