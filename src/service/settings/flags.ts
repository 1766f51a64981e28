/**
 * The flag layer: each setting's `--flag` (and short form), parsed with `node:util`'s
 * `parseArgs` (strict: an unknown option is an error), plus the two-way booleans parseArgs does
 * not know (`--x=<bool>`, `--no-x`). Every value is checked like the other layers' and errors
 * are labelled with the flag: `--port: …`.
 * @module
 */
import { parseArgs } from "node:util";
import { fromString, splitList } from "./env.ts";
import { check, type Layer, type Problems, stringKind } from "./schemas.ts";
import { type Command, isTwoWayBool, readsFile, type SettingDef } from "./table.ts";

/** What the flags said. */
export interface FlagResult {
  layer: Layer;
  help: boolean;
  config: string | undefined;
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

/** The flag layer of `command` (its `rows`): the values given, `--help`, and `--config`. */
export function readFlagLayer(command: Command, rows: readonly SettingDef[], argv: string[], problems: Problems): FlagResult {
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
