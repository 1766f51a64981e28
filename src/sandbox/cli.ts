/**
 * Argument parsing for the sandbox CLI (src/sandbox/main.ts), validated with valibot.
 * @module
 */
import * as v from "valibot";

/** Usage text of the CLI. */
export const USAGE = `Usage: sandbox [options]

A Kubernetes-compatible API server for Knative services and revisions (appwatch sandbox).

Options:
  --port N          port to listen on (default 8001; 0 = any free port)
  --host HOST       address to bind (default 127.0.0.1)
  --token TOKEN     require "Authorization: Bearer TOKEN" on every request
  --seed N          demo apps to create at start (default 5)
  --activity-ms N   change a demo app every N ms (default 2000; 0 = no activity)
  --help            show this help
`;

const Int = (min: number, max: number) =>
  v.pipe(v.string(), v.trim(), v.digits("must be a whole number"), v.toNumber(), v.integer(), v.minValue(min), v.maxValue(max));

const CliSchema = v.object({
  port: v.optional(Int(0, 65535), "8001"),
  host: v.optional(v.pipe(v.string(), v.trim(), v.nonEmpty("must not be empty")), "127.0.0.1"),
  token: v.optional(v.pipe(v.string(), v.nonEmpty("must not be empty"))),
  seed: v.optional(Int(0, 10_000), "5"),
  "activity-ms": v.optional(Int(0, 86_400_000), "2000"),
  help: v.optional(v.boolean(), false),
});

/** Parsed CLI options. */
export interface CliOptions {
  port: number;
  host: string;
  token: string | undefined;
  seed: number;
  activityMs: number;
  help: boolean;
}

const FLAGS = new Set(["help"]);
const VALUED = new Set(["port", "host", "token", "seed", "activity-ms"]);

/** Parses `--name value`, `--name=value` and `--help`; throws an Error with a readable message. */
export function parseCliArgs(argv: readonly string[]): CliOptions {
  const raw: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unexpected argument: ${arg}`);
    const name = m[1]!;
    if (FLAGS.has(name)) {
      if (m[2] !== undefined) throw new Error(`--${name} takes no value`);
      raw[name] = true;
    } else if (VALUED.has(name)) {
      const value = m[2] ?? argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
      raw[name] = value;
    } else throw new Error(`unknown option: --${name}`);
  }
  const r = v.safeParse(CliSchema, raw);
  if (!r.success) {
    const issue = r.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join(".") ?? "";
    throw new Error(`invalid --${path}: ${issue.message}`);
  }
  const o = r.output;
  return { port: o.port, host: o.host, token: o.token, seed: o.seed, activityMs: o["activity-ms"], help: o.help };
}
