/**
 * The valibot schemas of the settings, built from the table (`table.ts`): one per
 * {@link SettingType} ({@link valueSchema}) and one per command ({@link settingsSchema}: strict,
 * defaults filled in), and {@link check}, which validates one value and words its problems the
 * same way for every source (`<source>: <message>`; secrets never echoed).
 * @module
 */
import * as v from "valibot";
import { Name } from "../schemas.ts";
import { type Command, DEFAULT_URL, rowsOf, type SettingDef, type SettingType } from "./table.ts";

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

/** How a string from the environment or a flag becomes a value to validate. */
export type StringKind = "number" | "bool" | "list" | "string";

/** The {@link StringKind} of a row. */
export function stringKind(row: SettingDef): StringKind {
  switch (row.type) {
    case "int":
    case "seconds":
      return "number";
    case "bool":
      return "bool";
    case "namespaces":
    case "tokens":
    case "origins":
      return "list";
    default:
      return "string";
  }
}

// Messages are phrased to follow "<source>: ".
const int = (min: number, max: number, what = `an integer from ${min} to ${max}`) =>
  v.pipe(v.number(`must be ${what}`), v.integer(`must be ${what}`), v.minValue(min, `must be ${what}`), v.maxValue(max, `must be ${what}`));
function seconds(min: number, max: number | undefined): v.GenericSchema<number, number> {
  if (max === undefined) {
    const atLeast = `must be at least ${min} second${min === 1 ? "" : "s"}`;
    return v.pipe(v.number("must be a number of seconds"), v.minValue(min, atLeast));
  }
  const range = `must be a number of seconds (${min}-${max})`;
  return v.pipe(v.number(range), v.minValue(min, range), v.maxValue(max, range));
}
const nonEmpty = v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"));

const NAMESPACE_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const Namespace = v.pipe(
  v.string("must be a string"),
  v.check((s) => s === "*" || (s.length <= 63 && NAMESPACE_RE.test(s)), "a namespace is a DNS label (at most 63 lowercase letters, digits, '-') or '*' for all"),
);
const Namespaces = v.pipe(
  v.array(Namespace, "must be a list of namespaces"),
  v.check((l) => !l.includes("*") || l.length === 1, "'*' (all namespaces) cannot be combined with other namespaces"),
);

const Domain = v.pipe(
  v.string("must be a string"),
  v.regex(/^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)?$/, "must be a DNS domain such as apps.example.com (no scheme, port or path), or empty for no public URLs"),
);

/** An HTTP(S) origin as browsers send it: scheme://host[:port], nothing else. */
const Origin = v.pipe(
  v.string("must be a string"),
  v.check((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && u.origin === s;
    } catch {
      return false;
    }
  }, "an origin is scheme://host[:port] with no path or trailing slash, e.g. https://board.example.com"),
);

/** A bearer token. Messages never include the value. */
export const Token = v.pipe(
  v.string("a token must be a string"),
  v.minLength(1, "a token must not be empty"),
  v.maxLength(4096, "a token must be at most 4096 characters"),
  v.regex(/^[\x21-\x7e]+$/, "a token must be printable ASCII without spaces"),
);

const Url = v.pipe(
  v.string("must be a string"),
  v.check((s) => {
    try {
      return ["http:", "https:", "ws:", "wss:"].includes(new URL(s).protocol);
    } catch {
      return false;
    }
  }, `must be an http(s):// or ws(s):// URL, e.g. ${DEFAULT_URL}`),
);

/** "a, b or c". */
function orList(values: readonly string[]): string {
  return values.length < 2 ? values.join("") : `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
}

/** The schema of one value of `row` (no default: {@link settingsSchema} adds those). */
export function valueSchema(row: SettingDef): v.GenericSchema {
  switch (row.type) {
    case "int":
      return int(row.min ?? 0, row.max ?? Number.MAX_SAFE_INTEGER, row.what);
    case "seconds":
      return seconds(row.min ?? 0, row.max);
    case "bool":
      return v.boolean("must be true or false");
    case "string":
      return nonEmpty;
    case "enum":
      return v.picklist(row.values ?? [], row.message ?? `must be ${orList(row.values ?? [])}`);
    case "domain":
      return Domain;
    case "namespaces":
      return Namespaces;
    case "tokens":
      return v.array(Token, "must be a list of tokens");
    case "token":
      return Token;
    case "origins":
      return v.array(Origin, "must be a list of origins");
    case "url":
      return Url;
    case "name":
      return Name;
    case "text":
      return v.pipe(v.string("must be a string"), v.minLength(1, "must not be empty"), v.maxLength(row.max ?? 8192, "is too long"));
    case "apiServer":
      return v.pipe(v.string(), v.url("must be a URL such as https://k8s.example.com:6443"), v.regex(/^https?:\/\//, "must be http:// or https://"));
    case "apiToken":
      return v.pipe(v.string(), v.trim(), v.nonEmpty("must not be empty when set"));
  }
}

/** The schema of a command's merged settings: strict, each setting validated, defaults filled in. */
export function settingsSchema(command: Command): v.GenericSchema<Record<string, unknown>, Record<string, unknown>> {
  const entries: Record<string, v.GenericSchema> = {};
  for (const row of rowsOf(command)) {
    if (row.into !== undefined) continue;
    const d = row.default;
    // Lists get a fresh copy: a caller may change its settings.
    entries[row.key] = d === undefined ? v.optional(valueSchema(row)) : v.optional(valueSchema(row), Array.isArray(d) ? () => [...d] : d);
  }
  return v.strictObject(entries) as v.GenericSchema<Record<string, unknown>, Record<string, unknown>>;
}
