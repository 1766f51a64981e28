#!/usr/bin/env node
// `npm start` and `bun run start` share one package.json script. This launcher
// runs the entry on the runtime that invoked the script: Bun when started by
// `bun run`, else Node (through tsx, since Node 20 cannot run TypeScript).
// (`deno task start` uses deno.json's own task and never gets here.)
import { spawn } from "node:child_process";
import { readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";

const [entry, ...args] = process.argv.slice(2);
// Bun runs scripts as a direct child; `npx bun run start` keeps npm's user agent, so on Linux
// the parent's executable is the reliable sign.
const parentIsBun = () => {
  try {
    return /^bun/.test(basename(readlinkSync(`/proc/${process.ppid}/exe`)));
  } catch {
    return false;
  }
};
const viaBun = (process.env.npm_config_user_agent ?? "").startsWith("bun/") || process.versions.bun !== undefined || parentIsBun();
const require = createRequire(import.meta.url);
const command = viaBun ? require.resolve("bun/bin/bun.exe") : process.execPath;
const argv = viaBun ? [entry, ...args] : ["--import", "tsx", entry, ...args];
const child = spawn(command, argv, { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
