/**
 * `appwatch watch` options: flags, `APPWATCH_URL` / `APPWATCH_TOKEN`, and
 * their validation (valibot). Errors name the flag (or variable).
 * @module
 */
import { parseArgs } from "node:util";
import * as v from "valibot";
import { Name } from "../service/schemas.ts";
import type { WatchClientOptions } from "./watch.ts";

/** Default server URL. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

/** `appwatch watch --help`. */
export const WATCH_HELP = `appwatch watch — stream Flyte app changes from a running appwatch service

Usage: appwatch watch [options]

Prints one line per change; reconnects by itself with the last resume token
(0.5 s backoff doubling to 10 s) and says whether the stream resumed or
started over with a fresh snapshot. Stops on Ctrl-C.

Server:
  --url <url>             the appwatch service (default: ${DEFAULT_URL}; env APPWATCH_URL)
  --token <token>         bearer token (default: none; env APPWATCH_TOKEN, which keeps it
                          out of the process list). Sent as "Authorization: Bearer" where the
                          runtime's WebSocket can (Node), else as the access_token parameter

What to watch (default: every app the service sees):
  --org <org>             apps of one org
  --project <p> --domain <d>
                          apps of one project and domain
  --app <name>            one app (needs --project and --domain)
  --no-snapshot           start with live changes only (no createEvent per existing app)
  --resume <token>        start after this resume token (from an earlier stream)

Output:
  -o, --output <format>   human (default) | json (each frame's JSON verbatim, one per line;
                          connection notes go to stderr as JSON log lines)
  -v, --verbose           human output: also show heartbeats and other control frames
  --idle-timeout <sec>    reconnect when nothing arrives for this long (default: 60;
                          keep it above the service's --heartbeat-seconds)
  -h, --help              show this help

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

const Url = v.pipe(
  v.string(),
  v.check((s) => {
    try {
      return ["http:", "https:", "ws:", "wss:"].includes(new URL(s).protocol);
    } catch {
      return false;
    }
  }, "must be an http(s):// or ws(s):// URL, e.g. http://127.0.0.1:8080"),
);

const WatchArgsSchema = v.pipe(
  v.strictObject({
    url: Url,
    org: v.optional(Name),
    project: v.optional(Name),
    domain: v.optional(Name),
    app: v.optional(Name),
    snapshot: v.boolean(),
    resume: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"), v.maxLength(8192, "is too long"))),
    token: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"), v.regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces"))),
    output: v.picklist(["human", "json"], "must be human or json"),
    verbose: v.boolean(),
    idleTimeoutMs: v.pipe(
      v.string(),
      v.regex(/^\d+(\.\d+)?$/, "must be a number of seconds"),
      v.transform((s) => Number(s) * 1000),
      v.minValue(1000, "must be at least 1 second"),
    ),
  }),
  v.forward(v.check((o) => o.app === undefined || (o.project !== undefined && o.domain !== undefined), "needs --project and --domain"), ["app"]),
  v.forward(v.check((o) => (o.project === undefined) === (o.domain === undefined), "--project and --domain go together"), ["project"]),
);

const FLAG_OF: Record<string, string> = { idleTimeoutMs: "--idle-timeout", snapshot: "--no-snapshot" };

/** A usage mistake in `appwatch watch` arguments. */
export class WatchUsageError extends Error {
  override readonly name = "WatchUsageError";
}

/** Parses `appwatch watch` arguments (after `watch`). */
export function parseWatchArgs(
  argv: string[],
  env: Record<string, string | undefined>,
): { help: true } | { help: false; options: WatchClientOptions } {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: "boolean", short: "h" },
        url: { type: "string" },
        token: { type: "string" },
        org: { type: "string" },
        project: { type: "string" },
        domain: { type: "string" },
        app: { type: "string" },
        "no-snapshot": { type: "boolean" },
        resume: { type: "string" },
        output: { type: "string", short: "o" },
        verbose: { type: "boolean", short: "v" },
        "idle-timeout": { type: "string" },
      },
    }));
  } catch (err) {
    throw new WatchUsageError((err as Error).message);
  }
  if (values.help) return { help: true };
  const envUrl = env.APPWATCH_URL?.trim() || undefined;
  const envToken = env.APPWATCH_TOKEN?.trim() || undefined;
  const r = v.safeParse(WatchArgsSchema, {
    url: values.url ?? envUrl ?? DEFAULT_URL,
    org: values.org,
    project: values.project,
    domain: values.domain,
    app: values.app,
    snapshot: !values["no-snapshot"],
    resume: values.resume,
    token: values.token ?? envToken,
    output: values.output ?? "human",
    verbose: values.verbose ?? false,
    idleTimeoutMs: values["idle-timeout"] ?? "60",
  });
  if (!r.success) {
    const lines = r.issues.map((i) => {
      const key = String(i.path?.[0]?.key ?? "");
      const source = key === "url" && values.url === undefined && envUrl !== undefined ? "APPWATCH_URL"
        : key === "token" && values.token === undefined ? "APPWATCH_TOKEN"
        : FLAG_OF[key] ?? `--${key}`;
      return `${source}: ${i.message}`;
    });
    throw new WatchUsageError([...new Set(lines)].join("\n"));
  }
  const o = r.output;
  return {
    help: false,
    options: {
      url: o.url,
      snapshot: o.snapshot,
      output: o.output,
      verbose: o.verbose,
      idleTimeoutMs: o.idleTimeoutMs,
      ...(o.org !== undefined ? { org: o.org } : {}),
      ...(o.project !== undefined ? { project: o.project } : {}),
      ...(o.domain !== undefined ? { domain: o.domain } : {}),
      ...(o.app !== undefined ? { app: o.app } : {}),
      ...(o.resume !== undefined ? { resume: o.resume } : {}),
      ...(o.token !== undefined ? { token: o.token } : {}),
    },
  };
}
