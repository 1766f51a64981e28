/**
 * The config-file layer (`--config` or `$APPWATCH_CONFIG`, YAML), and the files a setting may be
 * fed from (`authTokensFile`: one token per line). The only module of the settings that touches
 * the file system (`node:fs`, behind {@link ReadFile}: callers and tests pass their own reader);
 * the Cloudflare Worker, which has none, reads the environment layer (`env.ts`) alone.
 *
 * Every error names the file and the key: `appwatch.yaml: port: …`.
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { yamlErrorText } from "../../yaml-error.ts";
import { splitList } from "./env.ts";
import { check, type Layer, type Problems, stringKind, Token, valueSchema } from "./schemas.ts";
import { internalAppsKeys, type SettingDef, SETTINGS } from "./table.ts";

/** Reads a file as UTF-8 text; throws (with a `code` such as `ENOENT`) when it cannot. */
export type ReadFile = (path: string) => string;

/** The default {@link ReadFile}: `readFileSync`. */
export const readTextFile: ReadFile = (path) => readFileSync(path, "utf8");

/** Every file key of every command: a file shared by `serve` and `events` may hold either's. */
const FILE_ROWS: ReadonlyMap<string, SettingDef> = new Map(SETTINGS.filter((r) => "file" in r).map((r) => [r.key, r]));
const FILE_KEYS = [...FILE_ROWS.keys(), "internalApps"];

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

function errorText(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code === "ENOENT" ? "no such file" : e.code === "EACCES" ? "permission denied" : e.message ?? String(err);
}

/** Reads the config file `path` (`label`: the flag or variable that named it) into a layer; see {@link readFileLayer}. */
export function readConfigFile(path: string, label: string, readFile: ReadFile, rows: ReadonlyMap<string, SettingDef>, problems: Problems): Layer {
  let text: string | undefined;
  try {
    text = readFile(path);
  } catch (err) {
    problems.push(`${label}: cannot read the config file ${path}: ${errorText(err)}`);
  }
  return text === undefined ? {} : readFileLayer(path, text, rows, problems);
}

/** The config file: every known key accepted, the keys `rows` names validated (others ignored). */
export function readFileLayer(path: string, text: string, rows: ReadonlyMap<string, SettingDef>, problems: Problems): Layer {
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

/**
 * The values one layer gives a file-fed setting (`fed`: `authTokensFile` → `authTokens`): the
 * layer's own values plus the lines of the file it names, each checked; undefined when the layer
 * names neither. A relative path is relative to `base` (the config file), if given.
 */
export function fedValues(fed: SettingDef | undefined, layer: Layer, fileLabel: string, base: string | undefined, readFile: ReadFile, problems: Problems): string[] | undefined {
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
}
