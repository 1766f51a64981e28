/**
 * Standalone sandbox API server: `npx tsx src/sandbox/main.ts`, `deno run -A src/sandbox/main.ts`
 * or `bun src/sandbox/main.ts`. Seeds demo apps, keeps changing them, prints one JSON log line
 * with the URL and stops on SIGINT/SIGTERM.
 * @module
 */
import process from "node:process";
import { createLogger } from "../log.ts";
import { parseCliArgs, USAGE } from "./cli.ts";
import { seedDemo, startDemoActivity } from "./demo.ts";
import { startSandbox } from "./server.ts";

async function main(): Promise<number> {
  let opts;
  try {
    opts = parseCliArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  // Signals are taken from the start: a supervisor that stops us as soon as it reads the URL line
  // must not race the handler (Deno's default action then ended the task with 143, under load).
  const stopped = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  // The URL line goes to stdout so scripts can read it; the logger redacts the token.
  const log = createLogger({ sink: (line) => console.log(line) });
  const running = await startSandbox({ port: opts.port, hostname: opts.host, token: opts.token, logger: log });
  seedDemo(running.sandbox, { count: opts.seed });
  const stopActivity = new AbortController();
  if (opts.activityMs > 0) startDemoActivity(running.sandbox, { intervalMs: opts.activityMs, signal: stopActivity.signal });
  log.info("sandbox listening", {
    url: running.url,
    namespace: "flyte",
    seeded: opts.seed,
    activityMs: opts.activityMs,
    auth: opts.token ? "bearer" : "none",
  });
  await stopped;
  stopActivity.abort();
  await running.close();
  log.info("sandbox stopped");
  return 0;
}

process.exit(await main());
