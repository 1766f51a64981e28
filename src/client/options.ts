/**
 * `appwatch watch` options: read through the settings table
 * (`src/service/settings/`: flags, `APPWATCH_URL` / `APPWATCH_TOKEN`) and
 * validated there; its `--help` is there too. Errors name the flag (or variable).
 * @module
 */
import { ConfigError, DEFAULT_URL, loadCommand, WATCH_HELP } from "../service/settings/mod.ts";
import type { WatchClientOptions } from "./watch.ts";

export { DEFAULT_URL, WATCH_HELP };

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
