/**
 * Entry point of `npm start`, `deno task start` and `bun run start`:
 * runs the appwatch CLI until SIGINT/SIGTERM.
 * @module
 */
import process from "node:process";
import { runCli } from "./cli.ts";

const controller = new AbortController();
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (controller.signal.aborted) process.exit(130); // second Ctrl-C: leave now
    controller.abort();
  });
}
const code = await runCli(process.argv.slice(2), {
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
  signal: controller.signal,
});
process.exit(code);
