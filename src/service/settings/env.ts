/**
 * The environment layer: each setting's `APPWATCH_*` variable, read and checked. No files, flags
 * or `node:` built-ins, so the Cloudflare Worker (whose `env` bindings are its only configuration)
 * reads the same variables, with the same checks and messages, as the CLI ({@link settingsFromEnv}),
 * and its own two (the API server and its token: {@link workerSettingsFromEnv});
 * `load.ts` puts this layer between the config file and the flags.
 * @module
 */
import * as v from "valibot";
import { check, type Layer, type Problems, settingsSchema, type StringKind, stringKind, valueSchema } from "./schemas.ts";
import { type Command, RULES, rowsOf, type SettingDef, type SettingsOf, workerRows, type WorkerSettings } from "./table.ts";

/** `a, b,,c` → `["a", "b", "c"]`: a list setting given as one string (environment, flag, YAML scalar). */
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

/**
 * The Cloudflare Worker's own settings (`workerRows()`: the API server and its token) from its
 * bindings. Reported as the Worker always has: the first problem only, `<VARIABLE> is required` or
 * `<VARIABLE> <message>`; a blank token is an error, not unset.
 */
export function workerSettingsFromEnv(env: Record<string, string>): { ok: true; settings: WorkerSettings } | { ok: false; message: string } {
  const rows = workerRows();
  const schema = v.object(Object.fromEntries(rows.map((row) => [row.env!, row.required ? valueSchema(row) : v.optional(valueSchema(row))])));
  const r = v.safeParse(schema, env);
  if (!r.success) {
    const first = r.issues[0];
    const key = first.path?.map((p) => String(p.key)).join(".") ?? "?";
    // A missing key's own message is valibot's "Invalid key: …": say what to set instead.
    return { ok: false, message: first.input === undefined ? `${key} is required` : `${key} ${first.message}` };
  }
  const output = r.output as Record<string, unknown>;
  const settings = Object.fromEntries(rows.filter((row) => output[row.env!] !== undefined).map((row) => [row.key, output[row.env!]]));
  return { ok: true, settings: settings as WorkerSettings };
}
