/**
 * Entry point of `npm start` / `deno task start` / `bun run start` (the
 * service: `appwatch` is `appwatch serve`) and of `npm run watch` /
 * `deno task watch` / `bun run watch` (`appwatch watch`, the client). The
 * first SIGINT/SIGTERM aborts the command, which stops cleanly (exit 0); a
 * second one more than a second later exits at once. (Ctrl-C in a terminal
 * reaches every process of the group, and `npm start`'s launcher forwards it
 * too, so one keypress can arrive twice within milliseconds.)
 * @module
 */
import process from "node:process";
import { runCli } from "./cli.ts";

/** Aborted by the first SIGINT/SIGTERM; a second one more than a second later exits at once. */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  let firstSignalAt = 0;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (controller.signal.aborted) {
        if (Date.now() - firstSignalAt > 1000) process.exit(130); // a deliberate second Ctrl-C: leave now
        return;
      }
      firstSignalAt = Date.now();
      controller.abort();
    });
  }
  return controller.signal;
}

const code = await runCli(process.argv.slice(2), {
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
  signal: stopSignal(),
});
process.exit(code);
