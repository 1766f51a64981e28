/**
 * `appwatch watch` options: read through the settings table
 * (`src/service/settings.ts`: flags, `APPWATCH_URL` / `APPWATCH_TOKEN`) and
 * validated there. Errors name the flag (or variable).
 * @module
 */
import { ConfigError, loadCommand, optionsHelp } from "../service/config.ts";
import { DEFAULT_URL } from "../service/settings.ts";
import type { WatchClientOptions } from "./watch.ts";

export { DEFAULT_URL };

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

/** A usage mistake in `appwatch watch` arguments. */
export class WatchUsageError extends Error {
  override readonly name = "WatchUsageError";
}

/** Parses `appwatch watch` arguments (after `watch`). */
export function parseWatchArgs(
  argv: string[],
  env: Record<string, string | undefined>,
): { help: true } | { help: false; options: WatchClientOptions } {
  let loaded;
  try {
    loaded = loadCommand("watch", { argv, env });
  } catch (err) {
    if (err instanceof ConfigError) throw new WatchUsageError(err.problems.join("\n"));
    throw err;
  }
  if (loaded.help) return { help: true };
  const { idleTimeoutSeconds, ...rest } = loaded.settings;
  return { help: false, options: { ...rest, idleTimeoutMs: idleTimeoutSeconds * 1000 } };
}
